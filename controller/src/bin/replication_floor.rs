//! `kraft-replication-floor`: what replicating a benchmark row's batches to a
//! quorum of three costs on this machine with nothing else, for `make bench`
//! (issue 23, `bench/bench.py`).
//!
//! Three processes, as a quorum of three: this one (the leader) and two it
//! starts (the followers). The leader paces records exactly as the
//! controller's benchmark workload does (whole milliseconds: at each turn it
//! appends, as one batch, every record [`records_due_by_ms`] says is due);
//! it appends the batch to its own file and sends it to both followers over
//! loopback TCP; `--leader-fsync-linger-ms` after the first batch it has not
//! fsynced (the controller's append linger: 0, or Kafka's default 25) a
//! thread fsyncs what the leader appended. A follower appends what it
//! reads, fsyncs (`fdatasync`) and answers with the batch's number. A batch
//! commits once two of the three have it durably (the leader's fsync counts
//! as one), as the high watermark of a quorum of three.
//!
//! The leader has the controller's shape (one thread polling its sockets and
//! a blocking thread for its fsyncs, answering through an eventfd) and does
//! what the controller's leader must (append before it serves a batch); what
//! it leaves out is Raft's state, the Kafka protocol, request parsing and an
//! async runtime. So the distance from a controller's figures to these is
//! what that controller adds to the bare replication on the same disk,
//! cores and loopback; the benchmark reports it beside the disk's own fsync.
//!
//! Output: one JSON line on stdout with the commit latency of every record
//! due in the measured window (after `--warmup-s`, for `--duration-s`):
//! p50/p75/p99/p99.9/max in ms, nearest rank, as `GET /workload`; the
//! records and batches; and the leader's CPU over the window (s, the
//! process's CPU clock, its threads included) and per record. Errors (a bad
//! argument, a follower that cannot start, a failed write or fsync) end the
//! run with a one-line message and exit code 1.

use std::{
    collections::VecDeque,
    fs::{File, OpenOptions},
    io::{BufRead, BufReader, Read, Write},
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
use kraft_controller::workload::{due_at, percentile_ms, records_due_by_ms};
use rustix::{
    event::{EventfdFlags, PollFd, PollFlags, Timespec, eventfd},
    time::{ClockId, clock_gettime},
};

/// Command line of `kraft-replication-floor`.
#[derive(Debug, Parser)]
#[command(name = "kraft-replication-floor", about)]
struct Args {
    /// Directory for the three files (one per replica); made if missing.
    #[arg(long)]
    dir: PathBuf,
    /// Records per second (1 to 10 000 000).
    #[arg(long, required_unless_present = "follow",
          value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
    rate: Option<u32>,
    /// Bytes per record (1 to 1 048 576).
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=1_048_576))]
    record_size: u32,
    /// Seconds of measured load, after the warm-up (more than 0, at most a
    /// day).
    #[arg(long, default_value_t = 20.0, value_parser = seconds)]
    duration_s: f64,
    /// Seconds of load first whose records are not counted (0 to a day).
    #[arg(long, default_value_t = 2.0, value_parser = seconds)]
    warmup_s: f64,
    /// Milliseconds the leader waits after an append it has not fsynced
    /// before its fsync, as the controller's
    /// `controller.quorum.append.linger.ms` (0: at once).
    #[arg(long, default_value_t = 0)]
    leader_fsync_linger_ms: u64,
    /// Internal: run as a follower answering the leader at this address.
    #[arg(long, hide = true)]
    follow: Option<String>,
}

/// A number of seconds from 0 to a day (86 400), as clap's parser of the
/// `--*-s` flags.
fn seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if (0.0..=86_400.0).contains(&s) => Ok(s),
        _ => Err(format!("expected seconds from 0 to 86400, got {text:?}")),
    }
}

/// Most bytes a second of records may take (`--rate` × `--record-size`):
/// each batch is built in memory and sent whole.
const MAX_BYTES_PER_SEC: u64 = 1 << 30;

/// Bytes before each batch on the wire: its length (u32) and number (u64).
const FRAME_HEADER: usize = 12;

/// How long the leader waits for its followers to connect.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the leader waits, after the window, for its last batches to
/// commit.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

fn main() -> ExitCode {
    let args = Args::parse();
    let result = match (&args.follow, args.rate) {
        (Some(leader), _) => follow(leader, &args.dir),
        (None, Some(rate)) => lead(&args, rate).map(|report| println!("{report}")),
        (None, None) => Err(anyhow::anyhow!("--rate is required")),
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

/// The length of the frame at the start of `buffered`, if its header is
/// there.
fn frame_len(buffered: &[u8]) -> Option<usize> {
    let header = buffered.get(..4)?;
    Some(u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize)
}

/// A follower: append each batch read, fsync, answer its number; the
/// batches already read whole when one arrives share one fsync and one
/// answer. Ends when the leader closes the connection between batches.
fn follow(leader: &str, dir: &Path) -> Result<()> {
    let mut file = append_file(dir, "follower.log")?;
    let stream = TcpStream::connect(leader).with_context(|| format!("connecting to {leader}"))?;
    stream.set_nodelay(true)?;
    let mut answers = stream.try_clone()?;
    let mut reader = BufReader::with_capacity(1 << 20, stream);
    let mut body = Vec::new();
    loop {
        if reader.fill_buf().context("reading a batch")?.is_empty() {
            return Ok(());
        }
        let mut last = [0u8; 8];
        loop {
            let mut header = [0u8; FRAME_HEADER];
            reader
                .read_exact(&mut header)
                .context("reading a batch's header")?;
            let len = frame_len(&header).unwrap_or(0);
            if len as u64 > MAX_BYTES_PER_SEC {
                bail!("a batch of {len} bytes, more than {MAX_BYTES_PER_SEC}");
            }
            last.copy_from_slice(&header[4..]);
            body.resize(len, 0);
            reader.read_exact(&mut body).context("reading a batch")?;
            file.write_all(&body).context("appending")?;
            // Go on only with a batch already here whole: one still
            // arriving must not hold back the fsync of those appended.
            let buffered = reader.buffer();
            match frame_len(buffered) {
                Some(next) if buffered.len() >= FRAME_HEADER + next => {}
                _ => break,
            }
        }
        file.sync_data().context("fsync")?;
        answers.write_all(&last).context("answering")?;
    }
}

/// The batches appended and not yet committed, and the latencies of the
/// records committed.
#[derive(Default)]
struct Commits {
    /// Batches appended and not committed: (number, records counted in
    /// it, append time).
    pending: VecDeque<(u64, u64, Instant)>,
    /// The highest batch number the leader's fsync covers.
    flushed: u64,
    /// The highest batch number each follower answered for.
    answered: [u64; 2],
    /// Commit latency (µs) of every record counted.
    latencies_us: Vec<u64>,
}

impl Commits {
    /// Commits every pending batch that two of the three replicas (the
    /// leader's fsync counts as one) now cover, at `now`.
    fn advance(&mut self, now: Instant) {
        let mut covered = [self.flushed, self.answered[0], self.answered[1]];
        covered.sort_unstable();
        let committed = covered[1];
        while let Some(&(number, counted, appended)) = self.pending.front() {
            if number > committed {
                break;
            }
            self.pending.pop_front();
            let us = u64::try_from(now.duration_since(appended).as_micros()).unwrap_or(u64::MAX);
            self.latencies_us
                .extend(std::iter::repeat_n(us, counted as usize));
        }
    }
}

/// Kills and reaps the followers however the run ends.
struct Followers(Vec<Child>);

impl Followers {
    /// Fails when a follower has exited (it could not start).
    fn check(&mut self) -> Result<()> {
        for (i, child) in self.0.iter_mut().enumerate() {
            if let Some(status) = child.try_wait()? {
                bail!("follower {} exited ({status}) before it connected", i + 1);
            }
        }
        Ok(())
    }
}

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

/// Starts the two followers and accepts their connections, failing when
/// one exits first or neither comes within [`CONNECT_TIMEOUT`].
fn start_followers(dir: &Path) -> Result<(Followers, Vec<TcpStream>)> {
    let listener = TcpListener::bind("127.0.0.1:0").context("binding a loopback port")?;
    let address = listener.local_addr()?.to_string();
    let exe = std::env::current_exe().context("finding this program")?;
    let mut followers = Followers(Vec::new());
    for i in 1..=2 {
        let child = Command::new(&exe)
            .arg("--follow")
            .arg(&address)
            .arg("--dir")
            .arg(dir.join(format!("follower-{i}")))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .context("starting a follower")?;
        followers.0.push(child);
    }
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    let mut streams = Vec::new();
    while streams.len() < 2 {
        followers.check()?;
        if Instant::now() >= deadline {
            bail!("the followers did not connect within {CONNECT_TIMEOUT:?}");
        }
        let mut fds = [PollFd::new(&listener, PollFlags::IN)];
        let slice = Timespec {
            tv_sec: 0,
            tv_nsec: 100_000_000,
        };
        if rustix::event::poll(&mut fds, Some(&slice))? > 0 {
            let (stream, _) = listener.accept().context("accepting a follower")?;
            stream.set_nodelay(true)?;
            streams.push(stream);
        }
    }
    Ok((followers, streams))
}

/// This process's CPU time so far (all its threads), from its CPU clock.
fn cpu_now() -> Duration {
    let t = clock_gettime(ClockId::ProcessCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

/// The leader: starts two followers, paces batches for the warm-up and the
/// duration on one thread polling the followers' answers and its fsync
/// thread, and reports the commit latencies as one JSON object.
fn lead(args: &Args, rate: u32) -> Result<String> {
    let bytes_per_sec = u64::from(rate) * u64::from(args.record_size);
    if bytes_per_sec > MAX_BYTES_PER_SEC {
        bail!(
            "--rate {rate} × --record-size {} is {bytes_per_sec} bytes/s, more than {MAX_BYTES_PER_SEC}",
            args.record_size
        );
    }
    if args.duration_s <= 0.0 {
        bail!("--duration-s must be more than 0, got {}", args.duration_s);
    }
    let mut file = append_file(&args.dir, "leader.log")?;
    let (followers, streams) = start_followers(&args.dir)?;
    let flusher = Flusher::start(file.try_clone()?)?;
    let linger = Duration::from_millis(args.leader_fsync_linger_ms);

    // The window in whole milliseconds after the start: records due at
    // `warm_ms` or later and before `end_ms` are appended and counted; the
    // leader's CPU is read at its two ends.
    let warm_ms = (args.warmup_s * 1000.0).round() as u128;
    let end_ms = warm_ms + ((args.duration_s * 1000.0).round() as u128).max(1);
    let counted_from = if warm_ms == 0 {
        1
    } else {
        records_due_by_ms(warm_ms - 1, rate) + 1
    };
    let last_record = records_due_by_ms(end_ms - 1, rate);
    let start = Instant::now();
    let mut commits = Commits::default();
    let record = vec![0x5a_u8; args.record_size as usize];
    let mut frame = Vec::new();
    let mut answers: [Vec<u8>; 2] = [Vec::new(), Vec::new()];
    let mut buf = [0u8; 4096];
    let (mut appended, mut batches) = (0u64, 0u64);
    let mut flush_at: Option<Instant> = None;
    let (mut cpu_from, mut cpu_to) = (None, None);
    let mut drain_until: Option<Instant> = None;
    loop {
        let now = Instant::now();
        let elapsed_ms = now.saturating_duration_since(start).as_millis();
        if cpu_from.is_none() && elapsed_ms >= warm_ms {
            cpu_from = Some(cpu_now());
        }
        // Every record due by now (within the window) as one batch.
        let due = records_due_by_ms(elapsed_ms.min(end_ms - 1), rate);
        if due > appended {
            let first = appended + 1;
            let records = due - appended;
            batches += 1;
            frame.clear();
            frame.extend_from_slice(
                &u32::try_from(record.len() as u64 * records)
                    .context("a batch over 4 GiB")?
                    .to_be_bytes(),
            );
            frame.extend_from_slice(&batches.to_be_bytes());
            for _ in 0..records {
                frame.extend_from_slice(&record);
            }
            file.write_all(&frame[FRAME_HEADER..])
                .context("appending")?;
            // The batch's records due in the window (from `counted_from`).
            let counted = due.saturating_sub(first.max(counted_from) - 1);
            commits
                .pending
                .push_back((batches, counted, Instant::now()));
            appended = due;
            for mut stream in &streams {
                stream.write_all(&frame).context("sending a batch")?;
            }
            flush_at.get_or_insert(Instant::now() + linger);
        }
        if appended >= last_record && drain_until.is_none() {
            cpu_to = Some(cpu_now());
            drain_until = Some(Instant::now() + DRAIN_TIMEOUT);
        }
        if flush_at.is_some_and(|at| at <= Instant::now()) {
            flush_at = None;
            if flusher.requests.send(batches).is_err() {
                break;
            }
        }
        if let Some(until) = drain_until
            && (commits.pending.is_empty() || Instant::now() >= until)
        {
            break;
        }
        let next_due = (appended < last_record)
            .then(|| due_at(start, appended + 1, rate))
            .filter(|_| drain_until.is_none());
        let wake = [next_due, flush_at, drain_until]
            .into_iter()
            .flatten()
            .min();
        let timeout = wake.map(|at| {
            let d = at.saturating_duration_since(Instant::now());
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
            "{} batches did not commit within {DRAIN_TIMEOUT:?} of the end",
            commits.pending.len()
        );
    }
    let cpu = match (cpu_from, cpu_to) {
        (Some(from), Some(to)) => to.saturating_sub(from).as_secs_f64(),
        _ => 0.0,
    };
    let mut sorted = commits.latencies_us;
    sorted.sort_unstable();
    let records = sorted.len();
    Ok(serde_json::json!({
        "rate": rate,
        "record_size": args.record_size,
        "leader_fsync_linger_ms": args.leader_fsync_linger_ms,
        "warmup_s": args.warmup_s,
        "duration_s": args.duration_s,
        "records": records,
        "batches": batches,
        "p50_ms": percentile_ms(&sorted, 50.0),
        "p75_ms": percentile_ms(&sorted, 75.0),
        "p99_ms": percentile_ms(&sorted, 99.0),
        "p999_ms": percentile_ms(&sorted, 99.9),
        "max_ms": sorted.last().map_or(0.0, |&us| us as f64 / 1000.0),
        "cpu_leader_s": cpu,
        "cpu_us_per_record": if records > 0 { cpu * 1e6 / records as f64 } else { 0.0 },
    })
    .to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_commits_when_two_of_the_three_replicas_have_it() {
        let t0 = Instant::now();
        let mut c = Commits::default();
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
    fn a_frame_is_read_on_only_once_its_header_is_whole() {
        assert_eq!(frame_len(&[0, 0, 1]), None);
        assert_eq!(frame_len(&[0, 0, 1, 2, 9]), Some(258));
    }

    #[test]
    fn seconds_outside_zero_to_a_day_are_refused_with_the_value() {
        assert_eq!(seconds("2.5"), Ok(2.5));
        for bad in ["-1", "nan", "inf", "86401", "x"] {
            let err = seconds(bad).expect_err(bad);
            assert!(err.contains(bad), "{err}");
        }
    }
}
