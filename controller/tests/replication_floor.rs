//! The replication floor of `make bench` (`kraft-replication-floor`) runs
//! its three processes and reports every record of its window committed.

use std::process::Command;

#[test]
fn the_floor_commits_every_record_of_its_window_and_reports_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = Command::new(env!("CARGO_BIN_EXE_kraft-replication-floor"))
        .args([
            "--rate",
            "2000",
            "--record-size",
            "100",
            "--duration-s",
            "1",
            "--warmup-s",
            "0.2",
        ])
        .arg("--dir")
        .arg(dir.path())
        .output()
        .expect("run kraft-replication-floor");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_slice(out.stdout.trim_ascii()).expect("one JSON object on stdout");
    // 2000 records/s paced in whole milliseconds: exactly 2000 are due in
    // the 1 s window, however late the leader appends them.
    assert_eq!(report["records"], 2000);
    let p50 = report["p50_ms"].as_f64().expect("p50");
    let p99 = report["p99_ms"].as_f64().expect("p99");
    assert!(p50 > 0.0 && p50 <= p99, "p50 {p50} p99 {p99}");
    assert_eq!(report["leader_fsync_linger_ms"], 0);
}

#[test]
fn a_directory_it_cannot_write_stops_it_with_the_path_before_any_follower_starts() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_kraft-replication-floor"))
        .args(["--rate", "1000", "--duration-s", "1", "--dir"])
        .arg(&file)
        .output()
        .expect("run kraft-replication-floor");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("a-file") && !err.contains("follower"), "{err}");
}

#[test]
fn a_bad_rate_is_refused_with_its_value() {
    let out = Command::new(env!("CARGO_BIN_EXE_kraft-replication-floor"))
        .args(["--dir", "/nonexistent", "--rate", "0"])
        .output()
        .expect("run kraft-replication-floor");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("'0'") && err.contains("--rate"), "{err}");
}
