//! `dump-log`'s text of the topic records (2, 3, 5, 9, 28): each field by
//! name, topic ids in Kafka's base64 form, as `kafka-dump-log
//! --cluster-metadata-decoder` names them. Owns the text only.

use crate::metadata::records::{
    CLEAR_ELR_RECORD_API_KEY, ClearElrRecord, PARTITION_CHANGE_RECORD_API_KEY,
    PARTITION_RECORD_API_KEY, PartitionChangeRecord, PartitionRecord, REMOVE_TOPIC_RECORD_API_KEY,
    RecordsError, RemoveTopicRecord, TopicRecord,
};

fn ids(v: &[i32]) -> String {
    v.iter().map(i32::to_string).collect::<Vec<_>>().join(",")
}

fn opt_ids(v: &Option<Vec<i32>>) -> Option<String> {
    v.as_ref().map(|v| format!("[{}]", ids(v)))
}

fn uuid(u: uuid::Uuid) -> String {
    kraft_common::kafka_uuid::to_string(u)
}

fn fields(key: u32, version: u32, message: &[u8]) -> Result<String, RecordsError> {
    Ok(match key {
        PARTITION_RECORD_API_KEY => {
            let r = PartitionRecord::decode_message(message, version)?;
            format!(
                "topic_id={} partition_id={} replicas=[{}] isr=[{}] removing_replicas=[{}] adding_replicas=[{}] leader={} leader_recovery_state={} leader_epoch={} partition_epoch={} directories=[{}] eligible_leader_replicas=[{}] last_known_elr=[{}]",
                uuid(r.topic_id),
                r.partition_id,
                ids(&r.replicas),
                ids(&r.isr),
                ids(&r.removing_replicas),
                ids(&r.adding_replicas),
                r.leader,
                r.leader_recovery_state,
                r.leader_epoch,
                r.partition_epoch,
                r.directories
                    .iter()
                    .map(|d| uuid(*d))
                    .collect::<Vec<_>>()
                    .join(","),
                ids(&r.eligible_leader_replicas),
                ids(&r.last_known_elr),
            )
        }
        PARTITION_CHANGE_RECORD_API_KEY => {
            let r = PartitionChangeRecord::decode_message(message, version)?;
            let mut out = format!(
                "topic_id={} partition_id={}",
                uuid(r.topic_id),
                r.partition_id
            );
            for (name, v) in [
                ("isr", opt_ids(&r.isr)),
                ("replicas", opt_ids(&r.replicas)),
                ("removing_replicas", opt_ids(&r.removing_replicas)),
                ("adding_replicas", opt_ids(&r.adding_replicas)),
                (
                    "eligible_leader_replicas",
                    opt_ids(&r.eligible_leader_replicas),
                ),
                ("last_known_elr", opt_ids(&r.last_known_elr)),
            ] {
                if let Some(v) = v {
                    out.push_str(&format!(" {name}={v}"));
                }
            }
            if r.leader != crate::metadata::records::NO_LEADER_CHANGE {
                out.push_str(&format!(" leader={}", r.leader));
            }
            if r.leader_recovery_state != -1 {
                out.push_str(&format!(
                    " leader_recovery_state={}",
                    r.leader_recovery_state
                ));
            }
            if let Some(d) = &r.directories {
                let d = d.iter().map(|d| uuid(*d)).collect::<Vec<_>>().join(",");
                out.push_str(&format!(" directories=[{d}]"));
            }
            out
        }
        REMOVE_TOPIC_RECORD_API_KEY => {
            format!(
                "topic_id={}",
                uuid(RemoveTopicRecord::decode_message(message)?.topic_id)
            )
        }
        CLEAR_ELR_RECORD_API_KEY => format!(
            "topic_name={:?}",
            ClearElrRecord::decode_message(message)?.topic_name
        ),
        _ => {
            let r = TopicRecord::decode_message(message)?;
            format!("name={} topic_id={}", r.name, uuid(r.topic_id))
        }
    })
}

/// A topic record (for which `metadata::topics::is_topic_record` holds) by
/// field, or its bytes when it does not decode.
pub fn topic_text(name: &str, key: u32, version: u32, message: &[u8]) -> String {
    match fields(key, version, message) {
        Ok(t) => format!("{name}({key}) version={version} {t}"),
        Err(e) => format!(
            "{name}({key}) undecodable ({e}) bytes={}",
            message
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::records::FramedRecord;

    #[test]
    fn topic_records_are_named_field_by_field() {
        let id = uuid::Uuid::from_u128(1);
        let mut change = PartitionChangeRecord::new(id, 2);
        change.isr = Some(vec![1, 3]);
        change.leader = 3;
        let framed = FramedRecord::decode(&change.encode_framed(2)).expect("frame");
        let text = topic_text("PARTITION_CHANGE_RECORD", 5, 2, &framed.message);
        assert!(text.contains("partition_id=2 isr=[1,3] leader=3"), "{text}");
        let topic = TopicRecord {
            name: "foo".into(),
            topic_id: id,
        }
        .encode_framed();
        let framed = FramedRecord::decode(&topic).expect("frame");
        let text = topic_text("TOPIC_RECORD", 2, 0, &framed.message);
        assert!(
            text.starts_with("TOPIC_RECORD(2) version=0 name=foo topic_id="),
            "{text}"
        );
        let text = topic_text("PARTITION_RECORD", 3, 0, &[0, 1]);
        assert!(text.contains("undecodable"), "{text}");
    }
}
