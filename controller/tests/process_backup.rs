//! Process test of the backup loop (issue 26, decision D17): `snapshot
//! export --output-dir --every-seconds --keep` beside a running controller
//! copies its snapshots as they come, keeps only the newest `keep`, every
//! copy is a whole snapshot, and SIGTERM ends it with exit code 0 (it runs
//! as a container's PID 1, which ignores a signal it has no handler for).

mod support;

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::Duration,
};

use support::{BIN, QuorumBuilder, cli, wait_for};

/// Long enough for an election and a few snapshots on a loaded machine.
const TIMEOUT: Duration = Duration::from_secs(40);

fn copies(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("list the backups")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "checkpoint"))
        .collect();
    files.sort();
    files
}

/// Kills the loop if the test fails before it stops it.
struct Loop(Child);

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_backup_loop_keeps_the_newest_copies_of_a_running_controllers_snapshots_and_stops_on_sigterm()
{
    let mut quorum = QuorumBuilder::standalone()
        .property("metadata.log.max.record.bytes.between.snapshots", 1024)
        .property("metadata.max.idle.interval.ms", 20)
        .format();
    quorum.start(1);
    quorum.wait_for_leader(&[1], TIMEOUT);
    let out = quorum.dir().join("backups");
    std::fs::create_dir(&out).expect("the backup directory");
    let log = quorum.dir().join("backup.log");
    let child = Command::new(BIN)
        .args([
            "snapshot",
            "export",
            "--metadata-log-dir",
            &quorum.node(1).log_dir.display().to_string(),
            "--output-dir",
            &out.display().to_string(),
            "--every-seconds",
            "1",
            "--keep",
            "2",
        ])
        .stdout(std::fs::File::create(&log).expect("the loop's log"))
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the backup loop");
    let mut backup = Loop(child);

    // Three copies made (the controller snapshots every 1024 bytes of
    // NoOp records), two kept.
    wait_for(TIMEOUT, "three exported copies", || {
        let text = std::fs::read_to_string(&log).ok()?;
        (text.matches("backup: exported").count() >= 3).then_some(())
    });
    let kept = copies(&out);
    assert_eq!(kept.len(), 2, "{kept:?}");
    for copy in &kept {
        let dump = cli(&["dump-log", &copy.display().to_string()]);
        assert_eq!(dump.code, 0, "{}: {dump}", copy.display());
    }

    let pid = backup.0.id().to_string();
    let status = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -TERM {pid}");
    let exit = wait_for(TIMEOUT, "the loop's exit", || {
        backup.0.try_wait().expect("wait for the loop")
    });
    assert_eq!(exit.code(), Some(0), "{exit:?}");
    assert!(
        std::fs::read_to_string(&log)
            .expect("the loop's log")
            .contains("stopped by a signal")
    );
}
