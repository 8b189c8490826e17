//! Process tests of `kraft-controller quorum --bootstrap-controller` with a
//! comma-separated list (issue 27), as Kafka's `kafka-metadata-quorum
//! --bootstrap-controller` takes it (`bootstrap.controllers`, read by
//! `ClientUtils.parseAndValidateAddresses`): each address is tried in
//! order and the first that answers wins; a list that does not parse is
//! refused in one line naming the bad entry before anything is dialled;
//! when none answers, the error names every address tried and why.

mod support;

use std::time::Duration;

use support::{QuorumBuilder, cli, free_ports};

/// Long enough for a first election on a loaded 2-core machine.
const ELECTION: Duration = Duration::from_secs(20);

/// Exit code of a retriable failure (`cli::quorum::EXIT_RETRIABLE`).
const EXIT_RETRIABLE: i32 = 3;

/// An address on loopback where nothing listens (a port found free and
/// released).
fn dead_address() -> String {
    format!("127.0.0.1:{}", free_ports(1)[0])
}

#[test]
fn a_list_whose_first_controller_is_unreachable_is_answered_by_the_next() {
    let mut quorum = QuorumBuilder::standalone().format();
    quorum.start_all();
    let (leader, _) = quorum.wait_for_leader(&[1], ELECTION);
    // Port 1 on loopback refuses at once; the live controller comes second,
    // after a blank (Kafka trims the entries).
    let list = format!("127.0.0.1:1, {}", quorum.node(1).address());
    let out = cli(&[
        "quorum",
        "--bootstrap-controller",
        &list,
        "describe",
        "--status",
    ]);
    assert_eq!(out.code, 0, "{out}");
    assert!(
        out.stdout.lines().any(|l| {
            l.split_whitespace().collect::<Vec<_>>() == ["LeaderId:", &leader.to_string()]
        }),
        "{out}"
    );
    let out = cli(&[
        "quorum",
        "--bootstrap-controller",
        &list,
        "describe",
        "--replication",
    ]);
    assert_eq!(out.code, 0, "{out}");
}

#[test]
fn a_list_that_does_not_parse_is_refused_in_one_line_naming_the_bad_entry() {
    for (list, named, reason) in [
        ("127.0.0.1:1,,127.0.0.1:2", "\"\"", "empty entry"),
        ("127.0.0.1:1,", "\"\"", "empty entry"),
        (
            "127.0.0.1:1,localhost",
            "\"localhost\"",
            "expected HOST:PORT",
        ),
        ("127.0.0.1:x", "\"127.0.0.1:x\"", "bad port \"x\""),
    ] {
        let out = cli(&[
            "quorum",
            "--bootstrap-controller",
            list,
            "--timeout-ms",
            "2000",
            "describe",
            "--status",
        ]);
        assert_eq!(out.code, 1, "{list}: {out}");
        let stderr = out.stderr.trim();
        assert_eq!(stderr.lines().count(), 1, "{list}: one line: {out}");
        assert!(
            stderr.contains(&format!("invalid bootstrap controller {named} in {list:?}"))
                && stderr.contains(reason),
            "{list}: {out}"
        );
    }
}

#[test]
fn when_no_controller_of_the_list_answers_the_error_names_every_address_tried() {
    let (first, second) = ("127.0.0.1:1".to_owned(), dead_address());
    let list = format!("{first},{second}");
    let out = cli(&[
        "quorum",
        "--bootstrap-controller",
        &list,
        "--timeout-ms",
        "2000",
        "describe",
        "--status",
    ]);
    assert_eq!(out.code, EXIT_RETRIABLE, "{out}");
    let stderr = out.stderr.trim();
    assert_eq!(stderr.lines().count(), 1, "one line: {out}");
    assert!(
        stderr.contains("no bootstrap controller answered")
            && stderr.contains(&format!("{first} (i/o with {first} failed"))
            && stderr.contains(&format!("{second} (i/o with {second} failed")),
        "{out}"
    );
}
