//! A pre-check of request bodies that rejects array lengths no frame could
//! hold, before `kafka-protocol` decodes them.
//!
//! Why: `kafka-protocol` 0.18 calls `Vec::with_capacity(n)` with the element
//! count read off the wire (up to 2^32 - 2 for compact arrays) before it reads
//! a single element. A 20-byte frame can so ask for hundreds of GiB; when the
//! allocator refuses, Rust aborts the process (not a panic). Every element
//! takes at least one byte on the wire, so a count larger than the bytes left
//! is impossible: this walker follows the request schemas of the APIs we serve
//! (field order taken from `kafka-protocol`'s generated decoders) and rejects
//! such counts. It decides nothing else: what it accepts, `kafka-protocol`
//! still fully decodes and may still reject.

use kafka_protocol::messages::ApiKey;

mod broker_apis;

use self::broker_apis::*;

#[derive(Clone, Copy)]
enum Ty {
    I8,
    I16,
    I32,
    I64,
    U16,
    Bool,
    Uuid,
    /// String, nullable or not: INT16 length (non-flexible) or UNSIGNED_VARINT
    /// length + 1 (flexible).
    Str,
    /// Array of structs.
    Arr(&'static Schema),
    /// Array of INT32.
    I32Arr,
    /// Array of UUID (16 bytes each).
    UuidArr,
    /// Array of strings.
    StrArr,
    /// An embedded struct.
    Struct(&'static Schema),
}

#[derive(Clone, Copy)]
struct Field {
    ty: Ty,
    /// Inclusive version range in which the field is present.
    min: i16,
    max: i16,
}

#[derive(Clone, Copy)]
struct Tagged {
    tag: u32,
    min: i16,
    ty: Ty,
}

struct Schema {
    fields: &'static [Field],
    tagged: &'static [Tagged],
    /// First flexible version (compact strings/arrays, tagged fields); i16::MAX for none.
    flexible_from: i16,
}

const ALL: i16 = i16::MAX;

const fn f(ty: Ty, min: i16, max: i16) -> Field {
    Field { ty, min, max }
}

const NO_TAGS: &[Tagged] = &[];

// ---- Fetch (1), v4-18, flexible from 12.
static FETCH_PARTITION: Schema = Schema {
    fields: &[
        f(Ty::I32, 0, ALL),  // partition
        f(Ty::I32, 9, ALL),  // current_leader_epoch
        f(Ty::I64, 0, ALL),  // fetch_offset
        f(Ty::I32, 12, ALL), // last_fetched_epoch
        f(Ty::I64, 5, ALL),  // log_start_offset
        f(Ty::I32, 0, ALL),  // partition_max_bytes
    ],
    tagged: &[
        Tagged {
            tag: 0,
            min: 17,
            ty: Ty::Uuid, // replica_directory_id
        },
        Tagged {
            tag: 1,
            min: 18,
            ty: Ty::I64, // high_watermark
        },
    ],
    flexible_from: 12,
};
static FETCH_TOPIC: Schema = Schema {
    fields: &[
        f(Ty::Str, 0, 12),                    // topic
        f(Ty::Uuid, 13, ALL),                 // topic_id
        f(Ty::Arr(&FETCH_PARTITION), 0, ALL), // partitions
    ],
    tagged: NO_TAGS,
    flexible_from: 12,
};
static FORGOTTEN_TOPIC: Schema = Schema {
    fields: &[
        f(Ty::Str, 7, 12),     // topic
        f(Ty::Uuid, 13, ALL),  // topic_id
        f(Ty::I32Arr, 7, ALL), // partitions
    ],
    tagged: NO_TAGS,
    flexible_from: 12,
};
static FETCH_REPLICA_STATE: Schema = Schema {
    fields: &[
        f(Ty::I32, 15, ALL), // replica_id
        f(Ty::I64, 15, ALL), // replica_epoch
    ],
    tagged: NO_TAGS,
    flexible_from: 12,
};
static FETCH: Schema = Schema {
    fields: &[
        f(Ty::I32, 0, 14),                    // replica_id
        f(Ty::I32, 0, ALL),                   // max_wait_ms
        f(Ty::I32, 0, ALL),                   // min_bytes
        f(Ty::I32, 0, ALL),                   // max_bytes
        f(Ty::I8, 0, ALL),                    // isolation_level
        f(Ty::I32, 7, ALL),                   // session_id
        f(Ty::I32, 7, ALL),                   // session_epoch
        f(Ty::Arr(&FETCH_TOPIC), 0, ALL),     // topics
        f(Ty::Arr(&FORGOTTEN_TOPIC), 7, ALL), // forgotten_topics_data
        f(Ty::Str, 11, ALL),                  // rack_id
    ],
    tagged: &[
        Tagged {
            tag: 0,
            min: 12,
            ty: Ty::Str, // cluster_id
        },
        Tagged {
            tag: 1,
            min: 15,
            ty: Ty::Struct(&FETCH_REPLICA_STATE), // replica_state
        },
    ],
    flexible_from: 12,
};

// ---- Vote (52), v0-2, all flexible.
static VOTE_PARTITION: Schema = Schema {
    fields: &[
        f(Ty::I32, 0, ALL),  // partition_index
        f(Ty::I32, 0, ALL),  // replica_epoch
        f(Ty::I32, 0, ALL),  // replica_id
        f(Ty::Uuid, 1, ALL), // replica_directory_id
        f(Ty::Uuid, 1, ALL), // voter_directory_id
        f(Ty::I32, 0, ALL),  // last_offset_epoch
        f(Ty::I64, 0, ALL),  // last_offset
        f(Ty::Bool, 2, ALL), // pre_vote
    ],
    tagged: NO_TAGS,
    flexible_from: 0,
};
static VOTE_TOPIC: Schema = Schema {
    fields: &[f(Ty::Str, 0, ALL), f(Ty::Arr(&VOTE_PARTITION), 0, ALL)],
    tagged: NO_TAGS,
    flexible_from: 0,
};
static VOTE: Schema = Schema {
    fields: &[
        f(Ty::Str, 0, ALL),              // cluster_id
        f(Ty::I32, 1, ALL),              // voter_id
        f(Ty::Arr(&VOTE_TOPIC), 0, ALL), // topics
    ],
    tagged: NO_TAGS,
    flexible_from: 0,
};

// ---- BeginQuorumEpoch (53) and EndQuorumEpoch (54), v0-1, flexible from 1.
static LEADER_ENDPOINT: Schema = Schema {
    fields: &[f(Ty::Str, 1, ALL), f(Ty::Str, 1, ALL), f(Ty::U16, 1, ALL)],
    tagged: NO_TAGS,
    flexible_from: 1,
};
static BEGIN_PARTITION: Schema = Schema {
    fields: &[
        f(Ty::I32, 0, ALL),  // partition_index
        f(Ty::Uuid, 1, ALL), // voter_directory_id
        f(Ty::I32, 0, ALL),  // leader_id
        f(Ty::I32, 0, ALL),  // leader_epoch
    ],
    tagged: NO_TAGS,
    flexible_from: 1,
};
static BEGIN_TOPIC: Schema = Schema {
    fields: &[f(Ty::Str, 0, ALL), f(Ty::Arr(&BEGIN_PARTITION), 0, ALL)],
    tagged: NO_TAGS,
    flexible_from: 1,
};
static BEGIN_QUORUM_EPOCH: Schema = Schema {
    fields: &[
        f(Ty::Str, 0, ALL),                   // cluster_id
        f(Ty::I32, 1, ALL),                   // voter_id
        f(Ty::Arr(&BEGIN_TOPIC), 0, ALL),     // topics
        f(Ty::Arr(&LEADER_ENDPOINT), 1, ALL), // leader_endpoints
    ],
    tagged: NO_TAGS,
    flexible_from: 1,
};
static END_CANDIDATE: Schema = Schema {
    fields: &[f(Ty::I32, 1, ALL), f(Ty::Uuid, 1, ALL)],
    tagged: NO_TAGS,
    flexible_from: 1,
};
static END_PARTITION: Schema = Schema {
    fields: &[
        f(Ty::I32, 0, ALL),                 // partition_index
        f(Ty::I32, 0, ALL),                 // leader_id
        f(Ty::I32, 0, ALL),                 // leader_epoch
        f(Ty::I32Arr, 0, 0),                // preferred_successors
        f(Ty::Arr(&END_CANDIDATE), 1, ALL), // preferred_candidates
    ],
    tagged: NO_TAGS,
    flexible_from: 1,
};
static END_TOPIC: Schema = Schema {
    fields: &[f(Ty::Str, 0, ALL), f(Ty::Arr(&END_PARTITION), 0, ALL)],
    tagged: NO_TAGS,
    flexible_from: 1,
};
static END_QUORUM_EPOCH: Schema = Schema {
    fields: &[
        f(Ty::Str, 0, ALL),                   // cluster_id
        f(Ty::Arr(&END_TOPIC), 0, ALL),       // topics
        f(Ty::Arr(&LEADER_ENDPOINT), 1, ALL), // leader_endpoints
    ],
    tagged: NO_TAGS,
    flexible_from: 1,
};

// ---- FetchSnapshot (59), v0-1, all flexible.
static SNAPSHOT_ID: Schema = Schema {
    fields: &[f(Ty::I64, 0, ALL), f(Ty::I32, 0, ALL)],
    tagged: NO_TAGS,
    flexible_from: 0,
};
static SNAPSHOT_PARTITION: Schema = Schema {
    fields: &[
        f(Ty::I32, 0, ALL),                  // partition
        f(Ty::I32, 0, ALL),                  // current_leader_epoch
        f(Ty::Struct(&SNAPSHOT_ID), 0, ALL), // snapshot_id
        f(Ty::I64, 0, ALL),                  // position
    ],
    tagged: &[Tagged {
        tag: 0,
        min: 1,
        ty: Ty::Uuid, // replica_directory_id
    }],
    flexible_from: 0,
};
static SNAPSHOT_TOPIC: Schema = Schema {
    fields: &[f(Ty::Str, 0, ALL), f(Ty::Arr(&SNAPSHOT_PARTITION), 0, ALL)],
    tagged: NO_TAGS,
    flexible_from: 0,
};
static FETCH_SNAPSHOT: Schema = Schema {
    fields: &[
        f(Ty::I32, 0, ALL),                  // replica_id
        f(Ty::I32, 0, ALL),                  // max_bytes
        f(Ty::Arr(&SNAPSHOT_TOPIC), 0, ALL), // topics
    ],
    tagged: &[Tagged {
        tag: 0,
        min: 0,
        ty: Ty::Str, // cluster_id
    }],
    flexible_from: 0,
};

// ---- DescribeQuorum (55), v0-2, all flexible.
static DQ_PARTITION: Schema = Schema {
    fields: &[f(Ty::I32, 0, ALL)],
    tagged: NO_TAGS,
    flexible_from: 0,
};
static DQ_TOPIC: Schema = Schema {
    fields: &[f(Ty::Str, 0, ALL), f(Ty::Arr(&DQ_PARTITION), 0, ALL)],
    tagged: NO_TAGS,
    flexible_from: 0,
};
static DESCRIBE_QUORUM: Schema = Schema {
    fields: &[f(Ty::Arr(&DQ_TOPIC), 0, ALL)],
    tagged: NO_TAGS,
    flexible_from: 0,
};

// ---- AddRaftVoter (80), RemoveRaftVoter (81), UpdateRaftVoter (82), v0, flexible.
static LISTENER: Schema = Schema {
    fields: &[f(Ty::Str, 0, ALL), f(Ty::Str, 0, ALL), f(Ty::U16, 0, ALL)],
    tagged: NO_TAGS,
    flexible_from: 0,
};
static ADD_RAFT_VOTER: Schema = Schema {
    fields: &[
        f(Ty::Str, 0, ALL),            // cluster_id
        f(Ty::I32, 0, ALL),            // timeout_ms
        f(Ty::I32, 0, ALL),            // voter_id
        f(Ty::Uuid, 0, ALL),           // voter_directory_id
        f(Ty::Arr(&LISTENER), 0, ALL), // listeners
    ],
    tagged: NO_TAGS,
    flexible_from: 0,
};
static REMOVE_RAFT_VOTER: Schema = Schema {
    fields: &[f(Ty::Str, 0, ALL), f(Ty::I32, 0, ALL), f(Ty::Uuid, 0, ALL)],
    tagged: NO_TAGS,
    flexible_from: 0,
};
static KRAFT_VERSION_FEATURE: Schema = Schema {
    fields: &[f(Ty::I16, 0, ALL), f(Ty::I16, 0, ALL)],
    tagged: NO_TAGS,
    flexible_from: 0,
};
static UPDATE_RAFT_VOTER: Schema = Schema {
    fields: &[
        f(Ty::Str, 0, ALL),                            // cluster_id
        f(Ty::I32, 0, ALL),                            // current_leader_epoch
        f(Ty::I32, 0, ALL),                            // voter_id
        f(Ty::Uuid, 0, ALL),                           // voter_directory_id
        f(Ty::Arr(&LISTENER), 0, ALL),                 // listeners
        f(Ty::Struct(&KRAFT_VERSION_FEATURE), 0, ALL), // k_raft_version_feature
    ],
    tagged: NO_TAGS,
    flexible_from: 0,
};

// ---- ControllerRegistration (70) v0, flexible (KIP-919).
static CR_LISTENER: Schema = Schema {
    fields: &[
        f(Ty::Str, 0, ALL), // name
        f(Ty::Str, 0, ALL), // host
        f(Ty::U16, 0, ALL), // port
        f(Ty::I16, 0, ALL), // security_protocol
    ],
    tagged: NO_TAGS,
    flexible_from: 0,
};
static CR_FEATURE: Schema = Schema {
    fields: &[
        f(Ty::Str, 0, ALL), // name
        f(Ty::I16, 0, ALL), // min_supported_version
        f(Ty::I16, 0, ALL), // max_supported_version
    ],
    tagged: NO_TAGS,
    flexible_from: 0,
};
static CONTROLLER_REGISTRATION: Schema = Schema {
    fields: &[
        f(Ty::I32, 0, ALL),               // controller_id
        f(Ty::Uuid, 0, ALL),              // incarnation_id
        f(Ty::Bool, 0, ALL),              // zk_migration_ready
        f(Ty::Arr(&CR_LISTENER), 0, ALL), // listeners
        f(Ty::Arr(&CR_FEATURE), 0, ALL),  // features
    ],
    tagged: NO_TAGS,
    flexible_from: 0,
};

// ---- BrokerRegistration (62) v0-4, BrokerHeartbeat (63) v0-1 (v2 as v1) and
// UnregisterBroker (64) v0, all flexible.
static BROKER_REGISTRATION: Schema = Schema {
    fields: &[
        f(Ty::I32, 0, ALL),               // broker_id
        f(Ty::Str, 0, ALL),               // cluster_id
        f(Ty::Uuid, 0, ALL),              // incarnation_id
        f(Ty::Arr(&CR_LISTENER), 0, ALL), // listeners (same layout)
        f(Ty::Arr(&CR_FEATURE), 0, ALL),  // features (same layout)
        f(Ty::Str, 0, ALL),               // rack
        f(Ty::Bool, 1, ALL),              // is_migrating_zk_broker
        f(Ty::UuidArr, 2, ALL),           // log_dirs
        f(Ty::I64, 3, ALL),               // previous_broker_epoch
    ],
    tagged: NO_TAGS,
    flexible_from: 0,
};
static BROKER_HEARTBEAT: Schema = Schema {
    fields: &[
        f(Ty::I32, 0, ALL),  // broker_id
        f(Ty::I64, 0, ALL),  // broker_epoch
        f(Ty::I64, 0, ALL),  // current_metadata_offset
        f(Ty::Bool, 0, ALL), // want_fence
        f(Ty::Bool, 0, ALL), // want_shut_down
    ],
    tagged: &[
        Tagged {
            tag: 0,
            min: 1,
            ty: Ty::UuidArr, // offline_log_dirs
        },
        // Tag 1, cordoned_log_dirs (Kafka 4.4, v2), is not listed: v2 is
        // walked and decoded as v1 (`codec::body_version`), where
        // `kafka-protocol` keeps tag 1's bytes raw, skipped by their size.
    ],
    flexible_from: 0,
};
static UNREGISTER_BROKER: Schema = Schema {
    fields: &[f(Ty::I32, 0, ALL)], // broker_id
    tagged: NO_TAGS,
    flexible_from: 0,
};

// ---- Envelope (58) v0, flexible: request_data, request_principal (nullable),
// client_host_address; compact bytes are laid out as compact strings.
static ENVELOPE: Schema = Schema {
    fields: &[f(Ty::Str, 0, ALL), f(Ty::Str, 0, ALL), f(Ty::Str, 0, ALL)],
    tagged: NO_TAGS,
    flexible_from: 0,
};

// ---- DescribeCluster (60) v0-2 and ApiVersions (18) v0-4: no arrays.
static DESCRIBE_CLUSTER: Schema = Schema {
    fields: &[f(Ty::Bool, 0, ALL), f(Ty::I8, 1, ALL), f(Ty::Bool, 2, ALL)],
    tagged: NO_TAGS,
    flexible_from: 0,
};
static API_VERSIONS: Schema = Schema {
    fields: &[f(Ty::Str, 3, ALL), f(Ty::Str, 3, ALL)],
    tagged: NO_TAGS,
    flexible_from: 3,
};

fn schema(api_key: ApiKey) -> Option<&'static Schema> {
    Some(match api_key {
        ApiKey::Fetch => &FETCH,
        ApiKey::Vote => &VOTE,
        ApiKey::BeginQuorumEpoch => &BEGIN_QUORUM_EPOCH,
        ApiKey::EndQuorumEpoch => &END_QUORUM_EPOCH,
        ApiKey::FetchSnapshot => &FETCH_SNAPSHOT,
        ApiKey::DescribeQuorum => &DESCRIBE_QUORUM,
        ApiKey::AddRaftVoter => &ADD_RAFT_VOTER,
        ApiKey::RemoveRaftVoter => &REMOVE_RAFT_VOTER,
        ApiKey::UpdateRaftVoter => &UPDATE_RAFT_VOTER,
        ApiKey::DescribeCluster => &DESCRIBE_CLUSTER,
        ApiKey::ApiVersions => &API_VERSIONS,
        ApiKey::ControllerRegistration => &CONTROLLER_REGISTRATION,
        ApiKey::BrokerRegistration => &BROKER_REGISTRATION,
        ApiKey::BrokerHeartbeat => &BROKER_HEARTBEAT,
        ApiKey::UnregisterBroker => &UNREGISTER_BROKER,
        ApiKey::Envelope => &ENVELOPE,
        ApiKey::CreateAcls => &CREATE_ACLS,
        ApiKey::DeleteAcls => &DELETE_ACLS,
        ApiKey::DescribeAcls => &ACL_FILTER,
        ApiKey::AllocateProducerIds => &ALLOCATE_PRODUCER_IDS,
        ApiKey::IncrementalAlterConfigs => &INCREMENTAL_ALTER_CONFIGS,
        ApiKey::AlterConfigs => &ALTER_CONFIGS,
        ApiKey::DescribeConfigs => &DESCRIBE_CONFIGS,
        ApiKey::AssignReplicasToDirs => &ASSIGN_REPLICAS_TO_DIRS,
        ApiKey::CreateTopics => &CREATE_TOPICS,
        ApiKey::DeleteTopics => &DELETE_TOPICS,
        ApiKey::CreatePartitions => &CREATE_PARTITIONS,
        ApiKey::AlterPartition => &ALTER_PARTITION,
        ApiKey::ElectLeaders => &ELECT_LEADERS,
        ApiKey::UpdateFeatures => &UPDATE_FEATURES,
        _ => return None,
    })
}

struct Walker<'a> {
    buf: &'a [u8],
    pos: usize,
    version: i16,
}

type Check = Result<(), String>;

impl Walker<'_> {
    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn skip(&mut self, n: usize, what: &str) -> Check {
        if n > self.remaining() {
            return Err(format!(
                "{what} needs {n} bytes but {} are left",
                self.remaining()
            ));
        }
        self.pos += n;
        Ok(())
    }

    fn take<const N: usize>(&mut self, what: &str) -> Result<[u8; N], String> {
        let start = self.pos;
        self.skip(N, what)?;
        let mut out = [0u8; N];
        out.copy_from_slice(&self.buf[start..start + N]);
        Ok(out)
    }

    /// UNSIGNED_VARINT as `kafka-protocol` reads it: at most 5 bytes.
    fn uvarint(&mut self, what: &str) -> Result<u32, String> {
        let mut value: u32 = 0;
        for i in 0..5 {
            let [b] = self.take::<1>(what)?;
            value |= (u32::from(b) & 0x7F).wrapping_shl(i * 7);
            if b < 0x80 {
                break;
            }
        }
        Ok(value)
    }

    /// Reads an array count and checks it fits in the bytes left (each
    /// element takes at least `min_element_bytes`); `None` for a null array.
    fn count(&mut self, flexible: bool, min_element_bytes: usize) -> Result<Option<usize>, String> {
        let count = if flexible {
            match self.uvarint("array length")? {
                0 => return Ok(None),
                n => (n - 1) as usize,
            }
        } else {
            let n = i32::from_be_bytes(self.take::<4>("array length")?);
            if n < 0 {
                return Ok(None);
            }
            n as usize
        };
        let left = self.remaining();
        if count.saturating_mul(min_element_bytes) > left {
            return Err(format!(
                "array of {count} elements cannot fit in the {left} bytes left"
            ));
        }
        Ok(Some(count))
    }

    fn value(&mut self, ty: Ty, flexible: bool) -> Check {
        match ty {
            Ty::I8 | Ty::Bool => self.skip(1, "int8"),
            Ty::I16 | Ty::U16 => self.skip(2, "int16"),
            Ty::I32 => self.skip(4, "int32"),
            Ty::I64 => self.skip(8, "int64"),
            Ty::Uuid => self.skip(16, "uuid"),
            Ty::Str => {
                let len = if flexible {
                    (self.uvarint("string length")? as usize).saturating_sub(1)
                } else {
                    usize::try_from(i16::from_be_bytes(self.take::<2>("string length")?))
                        .unwrap_or(0)
                };
                self.skip(len, "string")
            }
            Ty::I32Arr => {
                let n = self.count(flexible, 4)?.unwrap_or(0);
                self.skip(n * 4, "int32 array")
            }
            Ty::UuidArr => {
                let n = self.count(flexible, 16)?.unwrap_or(0);
                self.skip(n * 16, "uuid array")
            }
            Ty::StrArr => {
                let n = self.count(flexible, 1)?.unwrap_or(0);
                for _ in 0..n {
                    self.value(Ty::Str, flexible)?;
                }
                Ok(())
            }
            Ty::Arr(schema) => {
                let n = self.count(flexible, 1)?.unwrap_or(0);
                for _ in 0..n {
                    self.structure(schema)?;
                }
                Ok(())
            }
            Ty::Struct(schema) => self.structure(schema),
        }
    }

    fn structure(&mut self, schema: &Schema) -> Check {
        let flexible = self.version >= schema.flexible_from;
        for field in schema.fields {
            if (field.min..=field.max).contains(&self.version) {
                self.value(field.ty, flexible)?;
            }
        }
        if flexible {
            let tags = self.uvarint("tagged field count")?;
            for _ in 0..tags {
                let tag = self.uvarint("tag")?;
                let size = self.uvarint("tagged field size")? as usize;
                match schema
                    .tagged
                    .iter()
                    .find(|t| t.tag == tag && self.version >= t.min)
                {
                    Some(known) => self.value(known.ty, flexible)?,
                    None => self.skip(size, "tagged field")?,
                }
            }
        }
        Ok(())
    }
}

/// Checks that no array in the `api_key` v`api_version` request body `body`
/// announces more elements than the bytes left could hold. Errors: a
/// lower-case reason naming the impossible count. Bodies of apis we do not
/// serve are not checked (they are never decoded).
pub(super) fn check_request_body(
    api_key: ApiKey,
    api_version: i16,
    body: &[u8],
) -> Result<(), String> {
    let Some(schema) = schema(api_key) else {
        return Ok(());
    };
    let mut walker = Walker {
        buf: body,
        pos: 0,
        version: api_version,
    };
    walker.structure(schema)
}
