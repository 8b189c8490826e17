//! DeleteTopics (20) on the speculative topics: Kafka's
//! `ControllerApis.deleteTopics` checks (names and ids, duplicates) and
//! `ReplicationControlManager.deleteTopics` (a RemoveTopicRecord per topic,
//! in one batch). Owns these checks; it must not touch the log.

use std::collections::BTreeSet;

use kafka_protocol::{
    error::ResponseError,
    messages::{
        DeleteTopicsRequest, DeleteTopicsResponse, TopicName,
        delete_topics_response::DeletableTopicResult,
    },
    protocol::StrBytes,
};
use uuid::Uuid;

use super::{
    cluster_control::Decision,
    replication_control::{MAX_RECORDS_PER_USER_OP, ReplicationControl, err_message, too_large},
};

impl ReplicationControl {
    /// DeleteTopics (20), as Kafka's `ControllerApis.deleteTopics` and
    /// `ReplicationControlManager.deleteTopics`: INVALID_REQUEST for an
    /// entry with neither or both of name and id, for a name or id given
    /// twice, and for a name naming an id also given; UNKNOWN_TOPIC_OR_PARTITION
    /// for an unknown name, UNKNOWN_TOPIC_ID for an unknown id; otherwise a
    /// RemoveTopicRecord per topic, all in one batch.
    pub fn delete_topics(
        &mut self,
        request: &DeleteTopicsRequest,
    ) -> Decision<DeleteTopicsResponse> {
        let mut answers = Vec::new();
        let answer =
            |name: Option<&str>, id: Uuid, error: Option<(ResponseError, Option<String>)>| {
                let mut r = DeletableTopicResult::default()
                    .with_name(name.map(|n| TopicName(StrBytes::from_string(n.to_owned()))))
                    .with_topic_id(id);
                if let Some((e, m)) = error {
                    let (code, message) = err_message(e, m);
                    r = r.with_error_code(code).with_error_message(message);
                }
                r
            };
        let mut names: Vec<String> = Vec::new();
        let mut dup_names = BTreeSet::new();
        let mut ids: Vec<Uuid> = Vec::new();
        let mut dup_ids = BTreeSet::new();
        let mut add_name = |n: String, names: &mut Vec<String>| {
            if dup_names.contains(&n) || names.contains(&n) {
                names.retain(|x| *x != n);
                dup_names.insert(n);
            } else {
                names.push(n);
            }
        };
        for n in &request.topic_names {
            add_name(n.to_string(), &mut names);
        }
        for t in &request.topics {
            match (&t.name, t.topic_id.is_nil()) {
                (None, true) => answers.push(answer(
                    None,
                    Uuid::nil(),
                    Some((
                        ResponseError::InvalidRequest,
                        Some("Neither topic name nor id were specified.".into()),
                    )),
                )),
                (None, false) => {
                    if dup_ids.contains(&t.topic_id) || ids.contains(&t.topic_id) {
                        ids.retain(|x| *x != t.topic_id);
                        dup_ids.insert(t.topic_id);
                    } else {
                        ids.push(t.topic_id);
                    }
                }
                (Some(n), true) => add_name(n.to_string(), &mut names),
                (Some(n), false) => answers.push(answer(
                    Some(n.as_str()),
                    t.topic_id,
                    Some((
                        ResponseError::InvalidRequest,
                        Some("You may not specify both topic name and topic id.".into()),
                    )),
                )),
            }
        }
        for n in &dup_names {
            answers.push(answer(
                Some(n),
                Uuid::nil(),
                Some((
                    ResponseError::InvalidRequest,
                    Some("Duplicate topic name.".into()),
                )),
            ));
        }
        for id in &dup_ids {
            answers.push(answer(
                None,
                *id,
                Some((
                    ResponseError::InvalidRequest,
                    Some("Duplicate topic id.".into()),
                )),
            ));
        }
        let mut to_delete: Vec<(Uuid, String)> = Vec::new();
        for id in ids {
            match self.topics.get(&id) {
                Some(t) => to_delete.push((id, t.name.clone())),
                None => answers.push(answer(
                    None,
                    id,
                    Some((ResponseError::UnknownTopicId, None)),
                )),
            }
        }
        for n in names {
            match self.topics.by_name(&n).map(|t| t.id) {
                None => answers.push(answer(
                    Some(&n),
                    Uuid::nil(),
                    Some((ResponseError::UnknownTopicOrPartition, None)),
                )),
                Some(id) if to_delete.iter().any(|(i, _)| *i == id) => {
                    to_delete.retain(|(i, _)| *i != id);
                    answers.push(answer(
                        Some(&n),
                        id,
                        Some((
                            ResponseError::InvalidRequest,
                            Some(
                                "The provided topic name maps to an ID that was already supplied."
                                    .into(),
                            ),
                        )),
                    ));
                }
                Some(id) => to_delete.push((id, n)),
            }
        }
        if to_delete.len() > MAX_RECORDS_PER_USER_OP {
            let (e, m) = too_large();
            let answers = to_delete
                .iter()
                .map(|(id, name)| answer(Some(name), *id, Some((e, Some(m.clone())))))
                .collect();
            return Decision {
                records: Vec::new(),
                answer: DeleteTopicsResponse::default().with_responses(answers),
            };
        }
        let mut records = Vec::new();
        for (id, name) in to_delete {
            records
                .push(crate::metadata::records::RemoveTopicRecord { topic_id: id }.encode_framed());
            answers.push(answer(Some(&name), id, None));
        }
        self.apply(&records);
        Decision {
            records,
            answer: DeleteTopicsResponse::default().with_responses(answers),
        }
    }
}
