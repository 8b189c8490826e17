//! Request schemas of the apis brokers and admin tools send a controller
//! (topics, configs, producer ids, directories, ACLs), for the walker in
//! [`super`]: field order from `kafka-protocol`'s generated decoders, version
//! ranges from Kafka 4.4's JSON schemas.

use super::{ALL, NO_TAGS, Schema, Ty, f};

// ---- CreateTopics (19) v2-7 (flexible from 5), DeleteTopics (20) v1-6
// (from 4), CreatePartitions (37) v0-3 (from 2), AlterPartition (56) v2-3
// (always), ElectLeaders (43) v0-2 (from 2); Kafka 4.4's schemas.
pub(super) static CREATABLE_REPLICA_ASSIGNMENT: Schema = Schema {
    fields: &[f(Ty::I32, 0, ALL), f(Ty::I32Arr, 0, ALL)], // partition_index, broker_ids
    tagged: NO_TAGS,
    flexible_from: 5,
};
pub(super) static CREATABLE_TOPIC_CONFIG: Schema = Schema {
    fields: &[f(Ty::Str, 0, ALL), f(Ty::Str, 0, ALL)], // name, value
    tagged: NO_TAGS,
    flexible_from: 5,
};
pub(super) static CREATABLE_TOPIC: Schema = Schema {
    fields: &[
        f(Ty::Str, 0, ALL),                                // name
        f(Ty::I32, 0, ALL),                                // num_partitions
        f(Ty::I16, 0, ALL),                                // replication_factor
        f(Ty::Arr(&CREATABLE_REPLICA_ASSIGNMENT), 0, ALL), // assignments
        f(Ty::Arr(&CREATABLE_TOPIC_CONFIG), 0, ALL),       // configs
    ],
    tagged: NO_TAGS,
    flexible_from: 5,
};
pub(super) static CREATE_TOPICS: Schema = Schema {
    fields: &[
        f(Ty::Arr(&CREATABLE_TOPIC), 0, ALL), // topics
        f(Ty::I32, 0, ALL),                   // timeout_ms
        f(Ty::Bool, 1, ALL),                  // validate_only
    ],
    tagged: NO_TAGS,
    flexible_from: 5,
};
pub(super) static DELETE_TOPIC_STATE: Schema = Schema {
    fields: &[f(Ty::Str, 6, ALL), f(Ty::Uuid, 6, ALL)], // name, topic_id
    tagged: NO_TAGS,
    flexible_from: 4,
};
pub(super) static DELETE_TOPICS: Schema = Schema {
    fields: &[
        f(Ty::Arr(&DELETE_TOPIC_STATE), 6, ALL), // topics
        f(Ty::StrArr, 0, 5),                     // topic_names
        f(Ty::I32, 0, ALL),                      // timeout_ms
    ],
    tagged: NO_TAGS,
    flexible_from: 4,
};
pub(super) static CREATE_PARTITIONS_ASSIGNMENT: Schema = Schema {
    fields: &[f(Ty::I32Arr, 0, ALL)], // broker_ids
    tagged: NO_TAGS,
    flexible_from: 2,
};
pub(super) static CREATE_PARTITIONS_TOPIC: Schema = Schema {
    fields: &[
        f(Ty::Str, 0, ALL),                                // name
        f(Ty::I32, 0, ALL),                                // count
        f(Ty::Arr(&CREATE_PARTITIONS_ASSIGNMENT), 0, ALL), // assignments
    ],
    tagged: NO_TAGS,
    flexible_from: 2,
};
pub(super) static CREATE_PARTITIONS: Schema = Schema {
    fields: &[
        f(Ty::Arr(&CREATE_PARTITIONS_TOPIC), 0, ALL), // topics
        f(Ty::I32, 0, ALL),                           // timeout_ms
        f(Ty::Bool, 0, ALL),                          // validate_only
    ],
    tagged: NO_TAGS,
    flexible_from: 2,
};
pub(super) static AP_BROKER_STATE: Schema = Schema {
    fields: &[f(Ty::I32, 3, ALL), f(Ty::I64, 3, ALL)], // broker_id, broker_epoch
    tagged: NO_TAGS,
    flexible_from: 0,
};
pub(super) static AP_PARTITION: Schema = Schema {
    fields: &[
        f(Ty::I32, 0, ALL),                   // partition_index
        f(Ty::I32, 0, ALL),                   // leader_epoch
        f(Ty::I32Arr, 0, 2),                  // new_isr
        f(Ty::Arr(&AP_BROKER_STATE), 3, ALL), // new_isr_with_epochs
        f(Ty::I8, 1, ALL),                    // leader_recovery_state
        f(Ty::I32, 0, ALL),                   // partition_epoch
    ],
    tagged: NO_TAGS,
    flexible_from: 0,
};
pub(super) static AP_TOPIC: Schema = Schema {
    fields: &[
        f(Ty::Str, 0, 1),                  // topic_name
        f(Ty::Uuid, 2, ALL),               // topic_id
        f(Ty::Arr(&AP_PARTITION), 0, ALL), // partitions
    ],
    tagged: NO_TAGS,
    flexible_from: 0,
};
pub(super) static ALTER_PARTITION: Schema = Schema {
    fields: &[
        f(Ty::I32, 0, ALL),            // broker_id
        f(Ty::I64, 0, ALL),            // broker_epoch
        f(Ty::Arr(&AP_TOPIC), 0, ALL), // topics
    ],
    tagged: NO_TAGS,
    flexible_from: 0,
};
pub(super) static EL_TOPIC_PARTITIONS: Schema = Schema {
    fields: &[f(Ty::Str, 0, ALL), f(Ty::I32Arr, 0, ALL)], // topic, partitions
    tagged: NO_TAGS,
    flexible_from: 2,
};
pub(super) static ELECT_LEADERS: Schema = Schema {
    fields: &[
        f(Ty::I8, 1, ALL),                        // election_type
        f(Ty::Arr(&EL_TOPIC_PARTITIONS), 0, ALL), // topic_partitions
        f(Ty::I32, 0, ALL),                       // timeout_ms
    ],
    tagged: NO_TAGS,
    flexible_from: 2,
};

// ---- AllocateProducerIds (67) v0, flexible: no arrays.
pub(super) static ALLOCATE_PRODUCER_IDS: Schema = Schema {
    fields: &[
        f(Ty::I32, 0, ALL), // broker_id
        f(Ty::I64, 0, ALL), // broker_epoch
    ],
    tagged: NO_TAGS,
    flexible_from: 0,
};

// ---- IncrementalAlterConfigs (44) v0-1, flexible from 1; AlterConfigs
// (33) v0-2, flexible from 2.
pub(super) static IAC_CONFIG: Schema = Schema {
    fields: &[
        f(Ty::Str, 0, ALL), // name
        f(Ty::I8, 0, ALL),  // config_operation
        f(Ty::Str, 0, ALL), // value
    ],
    tagged: NO_TAGS,
    flexible_from: 1,
};
pub(super) static IAC_RESOURCE: Schema = Schema {
    fields: &[
        f(Ty::I8, 0, ALL),               // resource_type
        f(Ty::Str, 0, ALL),              // resource_name
        f(Ty::Arr(&IAC_CONFIG), 0, ALL), // configs
    ],
    tagged: NO_TAGS,
    flexible_from: 1,
};
pub(super) static INCREMENTAL_ALTER_CONFIGS: Schema = Schema {
    fields: &[
        f(Ty::Arr(&IAC_RESOURCE), 0, ALL), // resources
        f(Ty::Bool, 0, ALL),               // validate_only
    ],
    tagged: NO_TAGS,
    flexible_from: 1,
};
pub(super) static AC_CONFIG: Schema = Schema {
    fields: &[
        f(Ty::Str, 0, ALL), // name
        f(Ty::Str, 0, ALL), // value
    ],
    tagged: NO_TAGS,
    flexible_from: 2,
};
pub(super) static AC_RESOURCE: Schema = Schema {
    fields: &[
        f(Ty::I8, 0, ALL),              // resource_type
        f(Ty::Str, 0, ALL),             // resource_name
        f(Ty::Arr(&AC_CONFIG), 0, ALL), // configs
    ],
    tagged: NO_TAGS,
    flexible_from: 2,
};
pub(super) static ALTER_CONFIGS: Schema = Schema {
    fields: &[
        f(Ty::Arr(&AC_RESOURCE), 0, ALL), // resources
        f(Ty::Bool, 0, ALL),              // validate_only
    ],
    tagged: NO_TAGS,
    flexible_from: 2,
};

// ---- AssignReplicasToDirs (73) v0, flexible.
pub(super) static ARD_PARTITION: Schema = Schema {
    fields: &[f(Ty::I32, 0, ALL)], // partition_index
    tagged: NO_TAGS,
    flexible_from: 0,
};
pub(super) static ARD_TOPIC: Schema = Schema {
    fields: &[
        f(Ty::Uuid, 0, ALL),                // topic_id
        f(Ty::Arr(&ARD_PARTITION), 0, ALL), // partitions
    ],
    tagged: NO_TAGS,
    flexible_from: 0,
};
pub(super) static ARD_DIRECTORY: Schema = Schema {
    fields: &[
        f(Ty::Uuid, 0, ALL),            // id
        f(Ty::Arr(&ARD_TOPIC), 0, ALL), // topics
    ],
    tagged: NO_TAGS,
    flexible_from: 0,
};
pub(super) static ASSIGN_REPLICAS_TO_DIRS: Schema = Schema {
    fields: &[
        f(Ty::I32, 0, ALL),                 // broker_id
        f(Ty::I64, 0, ALL),                 // broker_epoch
        f(Ty::Arr(&ARD_DIRECTORY), 0, ALL), // directories
    ],
    tagged: NO_TAGS,
    flexible_from: 0,
};

// ---- DescribeConfigs (32) v1-4, flexible from 4.
pub(super) static DC_RESOURCE: Schema = Schema {
    fields: &[
        f(Ty::I8, 0, ALL),     // resource_type
        f(Ty::Str, 0, ALL),    // resource_name
        f(Ty::StrArr, 0, ALL), // configuration_keys
    ],
    tagged: NO_TAGS,
    flexible_from: 4,
};
pub(super) static DESCRIBE_CONFIGS: Schema = Schema {
    fields: &[
        f(Ty::Arr(&DC_RESOURCE), 0, ALL), // resources
        f(Ty::Bool, 1, ALL),              // include_synonyms
        f(Ty::Bool, 3, ALL),              // include_documentation
    ],
    tagged: NO_TAGS,
    flexible_from: 4,
};

// ---- CreateAcls (30), DeleteAcls (31), DescribeAcls (29) v1-3, flexible
// from 2; the pattern type is there from v1, so in every version we serve.
pub(super) static ACL_CREATION: Schema = Schema {
    fields: &[
        f(Ty::I8, 0, ALL),  // resource_type
        f(Ty::Str, 0, ALL), // resource_name
        f(Ty::I8, 1, ALL),  // resource_pattern_type
        f(Ty::Str, 0, ALL), // principal
        f(Ty::Str, 0, ALL), // host
        f(Ty::I8, 0, ALL),  // operation
        f(Ty::I8, 0, ALL),  // permission_type
    ],
    tagged: NO_TAGS,
    flexible_from: 2,
};
pub(super) static CREATE_ACLS: Schema = Schema {
    fields: &[f(Ty::Arr(&ACL_CREATION), 0, ALL)],
    tagged: NO_TAGS,
    flexible_from: 2,
};
/// DeleteAclsFilter, and the body of DescribeAcls: the same fields.
pub(super) static ACL_FILTER: Schema = Schema {
    fields: &[
        f(Ty::I8, 0, ALL),  // resource_type_filter
        f(Ty::Str, 0, ALL), // resource_name_filter (nullable)
        f(Ty::I8, 1, ALL),  // pattern_type_filter
        f(Ty::Str, 0, ALL), // principal_filter (nullable)
        f(Ty::Str, 0, ALL), // host_filter (nullable)
        f(Ty::I8, 0, ALL),  // operation
        f(Ty::I8, 0, ALL),  // permission_type
    ],
    tagged: NO_TAGS,
    flexible_from: 2,
};
pub(super) static DELETE_ACLS: Schema = Schema {
    fields: &[f(Ty::Arr(&ACL_FILTER), 0, ALL)],
    tagged: NO_TAGS,
    flexible_from: 2,
};

// ---- UpdateFeatures (57) v0-1, flexible (Kafka 4.4's schema; issue 22).
pub(super) static FEATURE_UPDATE_KEY: Schema = Schema {
    fields: &[
        f(Ty::Str, 0, ALL), // feature
        f(Ty::I16, 0, ALL), // max_version_level
        f(Ty::Bool, 0, 0),  // allow_downgrade
        f(Ty::I8, 1, ALL),  // upgrade_type
    ],
    tagged: NO_TAGS,
    flexible_from: 0,
};
pub(super) static UPDATE_FEATURES: Schema = Schema {
    fields: &[
        f(Ty::I32, 0, ALL),                      // timeout_ms
        f(Ty::Arr(&FEATURE_UPDATE_KEY), 0, ALL), // feature_updates
        f(Ty::Bool, 1, ALL),                     // validate_only
    ],
    tagged: NO_TAGS,
    flexible_from: 0,
};
