//! Process tests of disaster recovery (issue 26) with real `kraft-controller`
//! processes: a 3-voter quorum loses two volumes for good; `recover inspect`
//! names the volume that is furthest ahead, `recover` rewrites its voter set
//! to itself alone, it leads with every record committed before the loss,
//! takes writes and regrows to 3 voters through `quorum add-voter`.
//! `recover` refuses without its consent flag or on a directory a running
//! controller holds, and changes nothing then. A snapshot exported from one
//! quorum bootstraps a new one (`format --from-snapshot`) with the same
//! metadata.

mod support;

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    time::Duration,
};

use kafka_protocol::{
    error::ResponseError,
    messages::{
        BrokerHeartbeatRequest, BrokerRegistrationRequest, CreateTopicsRequest, RequestKind,
        ResponseKind, TopicName,
        broker_registration_request::{Feature, Listener},
        create_topics_request::CreatableTopic,
    },
    protocol::StrBytes,
};
use kraft_controller::admin::kafka_uuid_string;
use serde_json::Value;
use support::{
    CLUSTER_ID, Mode, Quorum, QuorumBuilder, batches_below, cli, kafka_broker::try_call as call,
    wait_for,
};

/// Long enough for an election, a catch-up or a commit on a loaded 2-core
/// machine.
const TIMEOUT: Duration = Duration::from_secs(40);
const BROKER: i32 = 100;
const CONSENT: &str = "--i-understand-this-may-lose-uncommitted-data";

/// Registers broker 100 and unfences it at whichever of `ids` is active.
fn register_broker(quorum: &Quorum, ids: &[i32]) {
    let feature = |name: &'static str, min: i16, max: i16| {
        Feature::default()
            .with_name(StrBytes::from_static_str(name))
            .with_min_supported_version(min)
            .with_max_supported_version(max)
    };
    let registration = BrokerRegistrationRequest::default()
        .with_broker_id(BROKER.into())
        .with_cluster_id(StrBytes::from_static_str(CLUSTER_ID))
        .with_incarnation_id(uuid::Uuid::from_u128(BROKER as u128))
        .with_listeners(vec![
            Listener::default()
                .with_name(StrBytes::from_static_str("PLAINTEXT"))
                .with_host(StrBytes::from_static_str("127.0.0.1"))
                .with_port(9100),
        ])
        .with_features(vec![
            feature("metadata.version", 7, 27),
            feature("kraft.version", 0, 1),
            feature("group.version", 0, 1),
            feature("transaction.version", 0, 2),
            feature("eligible.leader.replicas.version", 0, 1),
        ])
        .with_log_dirs(vec![uuid::Uuid::from_u128(0xd1d1)])
        .with_previous_broker_epoch(-1);
    wait_for(TIMEOUT, "broker 100 registered and unfenced", || {
        ids.iter().find_map(|&id| {
            let Some(ResponseKind::BrokerRegistration(r)) = call(
                quorum,
                id,
                4,
                RequestKind::BrokerRegistration(registration.clone()),
            ) else {
                return None;
            };
            if r.error_code != 0 {
                return None;
            }
            let beat = BrokerHeartbeatRequest::default()
                .with_broker_id(BROKER.into())
                .with_broker_epoch(r.broker_epoch)
                .with_current_metadata_offset(i64::MAX / 2);
            match call(quorum, id, 1, RequestKind::BrokerHeartbeat(beat)) {
                Some(ResponseKind::BrokerHeartbeat(h)) if h.error_code == 0 && !h.is_fenced => {
                    Some(())
                }
                _ => None,
            }
        })
    });
}

/// Creates topic `name` (3 partitions on broker 100) at whichever of `ids`
/// is active; panics on an error other than NOT_CONTROLLER.
fn create_topic(quorum: &Quorum, ids: &[i32], name: &'static str) {
    let topic = CreatableTopic::default()
        .with_name(TopicName(StrBytes::from_static_str(name)))
        .with_num_partitions(3)
        .with_replication_factor(1);
    let request = CreateTopicsRequest::default().with_topics(vec![topic]);
    let code = wait_for(TIMEOUT, &format!("CreateTopics {name} answered"), || {
        ids.iter().find_map(|&id| {
            match call(quorum, id, 7, RequestKind::CreateTopics(request.clone())) {
                Some(ResponseKind::CreateTopics(r))
                    if r.topics[0].error_code != ResponseError::NotController.code() =>
                {
                    Some(r.topics[0].error_code)
                }
                _ => None,
            }
        })
    });
    assert_eq!(code, 0, "CreateTopics {name}");
}

/// Node `id`'s image (`GET /metadata`), `None` while it does not answer.
fn image(quorum: &Quorum, id: i32) -> Option<Value> {
    let (status, body) = quorum.node(id).http_get("/metadata")?;
    (status == 200).then(|| serde_json::from_str(&body).ok())?
}

/// The topic names in node `id`'s image.
fn topics(quorum: &Quorum, id: i32) -> Vec<String> {
    image(quorum, id)
        .and_then(|i| {
            i["topics"].as_array().map(|ts| {
                ts.iter()
                    .filter_map(|t| t["name"].as_str().map(str::to_owned))
                    .collect()
            })
        })
        .unwrap_or_default()
}

/// Waits until node `id`'s image holds every topic of `names` (committed
/// and applied there).
fn wait_topics(quorum: &Quorum, id: i32, names: &[&str]) {
    wait_for(TIMEOUT, &format!("node {id} to hold {names:?}"), || {
        let have = topics(quorum, id);
        names
            .iter()
            .all(|n| have.iter().any(|h| h == n))
            .then_some(())
    });
}

/// Every file under `dir`, by path, with its bytes.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("list a directory") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).expect("read a file");
                out.insert(path, bytes);
            }
        }
    }
    out
}

/// The log end offset that `recover`/`inspect` printed for `dir`.
fn end_offset_in(out: &str, dir: &Path) -> i64 {
    let block = out
        .split(&format!("{}:", dir.display()))
        .nth(1)
        .unwrap_or_else(|| panic!("no survey of {} in {out}", dir.display()));
    block
        .split("end offset ")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no end offset in {block}"))
}

#[test]
fn a_survivor_of_two_lost_volumes_is_chosen_recovered_leads_with_every_record_and_regrows_to_three()
{
    let mut quorum = QuorumBuilder::new(3, Mode::Dynamic).format();
    quorum.start_all();
    let ids = quorum.ids();
    let (leader, old_epoch) = quorum.wait_for_leader(&ids, TIMEOUT);
    register_broker(&quorum, &ids);
    create_topic(&quorum, &ids, "kept");
    for id in &ids {
        wait_topics(&quorum, *id, &["kept"]);
    }
    // One follower is lost first: the two others commit on without it.
    let followers: Vec<i32> = ids.iter().copied().filter(|i| *i != leader).collect();
    let (behind, survivor) = (followers[0], followers[1]);
    quorum.kill(behind);
    create_topic(&quorum, &[leader, survivor], "late");
    wait_topics(&quorum, survivor, &["late"]);
    quorum.kill_all();

    // Of the two reachable volumes, the one whose log is behind is not chosen.
    let (behind_dir, survivor_dir) = (
        quorum.node(behind).log_dir.clone(),
        quorum.node(survivor).log_dir.clone(),
    );
    let out = cli(&[
        "recover",
        "inspect",
        &behind_dir.display().to_string(),
        &survivor_dir.display().to_string(),
    ]);
    assert_eq!(out.code, 0, "inspect: {out}");
    assert!(
        out.stdout.contains(&format!(
            "recover from {} (node {survivor})",
            survivor_dir.display()
        )),
        "inspect must choose node {survivor}: {out}"
    );
    assert!(
        out.stdout
            .contains(&format!("{}: (last epoch", behind_dir.display()))
            && out.stdout.contains("behind"),
        "{out}"
    );
    let old_end = end_offset_in(&out.stdout, &survivor_dir);
    assert!(end_offset_in(&out.stdout, &behind_dir) < old_end, "{out}");
    let before = quorum.dump_log(survivor);

    // Two volumes are gone for good: new empty disks, new directory ids.
    let old_keys: Vec<String> = ids
        .iter()
        .map(|i| quorum.node(*i).directory_id.clone())
        .collect();
    quorum.replace_disk(leader);
    quorum.replace_disk(behind);

    let out = cli(&[
        "recover",
        "--metadata-log-dir",
        &survivor_dir.display().to_string(),
        CONSENT,
    ]);
    assert_eq!(out.code, 0, "recover: {out}");
    let warnings: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .collect();
    assert_eq!(warnings.len(), 1, "one warning line: {out}");
    assert!(warnings[0].contains("lost"), "{out}");
    assert!(
        out.stdout.contains(&format!(
            "voters are now {survivor}@127.0.0.1:{}:{}",
            quorum.node(survivor).port,
            quorum.node(survivor).directory_id
        )),
        "{out}"
    );

    // Alone, it elects itself in a later epoch, with every topic.
    quorum.start(survivor);
    let (now_leader, epoch) = quorum.wait_for_leader(&[survivor], TIMEOUT);
    assert_eq!(now_leader, survivor);
    assert!(epoch > old_epoch, "epoch {epoch} after {old_epoch}");
    wait_topics(&quorum, survivor, &["kept", "late"]);
    // Writes continue.
    register_broker(&quorum, &[survivor]);
    create_topic(&quorum, &[survivor], "after");
    wait_topics(&quorum, survivor, &["kept", "late", "after"]);

    // Regrow: the two new disks join as observers and are added as voters.
    for id in [leader, behind] {
        quorum.start(id);
        let directory_id = quorum.node(id).directory_id.clone();
        assert!(!old_keys.contains(&directory_id));
        wait_for(TIMEOUT, &format!("node {id} a caught-up observer"), || {
            let info = quorum.describe_quorum(survivor).ok()?;
            info.observers
                .iter()
                .any(|o| {
                    o.replica_id == id
                        && kafka_uuid_string(o.directory_id) == directory_id
                        && o.log_end_offset >= info.high_watermark
                })
                .then_some(())
        });
        let config = quorum.node(id).config.display().to_string();
        let out = quorum.quorum_cli(survivor, &["add-voter", "--config", &config]);
        assert_eq!(out.code, 0, "add-voter of node {id}: {out}");
    }
    let info = quorum.describe_quorum(survivor).expect("DescribeQuorum");
    let mut voters: Vec<(i32, String)> = info
        .voters
        .iter()
        .map(|v| (v.replica_id, kafka_uuid_string(v.directory_id)))
        .collect();
    voters.sort();
    let mut expected: Vec<(i32, String)> = ids
        .iter()
        .map(|i| (*i, quorum.node(*i).directory_id.clone()))
        .collect();
    expected.sort();
    assert_eq!(voters, expected);
    for id in [leader, behind] {
        quorum.wait_for_follower(id, survivor, TIMEOUT);
        wait_topics(&quorum, id, &["kept", "late", "after"]);
    }
    create_topic(&quorum, &ids, "regrown");
    wait_topics(&quorum, leader, &["regrown"]);

    // Every batch below the old end is still there, byte for byte as
    // dump-log prints it, on the survivor and on a new voter; the cluster
    // id is kept.
    quorum.kill_all();
    let kept = batches_below(&before, old_end);
    assert!(!kept.is_empty());
    assert_eq!(batches_below(&quorum.dump_log(survivor), old_end), kept);
    assert_eq!(batches_below(&quorum.dump_log(leader), old_end), kept);
    let meta = std::fs::read_to_string(survivor_dir.join("meta.properties")).expect("meta");
    assert!(meta.contains(&format!("cluster.id={CLUSTER_ID}")), "{meta}");
}

#[test]
fn recover_refuses_without_consent_or_on_a_running_node_and_changes_nothing() {
    let mut quorum = QuorumBuilder::standalone().format();
    quorum.start(1);
    quorum.wait_for_leader(&[1], TIMEOUT);
    let dir = quorum.node(1).log_dir.display().to_string();

    // A running controller holds the directory's lock.
    let out = cli(&["recover", "--metadata-log-dir", &dir, CONSENT]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("holds the lock"), "{out}");

    quorum.kill(1);
    let before = files(&quorum.node(1).log_dir);
    let out = cli(&["recover", "--metadata-log-dir", &dir]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains(CONSENT), "{out}");
    assert!(out.stderr.contains("nothing was written"), "{out}");
    assert!(
        out.stdout.contains("end offset"),
        "the survey is printed: {out}"
    );
    assert_eq!(files(&quorum.node(1).log_dir), before);
}

#[test]
fn an_exported_snapshot_bootstraps_a_new_quorum_with_the_same_metadata() {
    let mut old = QuorumBuilder::standalone()
        .property("metadata.log.max.record.bytes.between.snapshots", 1024)
        .property("metadata.max.idle.interval.ms", 20)
        .format();
    old.start(1);
    old.wait_for_leader(&[1], TIMEOUT);
    register_broker(&old, &[1]);
    create_topic(&old, &[1], "backed-up");
    wait_topics(&old, 1, &["backed-up"]);
    let backup = old.dir().join("backup.checkpoint");
    let backup_text = backup.display().to_string();
    let dir = old.node(1).log_dir.display().to_string();
    // Exported while the controller runs, until the snapshot holds the topic.
    wait_for(TIMEOUT, "an exported snapshot with the topic", || {
        let out = cli(&[
            "snapshot",
            "export",
            "--metadata-log-dir",
            &dir,
            "--output",
            &backup_text,
        ]);
        if out.code != 0 {
            return None;
        }
        let dump = cli(&["dump-log", &backup_text]);
        dump.stdout.contains("backed-up").then_some(())
    });
    // Into a directory, the file keeps the snapshot's name (Kafka's
    // kafka-dump-log reads the offset and epoch from it).
    let backups = old.dir().join("backups");
    std::fs::create_dir(&backups).expect("a backup directory");
    let out = cli(&[
        "snapshot",
        "export",
        "--metadata-log-dir",
        &dir,
        "--output",
        &backups.display().to_string(),
    ]);
    assert_eq!(out.code, 0, "export into a directory: {out}");
    let names: Vec<String> = std::fs::read_dir(&backups)
        .expect("list the backups")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    let name = names[0].strip_suffix(".checkpoint").expect("a .checkpoint");
    let (offset, epoch) = name.split_once('-').expect("OFFSET-EPOCH");
    assert!(offset.len() == 20 && epoch.len() == 10, "{name}");
    assert!(out.stdout.contains(&names[0]), "{out}");
    let old_image = image(&old, 1).expect("the old image");
    old.kill(1);

    // A new quorum: a fresh volume formatted from the backup, standalone.
    let mut new = QuorumBuilder::standalone().format();
    let node = new.node(1);
    std::fs::remove_dir_all(&node.log_dir).expect("wipe the new volume");
    let out = cli(&[
        "format",
        "--config",
        &node.config.display().to_string(),
        &format!("--cluster-id={CLUSTER_ID}"),
        "--standalone",
        "--from-snapshot",
        &backup_text,
    ]);
    assert_eq!(out.code, 0, "format --from-snapshot: {out}");
    new.start(1);
    new.wait_for_leader(&[1], TIMEOUT);
    wait_topics(&new, 1, &["backed-up"]);
    let new_image = image(&new, 1).expect("the new image");
    let same = |v: &Value| {
        let topics: Vec<(Value, Value, Vec<Value>)> = v["topics"]
            .as_array()
            .expect("topics")
            .iter()
            .map(|t| {
                (
                    t["name"].clone(),
                    t["topic_id"].clone(),
                    t["partitions"]
                        .as_array()
                        .expect("partitions")
                        .iter()
                        .map(|p| p["replicas"].clone())
                        .collect(),
                )
            })
            .collect();
        let brokers: Vec<(Value, Value)> = v["brokers"]
            .as_array()
            .expect("brokers")
            .iter()
            .map(|b| (b["id"].clone(), b["incarnation_id"].clone()))
            .collect();
        (
            v["metadata_version"].clone(),
            v["features"].clone(),
            topics,
            brokers,
        )
    };
    assert_eq!(same(&new_image), same(&old_image));
}
