//! Simulation of the quorum controller's speculative state (issue 16,
//! docs/quorum-controller.md): a leader that appends a broker registration
//! and loses leadership before it commits leaves no broker registered in any
//! node's image, and the next active controller, rebuilt from its committed
//! image, does not know the broker (its heartbeat is STALE_BROKER_EPOCH).
//! The speculative state of the lost leader saw the broker at once.
//!
//! The second test (review B2) runs a real `QuorumController` per node
//! (`Controllers`, fed every role change and commit after each sim step, as
//! the runtime does): the cut-off leader's registration gets no answer
//! before commit, then NOT_CONTROLLER when it resigns, its speculative state
//! is dropped, and when it leads again its re-activated state lacks the
//! broker.
//!
//! The first test's nodes' "images" are built here from their logs up to their high
//! watermarks with the metadata image of the controller; the harness's own
//! values (`value-N`, from elections) are not metadata records and are
//! skipped.

mod sim;

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use kafka_protocol::{
    error::ResponseError,
    messages::{
        BrokerHeartbeatRequest, BrokerRegistrationRequest, RequestKind, ResponseKind,
        broker_registration_request::{Feature, Listener},
    },
    protocol::StrBytes,
};
use kraft_controller::{
    log::ReplicatedLog,
    metadata::{
        image::MetadataImage,
        records::{FeatureLevelRecord, METADATA_VERSION_FEATURE},
    },
    quorum_controller::{
        QuorumController, QuorumControllerConfig, cluster_control::ClusterControl,
    },
    raft::{
        ReplyHandle, Role,
        listener::{LeaderChange, RaftClient},
    },
};
use sim::{Sim, SimConfig, image::committed_image};

const CLUSTER: &str = "MkU3OEVBNTcwNTJENDM2Qg";

fn registration() -> BrokerRegistrationRequest {
    BrokerRegistrationRequest::default()
        .with_broker_id(11.into())
        .with_cluster_id(StrBytes::from_static_str(CLUSTER))
        .with_incarnation_id(uuid::Uuid::from_u128(11))
        .with_listeners(vec![
            Listener::default()
                .with_name(StrBytes::from_static_str("PLAINTEXT"))
                .with_host(StrBytes::from_static_str("b-11"))
                .with_port(9092),
        ])
        .with_features(vec![
            Feature::default()
                .with_name(StrBytes::from_static_str(METADATA_VERSION_FEATURE))
                .with_min_supported_version(7)
                .with_max_supported_version(27),
        ])
        .with_log_dirs(vec![uuid::Uuid::from_u128(0xd111)])
}

#[test]
fn a_registration_appended_by_a_leader_that_loses_leadership_before_commit_is_in_no_image() {
    for seed in 0..5 {
        let mut cfg = SimConfig::new(seed, 3, 0);
        cfg.snapshot_every = None;
        let mut sim = Sim::new(cfg);
        let leader = sim.elect_and_commit(20_000).expect("a leader");
        // metadata.version 4.1-IV1, committed everywhere.
        let mv = FeatureLevelRecord {
            name: METADATA_VERSION_FEATURE.into(),
            feature_level: 27,
        }
        .encode_framed();
        let offset = sim.propose_records(leader, &[mv]).expect("leader appends");
        assert!(
            sim.run_until_cond(10_000, |s| [1, 2, 3].iter().all(|id| s
                .engine(*id)
                .and_then(|e| e.high_watermark())
                .is_some_and(|h| h > offset))),
            "seed {seed}: metadata.version not committed everywhere"
        );

        // The leader becomes active: its speculative state starts from its
        // committed image. Cut off, it appends a registration that cannot
        // commit; its own speculative state sees the broker at once.
        let image = committed_image(&sim, leader);
        let mut active = ClusterControl::activate(CLUSTER, &image, 9_000, sim.now);
        sim.isolate(leader);
        let next_offset = sim.engine(leader).expect("up").log().end_offset().offset;
        let decision = active
            .register_broker(
                &registration(),
                &BTreeSet::from([1, 2, 3]),
                image.features(),
                next_offset,
                sim.now,
            )
            .expect("a valid registration");
        let records: Vec<Bytes> = decision.records.clone();
        let last = sim
            .propose_records(leader, &records)
            .expect("still the leader when it appends");
        assert_eq!(
            last, next_offset,
            "seed {seed}: the epoch is the record's offset"
        );
        assert_eq!(decision.answer, next_offset);
        assert!(
            active.brokers().contains_key(&11),
            "speculative state sees it"
        );
        assert!(committed_image(&sim, leader).brokers().is_empty());

        // The majority elects another leader, which commits in its epoch.
        let others: Vec<i32> = [1, 2, 3].into_iter().filter(|i| *i != leader).collect();
        let elected = sim.run_until_cond(30_000, |s| {
            others.iter().any(|id| {
                s.engine(*id).is_some_and(|e| {
                    e.role() == Role::Leader && e.high_watermark().is_some_and(|h| h > last)
                })
            })
        });
        assert!(
            elected,
            "seed {seed}: no new leader committed past the lost append"
        );
        let new_leader = others
            .iter()
            .copied()
            .find(|id| sim.engine(*id).is_some_and(|e| e.role() == Role::Leader))
            .expect("a new leader");
        // The old leader rejoins and truncates its uncommitted tail.
        sim.heal();
        let new_epoch = sim.engine(new_leader).expect("up").epoch();
        assert!(
            sim.run_until_cond(30_000, |s| s.engine(leader).is_some_and(|e| {
                e.epoch() >= new_epoch && e.high_watermark().is_some_and(|h| h > last)
            })),
            "seed {seed}: the old leader did not catch up"
        );
        // The lost leader's speculative state is dropped with its leadership
        // (QuorumController::on_leader_change); what it appended is in no
        // node's image.
        for id in [1, 2, 3] {
            let image = committed_image(&sim, id);
            assert!(
                image.brokers().is_empty(),
                "seed {seed}: node {id} has brokers {:?}",
                image.brokers().keys().collect::<Vec<_>>()
            );
            assert_eq!(image.feature_level(METADATA_VERSION_FEATURE), Some(27));
        }
        // The new active controller, rebuilt from its committed image, does
        // not know the broker: its heartbeat is STALE_BROKER_EPOCH, and the
        // broker must register again.
        let mut rebuilt =
            ClusterControl::activate(CLUSTER, &committed_image(&sim, new_leader), 9_000, sim.now);
        let heartbeat = BrokerHeartbeatRequest::default()
            .with_broker_id(11.into())
            .with_broker_epoch(decision.answer)
            .with_current_metadata_offset(last);
        let next = sim
            .engine(new_leader)
            .expect("up")
            .log()
            .end_offset()
            .offset;
        let (error, _) = rebuilt
            .heartbeat(&heartbeat, next, sim.now, false)
            .expect_err("unknown broker");
        assert_eq!(error, ResponseError::StaleBrokerEpoch);
        let finalized: BTreeMap<String, i16> = committed_image(&sim, new_leader).features().clone();
        let again = rebuilt
            .register_broker(
                &registration(),
                &BTreeSet::from([1, 2, 3]),
                &finalized,
                next,
                sim.now,
            )
            .expect("registers again");
        assert_eq!(again.answer, next);
    }
}

/// A [`QuorumController`] per node, driven as the runtime drives it: after
/// every sim step, a change of a node's role or epoch goes to
/// `on_leader_change`, a move of its high watermark to its image and then
/// `on_commit`; what a controller proposes is executed by the sim.
#[derive(Default)]
struct Controllers {
    qc: BTreeMap<i32, QuorumController>,
    images: BTreeMap<i32, MetadataImage>,
    seen: BTreeMap<i32, (Role, i32, Option<i64>)>,
    replies: Vec<(ReplyHandle, Option<ResponseKind>)>,
    next_handle: u64,
}

impl Controllers {
    fn new(ids: &[i32]) -> Self {
        let mut c = Self::default();
        for id in ids {
            c.qc.insert(
                *id,
                QuorumController::new(QuorumControllerConfig {
                    cluster_id: CLUSTER.into(),
                    session_timeout_ms: 9_000,
                    replication: Default::default(),
                    leader_imbalance_check_interval_ms: None,
                }),
            );
            c.images.insert(*id, MetadataImage::default());
        }
        c
    }

    /// Runs `f` on node `id`'s controller with a client at the sim's clock.
    fn call<T>(
        &mut self,
        sim: &mut Sim,
        id: i32,
        f: impl FnOnce(
            &mut QuorumController,
            &mut RaftClient<'_, sim::disk::SimLog>,
            &MetadataImage,
        ) -> T,
    ) -> T {
        let now = sim.now;
        let engine = sim
            .nodes
            .get_mut(&id)
            .and_then(|n| n.engine.as_mut())
            .expect("node is up");
        let mut client = RaftClient::new(engine, now, false, 0).with_monotonic_ms(now);
        let qc = self.qc.get_mut(&id).expect("a controller");
        let out = f(qc, &mut client, &self.images[&id]);
        let (output, _) = client.finish();
        self.replies
            .extend(output.replies.into_iter().map(|(h, r)| {
                (
                    h,
                    r.map(|r| match r {
                        kraft_controller::wire::Response::Kafka(r) => r,
                        other => panic!("not a kafka-protocol answer: {other:?}"),
                    }),
                )
            }));
        sim.execute_commands(id, output.commands);
        out
    }

    /// Hands every node's role change and commit since the last call to its
    /// controller.
    fn observe(&mut self, sim: &mut Sim) {
        let ids: Vec<i32> = self.qc.keys().copied().collect();
        for id in ids {
            let Some(e) = sim.engine(id) else { continue };
            let (role, epoch, leader_id, hwm) =
                (e.role(), e.epoch(), e.leader_id(), e.high_watermark());
            let before = self.seen.insert(id, (role, epoch, hwm));
            if before.is_none_or(|(r, ep, _)| (r, ep) != (role, epoch)) {
                let change = LeaderChange {
                    role,
                    epoch,
                    leader_id,
                };
                self.call(sim, id, |qc, client, _| qc.on_leader_change(client, change));
            }
            if let Some(hwm) = hwm
                && before.is_none_or(|(_, _, h)| h != Some(hwm))
            {
                let image = self.images.get_mut(&id).expect("an image");
                if image.next_offset() > hwm {
                    // Truncated below what was applied cannot happen to a
                    // committed image.
                    panic!("node {id}: high watermark {hwm} below its image");
                }
                let engine = sim.engine(id).expect("up");
                image.apply_log(engine.log(), hwm).expect("image applies");
                self.call(sim, id, |qc, client, image| {
                    qc.on_commit(client, image, hwm)
                });
            }
        }
    }

    /// Runs the sim for at most `ms`, observing after every step, until
    /// `cond` holds; whether it did.
    fn run_until(
        &mut self,
        sim: &mut Sim,
        ms: u64,
        mut cond: impl FnMut(&Sim, &Self) -> bool,
    ) -> bool {
        let until = sim.now + ms;
        loop {
            self.observe(sim);
            if cond(sim, self) {
                return true;
            }
            if !sim.step(until) {
                self.observe(sim);
                return cond(sim, self);
            }
        }
    }

    fn request(&mut self, sim: &mut Sim, id: i32, request: RequestKind) -> ReplyHandle {
        self.next_handle += 1;
        let handle = ReplyHandle(1_000_000 + self.next_handle);
        self.call(sim, id, |qc, client, image| {
            qc.on_request(client, image, request, handle)
                .expect("no log failure")
        });
        handle
    }

    fn answers(&self, handle: ReplyHandle) -> Vec<&ResponseKind> {
        self.replies
            .iter()
            .filter(|(h, _)| *h == handle)
            .filter_map(|(_, r)| r.as_ref())
            .collect()
    }
}

#[test]
fn a_real_quorum_controller_that_loses_leadership_before_commit_answers_not_controller_and_forgets_the_broker()
 {
    for seed in 0..5 {
        let mut cfg = SimConfig::new(seed, 3, 0);
        cfg.snapshot_every = None;
        let mut sim = Sim::new(cfg);
        let mut ctl = Controllers::new(&[1, 2, 3]);
        assert!(
            ctl.run_until(&mut sim, 20_000, |s, _| s.leader().is_some()),
            "seed {seed}: no leader"
        );
        let leader = sim.leader().expect("a leader");
        let mv = FeatureLevelRecord {
            name: METADATA_VERSION_FEATURE.into(),
            feature_level: 27,
        }
        .encode_framed();
        let offset = sim.propose_records(leader, &[mv]).expect("leader appends");
        assert!(
            ctl.run_until(&mut sim, 10_000, |s, c| {
                c.qc[&leader].active_epoch().is_some()
                    && [1, 2, 3].iter().all(|id| {
                        s.engine(*id)
                            .and_then(|e| e.high_watermark())
                            .is_some_and(|h| h > offset)
                    })
            }),
            "seed {seed}: metadata.version not committed everywhere, or the leader not active"
        );
        let epoch = sim.engine(leader).expect("up").epoch();
        for id in [1, 2, 3].into_iter().filter(|i| *i != leader) {
            let h = ctl.request(
                &mut sim,
                id,
                RequestKind::BrokerRegistration(registration()),
            );
            assert!(
                matches!(ctl.answers(h).as_slice(), [ResponseKind::BrokerRegistration(r)] if r.error_code == ResponseError::NotController.code()),
                "seed {seed}: follower {id} must answer NOT_CONTROLLER"
            );
        }

        // Cut off, the leader appends a registration that cannot commit.
        sim.isolate(leader);
        let h = ctl.request(
            &mut sim,
            leader,
            RequestKind::BrokerRegistration(registration()),
        );
        let appended = sim.engine(leader).expect("up").log().end_offset().offset - 1;
        assert!(
            ctl.answers(h).is_empty(),
            "seed {seed}: answered before commit"
        );
        assert!(
            ctl.qc[&leader]
                .cluster()
                .is_some_and(|c| c.brokers().contains_key(&11)),
            "seed {seed}: the speculative state sees the broker"
        );

        // The majority elects another leader whose controller activates;
        // the cut-off one resigns and answers NOT_CONTROLLER.
        let others: Vec<i32> = [1, 2, 3].into_iter().filter(|i| *i != leader).collect();
        assert!(
            ctl.run_until(&mut sim, 30_000, |s, c| {
                others.iter().any(|id| {
                    s.engine(*id).is_some_and(|e| e.role() == Role::Leader)
                        && c.qc[id].active_epoch().is_some()
                }) && !c.answers(h).is_empty()
            }),
            "seed {seed}: no new active controller, or the old one still waits"
        );
        assert!(
            matches!(ctl.answers(h).as_slice(), [ResponseKind::BrokerRegistration(r)] if r.error_code == ResponseError::NotController.code() && r.broker_epoch == -1),
            "seed {seed}: the lost leader's waiting registration must get NOT_CONTROLLER: {:?}",
            ctl.answers(h)
        );
        assert_eq!(ctl.qc[&leader].active_epoch(), None, "seed {seed}");
        assert!(ctl.qc[&leader].cluster().is_none(), "seed {seed}");
        let new_leader = sim.leader().expect("a new leader");
        assert!(
            ctl.qc[&new_leader]
                .cluster()
                .is_some_and(|c| c.brokers().is_empty()),
            "seed {seed}: the new active controller knows no broker"
        );

        // Healed, the old leader truncates the registration; then leaders
        // are cut off one after the other until it leads again.
        sim.heal();
        for _ in 0..12 {
            let current = sim.leader().expect("a leader");
            if current == leader && ctl.qc[&leader].active_epoch().is_some() {
                break;
            }
            if current != leader {
                sim.isolate(current);
            }
            ctl.run_until(&mut sim, 30_000, |s, c| {
                s.leader().is_some_and(|l| l != current || l == leader)
                    && c.qc.values().any(|q| q.active_epoch().is_some())
                    && s.engine(leader)
                        .is_some_and(|e| e.epoch() > epoch && e.high_watermark().is_some())
            });
            sim.heal();
        }
        assert_eq!(
            sim.leader(),
            Some(leader),
            "seed {seed}: the old leader never led again"
        );
        assert!(
            ctl.run_until(&mut sim, 10_000, |_, c| c.qc[&leader]
                .active_epoch()
                .is_some()),
            "seed {seed}: the old leader did not activate again"
        );
        let cluster = ctl.qc[&leader].cluster().expect("active");
        assert!(
            cluster.brokers().is_empty(),
            "seed {seed}: re-activated with brokers {:?}",
            cluster.brokers().keys().collect::<Vec<_>>()
        );
        assert!(
            sim.engine(leader).expect("up").log().end_offset().offset > appended,
            "seed {seed}"
        );
        for id in [1, 2, 3] {
            assert!(
                ctl.images[&id].brokers().is_empty(),
                "seed {seed}: node {id}'s image has a broker"
            );
        }
    }
}
