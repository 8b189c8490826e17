//! `kraft-replication-floor`: the least a commit of three replicas costs on
//! this machine, for `make bench` (issue 23, `bench/bench.py`).
//!
//! Three processes, as a quorum of three: this one (the leader) and two it
//! starts (the followers). The leader paces records exactly as the
//! controller's benchmark workload does (whole milliseconds,
//! [`records_due_by_ms`]); the records of one millisecond are one batch,
//! which it appends to its own file and sends to both followers over
//! loopback TCP; after `--leader-fsync-linger-ms` (the controller's append
//! linger: 0 or Kafka's default 25) a thread fsyncs what the leader
//! appended. A follower appends what it reads, fsyncs (`fdatasync`) and
//! answers with the batch's number. A batch commits once two of the three
//! have it durably (the leader's fsync counts as one), as the high watermark
//! of a quorum of three, each side as early as it can be.
//!
//! There is no Raft, no Kafka protocol, no event loop and no request
//! parsing: what is left is one fsync on the leader in parallel with one
//! follower's receive, append, fsync and answer, on the same disk, cores and
//! loopback as the benchmark's quorums. A commit latency under this floor's
//! is not something a controller can reach here, so the benchmark reports
//! ours against it beside the disk's bare fsync.
//!
//! Output: one JSON line on stdout with the commit latency of every record
//! after the warm-up (p50/p75/p99/p99.9/max in ms, nearest rank, as
//! `GET /workload`), the batches, and the leader's CPU (s, utime + stime).
//! Errors (a follower that cannot start, a write that fails) end the run
//! with a one-line message and exit code 1.

use std::{
    collections::VecDeque,
    fs::{File, OpenOptions},
    io::{BufReader, Read, Write},
    net::{TcpListener, TcpStream},
    os::fd::OwnedFd,
    path::{Path, PathBuf},
    process::{Child, Command, ExitCode, Stdio},
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
        mpsc,
    },
    thread,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use clap::Parser;
use kraft_controller::workload::{percentile_ms, records_due_by_ms};
use rustix::event::{EventfdFlags, PollFd, PollFlags, Timespec, eventfd};

/// Command line of `kraft-replication-floor`.
#[derive(Debug, Parser)]
#[command(name = "kraft-replication-floor", about)]
struct Args {
    /// Directory for the three files (one per replica); made if missing.
    #[arg(long)]
    dir: PathBuf,
    /// Records per second (at least 1).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    rate: u32,
    /// Bytes per record (at least 1).
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..))]
    record_size: u32,
    /// Seconds of measured load, after the warm-up.
    #[arg(long, default_value_t = 20.0)]
    duration_s: f64,
    /// Seconds of load first whose commits are not counted.
    #[arg(long, default_value_t = 2.0)]
    warmup_s: f64,
    /// Milliseconds the leader waits after an append before its fsync, as
    /// the controller's `controller.quorum.append.linger.ms` (0: at once).
    #[arg(long, default_value_t = 0)]
    leader_fsync_linger_ms: u64,
    /// Internal: run as a follower answering the leader at this address.
    #[arg(long, hide = true)]
    follow: Option<String>,
}

/// Bytes before each batch on the wire: its length (u32) and number (u64).
const FRAME_HEADER: usize = 12;

fn main() -> ExitCode {
    let args = Args::parse();
    let result = match &args.follow {
        Some(leader) => follow(leader, &args.dir),
        None => lead(&args).map(|report| println!("{report}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kraft-replication-floor: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Opens `dir/name` for appending, making `dir` first.
fn append_file(dir: &Path, name: &str) -> Result<File> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(name);
    OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))
}

/// A follower: append each batch read, fsync, answer its number; the
/// batches already read when one arrives share one fsync and one answer.
/// Ends when the leader closes the connection.
fn follow(leader: &str, dir: &Path) -> Result<()> {
    let mut file = append_file(dir, "follower.log")?;
    let stream = TcpStream::connect(leader).with_context(|| format!("connecting to {leader}"))?;
    stream.set_nodelay(true)?;
    let mut answers = stream.try_clone()?;
    let mut reader = BufReader::with_capacity(1 << 20, stream);
    let mut body = Vec::new();
    loop {
        let mut last = None;
        loop {
            let mut header = [0u8; FRAME_HEADER];
            match reader.read_exact(&mut header) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && last.is_none() => {
                    return Ok(());
                }
                Err(e) => return Err(e).context("reading a batch"),
            }
            let len = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
            let mut number = [0u8; 8];
            number.copy_from_slice(&header[4..]);
            body.resize(len, 0);
            reader.read_exact(&mut body).context("reading a batch")?;
            file.write_all(&body).context("appending")?;
            last = Some(number);
            if reader.buffer().len() < FRAME_HEADER {
                break;
            }
        }
        file.sync_data().context("fsync")?;
        if let Some(number) = last {
            answers.write_all(&number).context("answering")?;
        }
    }
}

/// The batches appended and not yet committed, and the latencies of those
/// that were.
#[derive(Default)]
struct Commits {
    /// Batches appended and not committed: (number, records, append time).
    pending: VecDeque<(u64, u64, Instant)>,
    /// The highest batch number the leader's fsync covers.
    flushed: u64,
    /// The highest batch number each follower answered for.
    answered: [u64; 2],
    /// Commit latency (µs) of every record counted.
    latencies_us: Vec<u64>,
    /// Records appended at or after this instant are counted.
    count_from: Option<Instant>,
}

impl Commits {
    /// Commits every pending batch that two of the three replicas (the
    /// leader's fsync counts as one) now cover, at `now`.
    fn advance(&mut self, now: Instant) {
        let mut covered = [self.flushed, self.answered[0], self.answered[1]];
        covered.sort_unstable();
        let committed = covered[1];
        while let Some(&(number, records, appended)) = self.pending.front() {
            if number > committed {
                break;
            }
            self.pending.pop_front();
            if self.count_from.is_some_and(|from| appended >= from) {
                let us =
                    u64::try_from(now.duration_since(appended).as_micros()).unwrap_or(u64::MAX);
                self.latencies_us
                    .extend(std::iter::repeat_n(us, records as usize));
            }
        }
    }
}

/// Kills and reaps the followers however the run ends.
struct Followers(Vec<Child>);

impl Drop for Followers {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The leader's fsync thread, as the controller's (a blocking thread that
/// is told the batch to cover and answers through an eventfd the leader's
/// loop polls).
struct Flusher {
    requests: mpsc::Sender<u64>,
    /// The highest batch number the last finished fsync covers.
    flushed: Arc<AtomicU64>,
    /// Made readable by each finished fsync.
    done: Arc<OwnedFd>,
    thread: thread::JoinHandle<Result<()>>,
}

impl Flusher {
    fn start(file: File) -> Result<Self> {
        let (requests, incoming) = mpsc::channel::<u64>();
        let flushed = Arc::new(AtomicU64::new(0));
        let done = Arc::new(eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)?);
        let thread = {
            let (flushed, done) = (Arc::clone(&flushed), Arc::clone(&done));
            thread::spawn(move || -> Result<()> {
                while let Ok(mut number) = incoming.recv() {
                    while let Ok(later) = incoming.try_recv() {
                        number = later;
                    }
                    file.sync_data().context("fsync")?;
                    flushed.store(number, Ordering::Release);
                    rustix::io::write(&*done, &1u64.to_ne_bytes())?;
                }
                Ok(())
            })
        };
        Ok(Self {
            requests,
            flushed,
            done,
            thread,
        })
    }
}

/// The leader: starts two followers, paces batches for the warm-up and the
/// duration on one thread polling the followers' answers and its fsync
/// thread (the controller's shape: an event loop and a blocking thread for
/// fsyncs), and reports the commit latencies as one JSON object.
fn lead(args: &Args) -> Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0").context("binding a loopback port")?;
    let address = listener.local_addr()?.to_string();
    let exe = std::env::current_exe().context("finding this program")?;
    let mut followers = Followers(Vec::new());
    for i in 1..=2 {
        let child = Command::new(&exe)
            .arg("--follow")
            .arg(&address)
            .arg("--dir")
            .arg(args.dir.join(format!("follower-{i}")))
            .args(["--rate", "1"])
            .stdin(Stdio::null())
            .spawn()
            .context("starting a follower")?;
        followers.0.push(child);
    }
    let mut streams = Vec::new();
    for _ in 0..2 {
        let (stream, _) = listener.accept().context("accepting a follower")?;
        stream.set_nodelay(true)?;
        streams.push(stream);
    }
    let mut file = append_file(&args.dir, "leader.log")?;
    let flusher = Flusher::start(file.try_clone()?)?;
    let linger = Duration::from_millis(args.leader_fsync_linger_ms);

    let mut commits = Commits::default();
    let cpu_before = cpu_seconds()?;
    let start = Instant::now();
    let count_from = start + Duration::from_secs_f64(args.warmup_s);
    let end = count_from + Duration::from_secs_f64(args.duration_s);
    commits.count_from = Some(count_from);
    let record = vec![0x5a_u8; args.record_size as usize];
    let mut frame = Vec::new();
    let mut answers: [Vec<u8>; 2] = [Vec::new(), Vec::new()];
    let mut buf = [0u8; 4096];
    let (mut appended, mut batches, mut ms) = (0u64, 0u64, 0u128);
    let mut next_due = None;
    let mut flush_at: Option<Instant> = None;
    let mut stop_at: Option<Instant> = None;
    loop {
        // The next batch: the first whole millisecond with a record due.
        if next_due.is_none() && stop_at.is_none() {
            loop {
                ms += 1;
                let at = start + Duration::from_millis(u64::try_from(ms).unwrap_or(u64::MAX));
                if at >= end {
                    // Give the last batches at most 5 s to commit.
                    stop_at = Some(Instant::now().max(end) + Duration::from_secs(5));
                    break;
                }
                if records_due_by_ms(ms, args.rate) > appended {
                    next_due = Some(at);
                    break;
                }
            }
        }
        let now = Instant::now();
        if flush_at.is_some_and(|at| at <= now) {
            flush_at = None;
            if flusher.requests.send(batches).is_err() {
                break;
            }
        }
        if next_due.is_some_and(|at| at <= now) {
            next_due = None;
            let due = records_due_by_ms(ms, args.rate) - appended;
            batches += 1;
            frame.clear();
            frame.extend_from_slice(&u32::try_from(record.len() * due as usize)?.to_be_bytes());
            frame.extend_from_slice(&batches.to_be_bytes());
            for _ in 0..due {
                frame.extend_from_slice(&record);
            }
            file.write_all(&frame[FRAME_HEADER..])
                .context("appending")?;
            commits.pending.push_back((batches, due, Instant::now()));
            appended += due;
            for mut stream in &streams {
                stream.write_all(&frame).context("sending a batch")?;
            }
            flush_at.get_or_insert(Instant::now() + linger);
            continue;
        }
        if stop_at.is_some_and(|at| at <= now || commits.pending.is_empty()) {
            break;
        }
        let wake = [next_due, flush_at, stop_at].into_iter().flatten().min();
        let timeout = wake.map(|at| {
            let d = at.saturating_duration_since(now);
            Timespec {
                tv_sec: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
                tv_nsec: i64::from(d.subsec_nanos()),
            }
        });
        let mut fds = [
            PollFd::new(&streams[0], PollFlags::IN),
            PollFd::new(&streams[1], PollFlags::IN),
            PollFd::new(&*flusher.done, PollFlags::IN),
        ];
        rustix::event::poll(&mut fds, timeout.as_ref())?;
        let ready: Vec<bool> = fds.iter().map(|fd| !fd.revents().is_empty()).collect();
        let now = Instant::now();
        for (i, mut stream) in streams.iter().enumerate() {
            if !ready[i] {
                continue;
            }
            let n = stream.read(&mut buf).context("reading an answer")?;
            if n == 0 {
                bail!("follower {} closed its connection", i + 1);
            }
            answers[i].extend_from_slice(&buf[..n]);
            let whole = answers[i].len() / 8 * 8;
            if let Some(last) = answers[i][..whole].rchunks_exact(8).next() {
                let mut number = [0u8; 8];
                number.copy_from_slice(last);
                commits.answered[i] = u64::from_be_bytes(number);
            }
            answers[i].drain(..whole);
        }
        if ready[2] {
            let mut count = [0u8; 8];
            let _ = rustix::io::read(&*flusher.done, &mut count);
            commits.flushed = flusher.flushed.load(Ordering::Acquire);
        }
        commits.advance(now);
    }
    let cpu = cpu_seconds()? - cpu_before;
    drop(flusher.requests);
    flusher
        .thread
        .join()
        .map_err(|_| anyhow::anyhow!("the fsync thread panicked"))??;
    for stream in &streams {
        let _ = stream.shutdown(std::net::Shutdown::Both);
    }
    drop(followers);
    if !commits.pending.is_empty() {
        bail!(
            "{} batches did not commit within 5 s of the end",
            commits.pending.len()
        );
    }
    let mut sorted = commits.latencies_us;
    sorted.sort_unstable();
    Ok(serde_json::json!({
        "rate": args.rate,
        "record_size": args.record_size,
        "leader_fsync_linger_ms": args.leader_fsync_linger_ms,
        "duration_s": args.duration_s,
        "records": sorted.len(),
        "batches": batches,
        "p50_ms": percentile_ms(&sorted, 50.0),
        "p75_ms": percentile_ms(&sorted, 75.0),
        "p99_ms": percentile_ms(&sorted, 99.0),
        "p999_ms": percentile_ms(&sorted, 99.9),
        "max_ms": sorted.last().map_or(0.0, |&us| us as f64 / 1000.0),
        "cpu_leader_s": cpu,
        "cpu_us_per_record": if appended > 0 { cpu * 1e6 / appended as f64 } else { 0.0 },
    })
    .to_string())
}

/// This process's CPU time so far (user + system, s), from `/proc/self/stat`
/// (fields 14 and 15, in clock ticks).
fn cpu_seconds() -> Result<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").context("reading /proc/self/stat")?;
    // The command name (field 2) may hold spaces; the fields after it follow
    // its closing parenthesis.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .context("no ')' in /proc/self/stat")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| -> Result<f64> {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .with_context(|| format!("field {} of /proc/self/stat", i + 3))
    };
    // After ')': field 3 is at index 0, so utime (14) at 11 and stime (15) at 12.
    let ticks_per_s = rustix::param::clock_ticks_per_second() as f64;
    Ok((tick(11)? + tick(12)?) / ticks_per_s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_commits_when_two_of_the_three_replicas_have_it() {
        let t0 = Instant::now();
        let mut c = Commits {
            count_from: Some(t0),
            ..Commits::default()
        };
        c.pending.push_back((1, 3, t0));
        c.pending.push_back((2, 1, t0));
        c.answered = [2, 0];
        c.advance(t0 + Duration::from_millis(1));
        assert_eq!(c.pending.len(), 2, "one follower alone is not a majority");
        c.flushed = 1;
        c.advance(t0 + Duration::from_millis(2));
        assert_eq!(c.pending.len(), 1, "leader and a follower have batch 1");
        assert_eq!(c.latencies_us, vec![2_000; 3], "one latency per record");
        c.answered = [2, 2];
        c.advance(t0 + Duration::from_millis(3));
        assert!(c.pending.is_empty(), "both followers have batch 2");
        assert_eq!(c.latencies_us.len(), 4);
    }

    #[test]
    fn records_appended_before_the_warm_up_ends_are_not_counted() {
        let t0 = Instant::now();
        let mut c = Commits {
            count_from: Some(t0 + Duration::from_millis(10)),
            flushed: 2,
            answered: [2, 2],
            ..Commits::default()
        };
        c.pending.push_back((1, 5, t0));
        c.pending.push_back((2, 1, t0 + Duration::from_millis(10)));
        c.advance(t0 + Duration::from_millis(11));
        assert!(c.pending.is_empty());
        assert_eq!(c.latencies_us, vec![1_000]);
    }
}
