//! Sample request and response bodies for every api we serve, populated with
//! the fields that exist at the given version, for round-trip tests.

#![allow(dead_code)]

use bytes::Bytes;
use kafka_protocol::{messages::*, protocol::StrBytes};
use kraft_controller::wire::{FinalizedFeatures, api_versions_response, supported_features};
use uuid::Uuid;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_owned())
}

fn topic(v: &str) -> TopicName {
    TopicName(s(v))
}

const DIR_A: Uuid = Uuid::from_bytes([0xA1; 16]);
const DIR_B: Uuid = Uuid::from_bytes([0xB2; 16]);

/// A request of `key` at `version` with every field of that version set.
pub fn request(key: ApiKey, v: i16) -> RequestKind {
    match key {
        ApiKey::Fetch => {
            let partition = |p: i32| {
                let mut fp = fetch_request::FetchPartition::default()
                    .with_partition(p)
                    .with_fetch_offset(100 + i64::from(p))
                    .with_partition_max_bytes(8 << 20);
                if v >= 9 {
                    fp = fp.with_current_leader_epoch(4);
                }
                if v >= 12 {
                    fp = fp.with_last_fetched_epoch(3);
                }
                if v >= 5 {
                    fp = fp.with_log_start_offset(0);
                }
                if v >= 17 {
                    fp = fp.with_replica_directory_id(DIR_A);
                }
                if v >= 18 {
                    fp = fp.with_high_watermark(90);
                }
                fp
            };
            let mut t = fetch_request::FetchTopic::default()
                .with_partitions(vec![partition(0), partition(1)]);
            if v <= 12 {
                t = t.with_topic(topic("__cluster_metadata"));
            } else {
                t = t.with_topic_id(Uuid::from_bytes([1; 16]));
            }
            let mut r = FetchRequest::default()
                .with_max_wait_ms(500)
                .with_min_bytes(0)
                .with_max_bytes(8 << 20)
                .with_isolation_level(0)
                .with_topics(vec![t]);
            if v <= 14 {
                r = r.with_replica_id(BrokerId(2));
            } else {
                r = r.with_replica_state(
                    fetch_request::ReplicaState::default()
                        .with_replica_id(BrokerId(2))
                        .with_replica_epoch(-1),
                );
            }
            if v >= 7 {
                let mut ft = fetch_request::ForgottenTopic::default().with_partitions(vec![5, 6]);
                if v <= 12 {
                    ft = ft.with_topic(topic("old"));
                } else {
                    ft = ft.with_topic_id(Uuid::from_bytes([2; 16]));
                }
                r = r
                    .with_session_id(0)
                    .with_session_epoch(-1)
                    .with_forgotten_topics_data(vec![ft]);
            }
            if v >= 11 {
                r = r.with_rack_id(s("rack-a"));
            }
            if v >= 12 {
                r = r.with_cluster_id(Some(s("MkU3OEVBNTcwNTJENDM2Qg")));
            }
            RequestKind::Fetch(r)
        }
        ApiKey::ApiVersions => {
            let mut r = ApiVersionsRequest::default();
            if v >= 3 {
                r = r
                    .with_client_software_name(s("apache-kafka-java"))
                    .with_client_software_version(s("4.1.0"));
            }
            RequestKind::ApiVersions(r)
        }
        ApiKey::Vote => {
            let mut p = vote_request::PartitionData::default()
                .with_partition_index(0)
                .with_replica_epoch(5)
                .with_replica_id(BrokerId(1))
                .with_last_offset_epoch(4)
                .with_last_offset(1234);
            if v >= 1 {
                p = p
                    .with_replica_directory_id(DIR_A)
                    .with_voter_directory_id(DIR_B);
            }
            if v >= 2 {
                p = p.with_pre_vote(true);
            }
            let mut r = VoteRequest::default()
                .with_cluster_id(Some(s("MkU3OEVBNTcwNTJENDM2Qg")))
                .with_topics(vec![
                    vote_request::TopicData::default()
                        .with_topic_name(topic("__cluster_metadata"))
                        .with_partitions(vec![p]),
                ]);
            if v >= 1 {
                r = r.with_voter_id(BrokerId(2));
            }
            RequestKind::Vote(r)
        }
        ApiKey::BeginQuorumEpoch => {
            let mut p = begin_quorum_epoch_request::PartitionData::default()
                .with_partition_index(0)
                .with_leader_id(BrokerId(1))
                .with_leader_epoch(5);
            if v >= 1 {
                p = p.with_voter_directory_id(DIR_B);
            }
            let mut r = BeginQuorumEpochRequest::default()
                .with_cluster_id(Some(s("MkU3OEVBNTcwNTJENDM2Qg")))
                .with_topics(vec![
                    begin_quorum_epoch_request::TopicData::default()
                        .with_topic_name(topic("__cluster_metadata"))
                        .with_partitions(vec![p]),
                ]);
            if v >= 1 {
                r = r.with_voter_id(BrokerId(2)).with_leader_endpoints(vec![
                    begin_quorum_epoch_request::LeaderEndpoint::default()
                        .with_name(s("CONTROLLER"))
                        .with_host(s("q-1.q"))
                        .with_port(9093),
                ]);
            }
            RequestKind::BeginQuorumEpoch(r)
        }
        ApiKey::EndQuorumEpoch => {
            let mut p = end_quorum_epoch_request::PartitionData::default()
                .with_partition_index(0)
                .with_leader_id(BrokerId(1))
                .with_leader_epoch(5);
            if v == 0 {
                p = p.with_preferred_successors(vec![2, 3]);
            } else {
                p = p.with_preferred_candidates(vec![
                    end_quorum_epoch_request::ReplicaInfo::default()
                        .with_candidate_id(BrokerId(2))
                        .with_candidate_directory_id(DIR_A),
                ]);
            }
            let mut r = EndQuorumEpochRequest::default()
                .with_cluster_id(Some(s("MkU3OEVBNTcwNTJENDM2Qg")))
                .with_topics(vec![
                    end_quorum_epoch_request::TopicData::default()
                        .with_topic_name(topic("__cluster_metadata"))
                        .with_partitions(vec![p]),
                ]);
            if v >= 1 {
                r = r.with_leader_endpoints(vec![
                    end_quorum_epoch_request::LeaderEndpoint::default()
                        .with_name(s("CONTROLLER"))
                        .with_host(s("q-1.q"))
                        .with_port(9093),
                ]);
            }
            RequestKind::EndQuorumEpoch(r)
        }
        ApiKey::DescribeQuorum => {
            RequestKind::DescribeQuorum(DescribeQuorumRequest::default().with_topics(vec![
                describe_quorum_request::TopicData::default()
                    .with_topic_name(topic("__cluster_metadata"))
                    .with_partitions(vec![
                        describe_quorum_request::PartitionData::default().with_partition_index(0),
                    ]),
            ]))
        }
        ApiKey::FetchSnapshot => {
            let mut p = fetch_snapshot_request::PartitionSnapshot::default()
                .with_partition(0)
                .with_current_leader_epoch(5)
                .with_snapshot_id(
                    fetch_snapshot_request::SnapshotId::default()
                        .with_end_offset(1000)
                        .with_epoch(4),
                )
                .with_position(4096);
            if v >= 1 {
                p = p.with_replica_directory_id(DIR_A);
            }
            RequestKind::FetchSnapshot(
                FetchSnapshotRequest::default()
                    .with_cluster_id(Some(s("MkU3OEVBNTcwNTJENDM2Qg")))
                    .with_replica_id(BrokerId(3))
                    .with_max_bytes(8 << 20)
                    .with_topics(vec![
                        fetch_snapshot_request::TopicSnapshot::default()
                            .with_name(topic("__cluster_metadata"))
                            .with_partitions(vec![p]),
                    ]),
            )
        }
        ApiKey::DescribeCluster => {
            let mut r =
                DescribeClusterRequest::default().with_include_cluster_authorized_operations(false);
            if v >= 1 {
                r = r.with_endpoint_type(2);
            }
            if v >= 2 {
                r = r.with_include_fenced_brokers(true);
            }
            RequestKind::DescribeCluster(r)
        }
        ApiKey::AddRaftVoter => RequestKind::AddRaftVoter(
            AddRaftVoterRequest::default()
                .with_cluster_id(Some(s("MkU3OEVBNTcwNTJENDM2Qg")))
                .with_timeout_ms(30_000)
                .with_voter_id(4)
                .with_voter_directory_id(DIR_A)
                .with_listeners(vec![
                    add_raft_voter_request::Listener::default()
                        .with_name(s("CONTROLLER"))
                        .with_host(s("q-4.q"))
                        .with_port(9093),
                ]),
        ),
        ApiKey::RemoveRaftVoter => RequestKind::RemoveRaftVoter(
            RemoveRaftVoterRequest::default()
                .with_cluster_id(None)
                .with_voter_id(4)
                .with_voter_directory_id(DIR_A),
        ),
        ApiKey::UpdateRaftVoter => RequestKind::UpdateRaftVoter(
            UpdateRaftVoterRequest::default()
                .with_cluster_id(Some(s("MkU3OEVBNTcwNTJENDM2Qg")))
                .with_current_leader_epoch(5)
                .with_voter_id(4)
                .with_voter_directory_id(DIR_A)
                .with_listeners(vec![
                    update_raft_voter_request::Listener::default()
                        .with_name(s("CONTROLLER"))
                        .with_host(s("q-4.q"))
                        .with_port(9093),
                ])
                .with_k_raft_version_feature(
                    update_raft_voter_request::KRaftVersionFeature::default()
                        .with_min_supported_version(0)
                        .with_max_supported_version(1),
                ),
        ),
        ApiKey::ControllerRegistration => RequestKind::ControllerRegistration(
            ControllerRegistrationRequest::default()
                .with_controller_id(4)
                .with_incarnation_id(DIR_B)
                .with_zk_migration_ready(false)
                .with_listeners(vec![
                    controller_registration_request::Listener::default()
                        .with_name(s("CONTROLLER"))
                        .with_host(s("q-4.q"))
                        .with_port(9093)
                        .with_security_protocol(0),
                ])
                .with_features(vec![
                    controller_registration_request::Feature::default()
                        .with_name(s("metadata.version"))
                        .with_min_supported_version(7)
                        .with_max_supported_version(27),
                    controller_registration_request::Feature::default()
                        .with_name(s("kraft.version"))
                        .with_min_supported_version(0)
                        .with_max_supported_version(1),
                ]),
        ),
        ApiKey::BrokerRegistration => RequestKind::BrokerRegistration(
            kafka_protocol::messages::BrokerRegistrationRequest::default()
                .with_broker_id(11.into())
                .with_cluster_id(s("MkU3OEVBNTcwNTJENDM2Qg"))
                .with_incarnation_id(DIR_B)
                .with_listeners(vec![
                    kafka_protocol::messages::broker_registration_request::Listener::default()
                        .with_name(s("PLAINTEXT"))
                        .with_host(s("b-11"))
                        .with_port(9092),
                ])
                .with_features(vec![
                    kafka_protocol::messages::broker_registration_request::Feature::default()
                        .with_name(s("metadata.version"))
                        .with_min_supported_version(7)
                        .with_max_supported_version(27),
                ])
                .with_rack(Some(s("r1")))
                .with_log_dirs(if v >= 2 { vec![DIR_B] } else { vec![] })
                .with_previous_broker_epoch(if v >= 3 { 42 } else { -1 }),
        ),
        ApiKey::BrokerHeartbeat => RequestKind::BrokerHeartbeat(
            kafka_protocol::messages::BrokerHeartbeatRequest::default()
                .with_broker_id(11.into())
                .with_broker_epoch(42)
                .with_current_metadata_offset(100)
                .with_want_fence(false)
                .with_want_shut_down(true)
                .with_offline_log_dirs(if v >= 1 { vec![DIR_B] } else { vec![] }),
        ),
        ApiKey::UnregisterBroker => RequestKind::UnregisterBroker(
            kafka_protocol::messages::UnregisterBrokerRequest::default().with_broker_id(11.into()),
        ),
        ApiKey::Envelope => RequestKind::Envelope(
            kafka_protocol::messages::EnvelopeRequest::default()
                .with_request_data(bytes::Bytes::from_static(b"\x00\x37\x00\x02inner"))
                .with_request_principal(Some(bytes::Bytes::from_static(
                    b"\x00\x00\x05User\x06alice\x00\x00",
                )))
                .with_client_host_address(bytes::Bytes::from_static(&[10, 0, 0, 7])),
        ),
        ApiKey::DescribeAcls => RequestKind::DescribeAcls(
            DescribeAclsRequest::default()
                .with_resource_type_filter(4)
                .with_resource_name_filter(Some(s("kafka-cluster")))
                .with_pattern_type_filter(3)
                .with_principal_filter(None)
                .with_host_filter(Some(s("*")))
                .with_operation(1)
                .with_permission_type(1),
        ),
        ApiKey::CreateAcls => {
            RequestKind::CreateAcls(CreateAclsRequest::default().with_creations(vec![
                create_acls_request::AclCreation::default()
                    .with_resource_type(4)
                    .with_resource_name(s("kafka-cluster"))
                    .with_resource_pattern_type(3)
                    .with_principal(s("User:CN=broker"))
                    .with_host(s("*"))
                    .with_operation(9)
                    .with_permission_type(3),
            ]))
        }
        ApiKey::DeleteAcls => {
            RequestKind::DeleteAcls(DeleteAclsRequest::default().with_filters(vec![
                delete_acls_request::DeleteAclsFilter::default()
                    .with_resource_type_filter(1)
                    .with_resource_name_filter(None)
                    .with_pattern_type_filter(1)
                    .with_principal_filter(Some(s("User:CN=broker")))
                    .with_host_filter(None)
                    .with_operation(9)
                    .with_permission_type(3),
            ]))
        }
        // Default bodies of the topic and config apis (their own tests check content).
        ApiKey::AllocateProducerIds => {
            RequestKind::AllocateProducerIds(AllocateProducerIdsRequest::default())
        }
        ApiKey::IncrementalAlterConfigs => {
            RequestKind::IncrementalAlterConfigs(IncrementalAlterConfigsRequest::default())
        }
        ApiKey::AlterConfigs => RequestKind::AlterConfigs(AlterConfigsRequest::default()),
        ApiKey::DescribeConfigs => RequestKind::DescribeConfigs(DescribeConfigsRequest::default()),
        ApiKey::AssignReplicasToDirs => {
            RequestKind::AssignReplicasToDirs(AssignReplicasToDirsRequest::default())
        }
        ApiKey::CreateTopics => RequestKind::CreateTopics(CreateTopicsRequest::default()),
        ApiKey::DeleteTopics => RequestKind::DeleteTopics(DeleteTopicsRequest::default()),
        ApiKey::CreatePartitions => {
            RequestKind::CreatePartitions(CreatePartitionsRequest::default())
        }
        ApiKey::AlterPartition => RequestKind::AlterPartition(AlterPartitionRequest::default()),
        ApiKey::ElectLeaders => RequestKind::ElectLeaders(ElectLeadersRequest::default()),
        ApiKey::UpdateFeatures => RequestKind::UpdateFeatures(
            UpdateFeaturesRequest::default()
                .with_timeout_ms(60_000)
                .with_feature_updates(vec![
                    update_features_request::FeatureUpdateKey::default()
                        .with_feature(StrBytes::from_static_str("kraft.version"))
                        .with_max_version_level(1)
                        .with_allow_downgrade(v == 0)
                        .with_upgrade_type(1),
                ])
                .with_validate_only(v >= 1),
        ),
        other => panic!("no sample request for {other:?}"),
    }
}

/// A response of `key` at `version` with every field of that version set.
pub fn response(key: ApiKey, v: i16) -> ResponseKind {
    match key {
        ApiKey::Fetch => {
            let mut p = fetch_response::PartitionData::default()
                .with_partition_index(0)
                .with_error_code(0)
                .with_high_watermark(90)
                .with_last_stable_offset(90)
                .with_records(Some(Bytes::from_static(b"opaque record batches")));
            if v >= 5 {
                p = p.with_log_start_offset(0);
            }
            if v >= 4 {
                p = p.with_aborted_transactions(Some(vec![]));
            }
            if v >= 11 {
                p = p.with_preferred_read_replica(BrokerId(-1));
            }
            if v >= 12 {
                p = p
                    .with_diverging_epoch(
                        fetch_response::EpochEndOffset::default()
                            .with_epoch(3)
                            .with_end_offset(40),
                    )
                    .with_current_leader(
                        fetch_response::LeaderIdAndEpoch::default()
                            .with_leader_id(BrokerId(1))
                            .with_leader_epoch(5),
                    );
            }
            let mut t = fetch_response::FetchableTopicResponse::default().with_partitions(vec![p]);
            if v <= 12 {
                t = t.with_topic(topic("__cluster_metadata"));
            } else {
                t = t.with_topic_id(Uuid::from_bytes([1; 16]));
            }
            let mut r = FetchResponse::default()
                .with_throttle_time_ms(0)
                .with_responses(vec![t]);
            if v >= 7 {
                r = r.with_error_code(0).with_session_id(0);
            }
            if v >= 16 {
                r = r.with_node_endpoints(vec![
                    fetch_response::NodeEndpoint::default()
                        .with_node_id(BrokerId(1))
                        .with_host(s("q-1.q"))
                        .with_port(9093)
                        .with_rack(None),
                ]);
            }
            ResponseKind::Fetch(r)
        }
        ApiKey::ApiVersions => ResponseKind::ApiVersions(api_versions_response(
            v,
            &supported_features(),
            &FinalizedFeatures {
                levels: vec![("metadata.version".into(), 27), ("kraft.version".into(), 1)],
                epoch: 12,
            },
        )),
        ApiKey::Vote => {
            let mut r = VoteResponse::default().with_error_code(0).with_topics(vec![
                vote_response::TopicData::default()
                    .with_topic_name(topic("__cluster_metadata"))
                    .with_partitions(vec![
                        vote_response::PartitionData::default()
                            .with_partition_index(0)
                            .with_error_code(0)
                            .with_leader_id(BrokerId(-1))
                            .with_leader_epoch(5)
                            .with_vote_granted(true),
                    ]),
            ]);
            if v >= 1 {
                r = r.with_node_endpoints(vec![
                    vote_response::NodeEndpoint::default()
                        .with_node_id(BrokerId(1))
                        .with_host(s("q-1.q"))
                        .with_port(9093),
                ]);
            }
            ResponseKind::Vote(r)
        }
        ApiKey::BeginQuorumEpoch => {
            let mut r = BeginQuorumEpochResponse::default()
                .with_error_code(0)
                .with_topics(vec![
                    begin_quorum_epoch_response::TopicData::default()
                        .with_topic_name(topic("__cluster_metadata"))
                        .with_partitions(vec![
                            begin_quorum_epoch_response::PartitionData::default()
                                .with_partition_index(0)
                                .with_error_code(0)
                                .with_leader_id(BrokerId(1))
                                .with_leader_epoch(5),
                        ]),
                ]);
            if v >= 1 {
                r = r.with_node_endpoints(vec![
                    begin_quorum_epoch_response::NodeEndpoint::default()
                        .with_node_id(BrokerId(1))
                        .with_host(s("q-1.q"))
                        .with_port(9093),
                ]);
            }
            ResponseKind::BeginQuorumEpoch(r)
        }
        ApiKey::EndQuorumEpoch => {
            let mut r = EndQuorumEpochResponse::default()
                .with_error_code(0)
                .with_topics(vec![
                    end_quorum_epoch_response::TopicData::default()
                        .with_topic_name(topic("__cluster_metadata"))
                        .with_partitions(vec![
                            end_quorum_epoch_response::PartitionData::default()
                                .with_partition_index(0)
                                .with_error_code(0)
                                .with_leader_id(BrokerId(1))
                                .with_leader_epoch(5),
                        ]),
                ]);
            if v >= 1 {
                r = r.with_node_endpoints(vec![
                    end_quorum_epoch_response::NodeEndpoint::default()
                        .with_node_id(BrokerId(1))
                        .with_host(s("q-1.q"))
                        .with_port(9093),
                ]);
            }
            ResponseKind::EndQuorumEpoch(r)
        }
        ApiKey::DescribeQuorum => {
            let replica = |id: i32| {
                let mut r = describe_quorum_response::ReplicaState::default()
                    .with_replica_id(BrokerId(id))
                    .with_log_end_offset(100 + i64::from(id));
                if v >= 1 {
                    r = r
                        .with_last_fetch_timestamp(1_700_000_000_000)
                        .with_last_caught_up_timestamp(1_700_000_000_000);
                }
                if v >= 2 {
                    r = r.with_replica_directory_id(DIR_A);
                }
                r
            };
            let mut p = describe_quorum_response::PartitionData::default()
                .with_partition_index(0)
                .with_error_code(0)
                .with_leader_id(BrokerId(1))
                .with_leader_epoch(5)
                .with_high_watermark(100)
                .with_current_voters(vec![replica(1), replica(2), replica(3)])
                .with_observers(vec![replica(4)]);
            if v >= 2 {
                p = p.with_error_message(None);
            }
            let mut r = DescribeQuorumResponse::default()
                .with_error_code(0)
                .with_topics(vec![
                    describe_quorum_response::TopicData::default()
                        .with_topic_name(topic("__cluster_metadata"))
                        .with_partitions(vec![p]),
                ]);
            if v >= 2 {
                r = r.with_nodes(vec![
                    describe_quorum_response::Node::default()
                        .with_node_id(BrokerId(1))
                        .with_listeners(vec![
                            describe_quorum_response::Listener::default()
                                .with_name(s("CONTROLLER"))
                                .with_host(s("q-1.q"))
                                .with_port(9093),
                        ]),
                ]);
            }
            ResponseKind::DescribeQuorum(r)
        }
        ApiKey::FetchSnapshot => {
            let mut r = FetchSnapshotResponse::default()
                .with_throttle_time_ms(0)
                .with_error_code(0)
                .with_topics(vec![
                    fetch_snapshot_response::TopicSnapshot::default()
                        .with_name(topic("__cluster_metadata"))
                        .with_partitions(vec![
                            fetch_snapshot_response::PartitionSnapshot::default()
                                .with_index(0)
                                .with_error_code(0)
                                .with_snapshot_id(
                                    fetch_snapshot_response::SnapshotId::default()
                                        .with_end_offset(1000)
                                        .with_epoch(4),
                                )
                                .with_current_leader(
                                    fetch_snapshot_response::LeaderIdAndEpoch::default()
                                        .with_leader_id(BrokerId(1))
                                        .with_leader_epoch(5),
                                )
                                .with_size(8192)
                                .with_position(4096)
                                .with_unaligned_records(Bytes::from_static(b"snapshot bytes")),
                        ]),
                ]);
            if v >= 1 {
                r = r.with_node_endpoints(vec![
                    fetch_snapshot_response::NodeEndpoint::default()
                        .with_node_id(BrokerId(1))
                        .with_host(s("q-1.q"))
                        .with_port(9093),
                ]);
            }
            ResponseKind::FetchSnapshot(r)
        }
        ApiKey::DescribeCluster => {
            let mut b = describe_cluster_response::DescribeClusterBroker::default()
                .with_broker_id(BrokerId(1))
                .with_host(s("q-1.q"))
                .with_port(9093)
                .with_rack(None);
            if v >= 2 {
                b = b.with_is_fenced(false);
            }
            let mut r = DescribeClusterResponse::default()
                .with_throttle_time_ms(0)
                .with_error_code(0)
                .with_error_message(None)
                .with_cluster_id(s("MkU3OEVBNTcwNTJENDM2Qg"))
                .with_controller_id(BrokerId(1))
                .with_brokers(vec![b])
                .with_cluster_authorized_operations(i32::MIN);
            if v >= 1 {
                r = r.with_endpoint_type(2);
            }
            ResponseKind::DescribeCluster(r)
        }
        ApiKey::AddRaftVoter => ResponseKind::AddRaftVoter(
            AddRaftVoterResponse::default()
                .with_throttle_time_ms(0)
                .with_error_code(7)
                .with_error_message(Some(s("new voter is not caught up"))),
        ),
        ApiKey::RemoveRaftVoter => ResponseKind::RemoveRaftVoter(
            RemoveRaftVoterResponse::default()
                .with_throttle_time_ms(0)
                .with_error_code(127)
                .with_error_message(None),
        ),
        ApiKey::UpdateRaftVoter => ResponseKind::UpdateRaftVoter(
            UpdateRaftVoterResponse::default()
                .with_throttle_time_ms(0)
                .with_error_code(0)
                .with_current_leader(
                    update_raft_voter_response::CurrentLeader::default()
                        .with_leader_id(BrokerId(1))
                        .with_leader_epoch(5)
                        .with_host(s("q-1.q"))
                        .with_port(9093),
                ),
        ),
        ApiKey::ControllerRegistration => ResponseKind::ControllerRegistration(
            ControllerRegistrationResponse::default()
                .with_throttle_time_ms(0)
                .with_error_code(41)
                .with_error_message(Some(s("not the active controller"))),
        ),
        ApiKey::BrokerRegistration => ResponseKind::BrokerRegistration(
            kafka_protocol::messages::BrokerRegistrationResponse::default().with_broker_epoch(42),
        ),
        ApiKey::BrokerHeartbeat => ResponseKind::BrokerHeartbeat(
            kafka_protocol::messages::BrokerHeartbeatResponse::default()
                .with_is_caught_up(true)
                .with_is_fenced(false),
        ),
        ApiKey::UnregisterBroker => ResponseKind::UnregisterBroker(
            kafka_protocol::messages::UnregisterBrokerResponse::default()
                .with_error_code(202)
                .with_error_message(Some(s("Broker ID 11 is not currently registered"))),
        ),
        ApiKey::Envelope => ResponseKind::Envelope(
            kafka_protocol::messages::EnvelopeResponse::default()
                .with_response_data(Some(bytes::Bytes::from_static(b"\x00\x00\x00\x4d\x00")))
                .with_error_code(0),
        ),
        ApiKey::DescribeAcls => {
            ResponseKind::DescribeAcls(DescribeAclsResponse::default().with_resources(vec![
                describe_acls_response::DescribeAclsResource::default()
                    .with_resource_type(4)
                    .with_resource_name(s("kafka-cluster"))
                    .with_pattern_type(3)
                    .with_acls(vec![
                        describe_acls_response::AclDescription::default()
                            .with_principal(s("User:CN=broker"))
                            .with_host(s("*"))
                            .with_operation(9)
                            .with_permission_type(3),
                    ]),
            ]))
        }
        ApiKey::CreateAcls => {
            ResponseKind::CreateAcls(CreateAclsResponse::default().with_results(vec![
                create_acls_response::AclCreationResult::default(),
                create_acls_response::AclCreationResult::default()
                    .with_error_code(42)
                    .with_error_message(Some(s("Invalid empty resource name"))),
            ]))
        }
        ApiKey::DeleteAcls => {
            ResponseKind::DeleteAcls(DeleteAclsResponse::default().with_filter_results(vec![
                delete_acls_response::DeleteAclsFilterResult::default().with_matching_acls(vec![
                    delete_acls_response::DeleteAclsMatchingAcl::default()
                        .with_resource_type(4)
                        .with_resource_name(s("kafka-cluster"))
                        .with_pattern_type(3)
                        .with_principal(s("User:CN=broker"))
                        .with_host(s("*"))
                        .with_operation(9)
                        .with_permission_type(3),
                ]),
            ]))
        }
        // Default bodies of the topic and config apis.
        ApiKey::AllocateProducerIds => {
            ResponseKind::AllocateProducerIds(AllocateProducerIdsResponse::default())
        }
        ApiKey::IncrementalAlterConfigs => {
            ResponseKind::IncrementalAlterConfigs(IncrementalAlterConfigsResponse::default())
        }
        ApiKey::AlterConfigs => ResponseKind::AlterConfigs(AlterConfigsResponse::default()),
        ApiKey::DescribeConfigs => {
            ResponseKind::DescribeConfigs(DescribeConfigsResponse::default())
        }
        ApiKey::AssignReplicasToDirs => {
            ResponseKind::AssignReplicasToDirs(AssignReplicasToDirsResponse::default())
        }
        ApiKey::CreateTopics => ResponseKind::CreateTopics(CreateTopicsResponse::default()),
        ApiKey::DeleteTopics => ResponseKind::DeleteTopics(DeleteTopicsResponse::default()),
        ApiKey::CreatePartitions => {
            ResponseKind::CreatePartitions(CreatePartitionsResponse::default())
        }
        ApiKey::AlterPartition => ResponseKind::AlterPartition(AlterPartitionResponse::default()),
        ApiKey::ElectLeaders => ResponseKind::ElectLeaders(ElectLeadersResponse::default()),
        ApiKey::UpdateFeatures => ResponseKind::UpdateFeatures(
            UpdateFeaturesResponse::default()
                .with_throttle_time_ms(5)
                .with_error_code(95)
                .with_error_message(Some(StrBytes::from_static_str("refused")))
                .with_results(vec![
                    update_features_response::UpdatableFeatureResult::default()
                        .with_feature(StrBytes::from_static_str("kraft.version"))
                        .with_error_code(95)
                        .with_error_message(Some(StrBytes::from_static_str("refused"))),
                ]),
        ),
        other => panic!("no sample response for {other:?}"),
    }
}
