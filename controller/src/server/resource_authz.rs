//! Authorization of the apis whose items are topics or config resources, as
//! Kafka's `ControllerApis` checks them: each item on its own resource, so a
//! principal with ACLs on some topics (literal or prefixed) may act on those
//! and gets an error for the others, in one request.
//!
//! | api | an item is allowed with | a refused item gets |
//! |---|---|---|
//! | CreateTopics | CREATE on CLUSTER, or on the TOPIC | TOPIC_AUTHORIZATION_FAILED, "Authorization failed."; a created topic without DESCRIBE_CONFIGS on it is answered without its configs, `topicConfigErrorCode` TOPIC_AUTHORIZATION_FAILED |
//! | DeleteTopics (by name) | DELETE on CLUSTER, or on the TOPIC | TOPIC_AUTHORIZATION_FAILED |
//! | DeleteTopics (by id) | DELETE on CLUSTER | TOPIC_AUTHORIZATION_FAILED (Kafka resolves the id and checks its name; this layer has no image, so only the cluster grant lets an id through: stricter, never looser) |
//! | CreatePartitions | ALTER on the TOPIC (Kafka has no cluster grant here) | TOPIC_AUTHORIZATION_FAILED |
//! | IncrementalAlterConfigs, AlterConfigs | ALTER_CONFIGS on CLUSTER (BROKER, BROKER_LOGGER, CLIENT_METRICS), on the TOPIC, on the GROUP | CLUSTER_/TOPIC_/GROUP_AUTHORIZATION_FAILED |
//! | DescribeConfigs | DESCRIBE_CONFIGS likewise | likewise, no configs |
//!
//! [`vet`] splits a request into the part to dispatch (`None` when nothing
//! is allowed) and the refused items; [`Vetted::answer`] adds the refused
//! items' results to the event loop's answer. Super users and
//! `allow.everyone.if.no.acl.found` are the authorizer's
//! ([`Authorizer::authorize`]). A name given twice is passed on untouched
//! (the controller answers it INVALID_REQUEST, as Kafka does before any
//! check), and so is an unknown resource type (INVALID_REQUEST too).
//! Owns these decisions; it must not read the image.

use std::collections::HashSet;

use kafka_protocol::{
    messages::{
        AlterConfigsResponse, CreatePartitionsResponse, CreateTopicsResponse, DeleteTopicsResponse,
        DescribeConfigsResponse, IncrementalAlterConfigsResponse, RequestKind, ResponseKind,
        TopicName, alter_configs_response, create_partitions_response, create_topics_response,
        delete_topics_response, describe_configs_response, incremental_alter_configs_response,
    },
    protocol::StrBytes,
};
use uuid::Uuid;

use super::authz::{Authorizer, CLUSTER_AUTHORIZATION_FAILED};
use crate::{
    acl::{self, Action},
    wire::{Api, DecodedRequest, Request},
};

/// Kafka's `TOPIC_AUTHORIZATION_FAILED`.
pub const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
/// Kafka's `GROUP_AUTHORIZATION_FAILED`.
pub const GROUP_AUTHORIZATION_FAILED: i16 = 30;

/// Kafka's `ConfigResource.Type` codes, as the rest of the controller
/// names them.
mod config_type {
    pub use crate::{
        metadata::{
            configs::CONFIG_RESOURCE_TYPE_TOPIC as TOPIC,
            records::CONFIG_RESOURCE_TYPE_BROKER as BROKER,
        },
        quorum_controller::configs::{
            CONFIG_RESOURCE_TYPE_BROKER_LOGGER as BROKER_LOGGER,
            CONFIG_RESOURCE_TYPE_CLIENT_METRICS as CLIENT_METRICS,
            CONFIG_RESOURCE_TYPE_GROUP as GROUP,
        },
    };
}

/// Whether `api` is checked item by item here rather than once on CLUSTER.
pub fn is_per_resource(api: impl Into<Api>) -> bool {
    use kafka_protocol::messages::ApiKey;
    let Api::Kafka(api) = api.into() else {
        return false;
    };
    matches!(
        api,
        ApiKey::CreateTopics
            | ApiKey::DeleteTopics
            | ApiKey::CreatePartitions
            | ApiKey::IncrementalAlterConfigs
            | ApiKey::AlterConfigs
            | ApiKey::DescribeConfigs
    )
}

/// The items of a request that [`vet`] refused, to add to the answer of
/// the rest ([`Refused::answer`]).
#[derive(Debug)]
pub struct Refused {
    count: usize,
    granted: bool,
    refusals: Refusals,
}

#[derive(Debug)]
enum Refusals {
    CreateTopics {
        results: Vec<create_topics_response::CreatableTopicResult>,
        undescribable: HashSet<String>,
    },
    DeleteTopics(Vec<delete_topics_response::DeletableTopicResult>),
    CreatePartitions(Vec<create_partitions_response::CreatePartitionsTopicResult>),
    IncrementalAlterConfigs(Vec<incremental_alter_configs_response::AlterConfigsResourceResponse>),
    AlterConfigs(Vec<alter_configs_response::AlterConfigsResourceResponse>),
    DescribeConfigs(Vec<describe_configs_response::DescribeConfigsResult>),
}

/// Who asks, for the per-item checks; remembers whether any check that
/// decides what is dispatched allowed something.
struct Asker<'a> {
    authorizer: &'a Authorizer,
    principal: &'a str,
    host: &'a str,
    granted: std::cell::Cell<bool>,
}

impl Asker<'_> {
    fn may(&self, operation: i8, resource_type: i8, resource_name: &str) -> bool {
        self.authorizer.authorize(&Action {
            principal: self.principal,
            host: self.host,
            operation,
            resource_type,
            resource_name,
        })
    }

    fn grant(&self, allowed: bool) -> bool {
        if allowed {
            self.granted.set(true);
        }
        allowed
    }

    fn on_cluster(&self, operation: i8) -> bool {
        self.grant(self.may(operation, acl::resource_type::CLUSTER, acl::CLUSTER_NAME))
    }

    fn on_topic(&self, operation: i8, name: &str) -> bool {
        self.grant(self.may(operation, acl::resource_type::TOPIC, name))
    }

    /// The error for a config resource `operation` may not touch (`None`:
    /// allowed, or a type this layer leaves to the controller).
    fn config_refusal(&self, operation: i8, resource_type: i8, name: &str) -> Option<i16> {
        let (allowed, code) = match resource_type {
            config_type::TOPIC => (self.on_topic(operation, name), TOPIC_AUTHORIZATION_FAILED),
            config_type::BROKER | config_type::BROKER_LOGGER | config_type::CLIENT_METRICS => {
                (self.on_cluster(operation), CLUSTER_AUTHORIZATION_FAILED)
            }
            config_type::GROUP => (
                self.may(operation, acl::resource_type::GROUP, name),
                GROUP_AUTHORIZATION_FAILED,
            ),
            _ => return None,
        };
        (!self.grant(allowed)).then_some(code)
    }
}

/// Kafka's default message of an authorization error code.
fn default_message(code: i16) -> StrBytes {
    StrBytes::from_static_str(match code {
        TOPIC_AUTHORIZATION_FAILED => "Topic authorization failed.",
        GROUP_AUTHORIZATION_FAILED => "Group authorization failed.",
        _ => "Cluster authorization failed.",
    })
}

/// Names given more than once in `names`.
fn duplicates<'a>(names: impl Iterator<Item = &'a str>) -> HashSet<String> {
    let mut seen = HashSet::new();
    let mut twice = HashSet::new();
    for n in names {
        if !seen.insert(n) {
            twice.insert(n.to_owned());
        }
    }
    twice
}

/// Keeps in `$resources` (config resources of a request) those `$who` may
/// apply `$op` to, and returns a `$result` (the response type's item) for
/// each one removed: its code and Kafka's message, type and name.
macro_rules! refuse_config_resources {
    ($who:expr, $resources:expr, $op:expr, $result:ty) => {{
        let mut results = Vec::new();
        $resources.retain(|c| {
            let refusal = $who.config_refusal($op, c.resource_type, c.resource_name.as_str());
            if let Some(code) = refusal {
                results.push(
                    <$result>::default()
                        .with_error_code(code)
                        .with_error_message(Some(default_message(code)))
                        .with_resource_type(c.resource_type)
                        .with_resource_name(c.resource_name.clone()),
                );
            }
            refusal.is_none()
        });
        results
    }};
}

/// The event loop's `$answer` of kind `$kind` (`$ty` when nothing was
/// answered) with `$results` added to its `$field`.
macro_rules! with_refusals {
    ($answer:expr, $kind:ident, $ty:ty, $field:ident, $results:expr) => {{
        let mut r = match $answer {
            Some(ResponseKind::$kind(r)) => r,
            _ => <$ty>::default(),
        };
        r.$field.extend($results);
        ResponseKind::$kind(r)
    }};
}

/// What [`vet`] made of a request.
#[derive(Debug)]
pub enum Vetting {
    /// Not a per-resource api, or no authorizer: dispatch it as it is.
    Untouched(DecodedRequest),
    /// The request with only its allowed items (`None` when none is), and
    /// the refused ones.
    Split(Option<DecodedRequest>, Refused),
}

/// Splits `request` from `principal` at `host` by what it may do (see the
/// module doc).
pub fn vet(
    authorizer: &Authorizer,
    principal: &str,
    host: &str,
    mut request: DecodedRequest,
) -> Vetting {
    if !authorizer.enabled() || !is_per_resource(request.api_key) {
        return Vetting::Untouched(request);
    }
    let who = Asker {
        authorizer,
        principal,
        host,
        granted: std::cell::Cell::new(false),
    };
    let Request::Kafka(body) = &mut request.body else {
        return Vetting::Untouched(request);
    };
    let (refusals, refused, any_left) = match body {
        RequestKind::CreateTopics(r) => {
            let cluster = who.on_cluster(acl::operation::CREATE);
            let twice = duplicates(r.topics.iter().map(|t| t.name.0.as_str()));
            let mut results = Vec::new();
            r.topics.retain(|t| {
                let name = t.name.0.as_str();
                let keep =
                    cluster || twice.contains(name) || who.on_topic(acl::operation::CREATE, name);
                if !keep {
                    results.push(
                        create_topics_response::CreatableTopicResult::default()
                            .with_name(t.name.clone())
                            .with_error_code(TOPIC_AUTHORIZATION_FAILED)
                            .with_error_message(Some(StrBytes::from_static_str(
                                "Authorization failed.",
                            ))),
                    );
                }
                keep
            });
            let undescribable = r
                .topics
                .iter()
                .map(|t| t.name.0.as_str())
                .filter(|n| {
                    !who.may(
                        acl::operation::DESCRIBE_CONFIGS,
                        acl::resource_type::TOPIC,
                        n,
                    )
                })
                .map(str::to_owned)
                .collect();
            let n = results.len();
            (
                Refusals::CreateTopics {
                    results,
                    undescribable,
                },
                n,
                !r.topics.is_empty(),
            )
        }
        RequestKind::DeleteTopics(r) => {
            let cluster = who.on_cluster(acl::operation::DELETE);
            let names = r.topic_names.iter().map(|n| n.0.as_str()).chain(
                r.topics
                    .iter()
                    .filter_map(|t| t.name.as_ref().map(|n| n.0.as_str())),
            );
            let twice = duplicates(names);
            let mut results = Vec::new();
            let refuse = |name: Option<TopicName>, id: Uuid| {
                delete_topics_response::DeletableTopicResult::default()
                    .with_name(name)
                    .with_topic_id(id)
                    .with_error_code(TOPIC_AUTHORIZATION_FAILED)
                    .with_error_message(Some(default_message(TOPIC_AUTHORIZATION_FAILED)))
            };
            let allowed_name = |name: &str| {
                cluster || twice.contains(name) || who.on_topic(acl::operation::DELETE, name)
            };
            r.topic_names.retain(|n| {
                let keep = allowed_name(n.0.as_str());
                if !keep {
                    results.push(refuse(Some(n.clone()), Uuid::nil()));
                }
                keep
            });
            r.topics.retain(|t| {
                let keep = match &t.name {
                    // A name and an id together: the controller answers
                    // INVALID_REQUEST, as Kafka does before any check.
                    Some(n) if !t.topic_id.is_nil() => cluster || allowed_name(n.0.as_str()),
                    Some(n) => allowed_name(n.0.as_str()),
                    None if t.topic_id.is_nil() => true,
                    None => cluster,
                };
                if !keep {
                    results.push(refuse(t.name.clone(), t.topic_id));
                }
                keep
            });
            let n = results.len();
            let left = !r.topic_names.is_empty() || !r.topics.is_empty();
            (Refusals::DeleteTopics(results), n, left)
        }
        RequestKind::CreatePartitions(r) => {
            let twice = duplicates(r.topics.iter().map(|t| t.name.0.as_str()));
            let mut results = Vec::new();
            r.topics.retain(|t| {
                let name = t.name.0.as_str();
                let keep = twice.contains(name) || who.on_topic(acl::operation::ALTER, name);
                if !keep {
                    results.push(
                        create_partitions_response::CreatePartitionsTopicResult::default()
                            .with_name(t.name.clone())
                            .with_error_code(TOPIC_AUTHORIZATION_FAILED),
                    );
                }
                keep
            });
            let n = results.len();
            (Refusals::CreatePartitions(results), n, !r.topics.is_empty())
        }
        RequestKind::IncrementalAlterConfigs(r) => {
            let results = refuse_config_resources!(
                who,
                r.resources,
                acl::operation::ALTER_CONFIGS,
                incremental_alter_configs_response::AlterConfigsResourceResponse
            );
            let n = results.len();
            let left = !r.resources.is_empty();
            (Refusals::IncrementalAlterConfigs(results), n, left)
        }
        RequestKind::AlterConfigs(r) => {
            let results = refuse_config_resources!(
                who,
                r.resources,
                acl::operation::ALTER_CONFIGS,
                alter_configs_response::AlterConfigsResourceResponse
            );
            let n = results.len();
            (Refusals::AlterConfigs(results), n, !r.resources.is_empty())
        }
        RequestKind::DescribeConfigs(r) => {
            let results = refuse_config_resources!(
                who,
                r.resources,
                acl::operation::DESCRIBE_CONFIGS,
                describe_configs_response::DescribeConfigsResult
            );
            let n = results.len();
            (
                Refusals::DescribeConfigs(results),
                n,
                !r.resources.is_empty(),
            )
        }
        _ => return Vetting::Untouched(request),
    };
    Vetting::Split(
        any_left.then_some(request),
        Refused {
            count: refused,
            granted: who.granted.get(),
            refusals,
        },
    )
}

impl Refused {
    /// How many items were refused.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Whether the authorizer allowed the requester anything in this
    /// request. Items passed on unchecked (a name given twice, a DeleteTopics
    /// entry with neither name nor id, a config type the controller refuses)
    /// do not count: an anonymous client must not earn the trust of an
    /// authorized one (the connection's frame limit and request pool) by
    /// sending them.
    pub fn granted(&self) -> bool {
        self.granted
    }

    /// The answer to the whole request: the event loop's `answer` to the
    /// dispatched part (`None` when nothing was dispatched) with the refused
    /// items' results added.
    pub fn answer(self, answer: Option<ResponseKind>) -> ResponseKind {
        match (self.refusals, answer) {
            (
                Refusals::CreateTopics {
                    results,
                    undescribable,
                },
                a,
            ) => {
                let mut r = match a {
                    Some(ResponseKind::CreateTopics(r)) => r,
                    _ => CreateTopicsResponse::default(),
                };
                for t in &mut r.topics {
                    if t.error_code == 0 && undescribable.contains(t.name.0.as_str()) {
                        t.configs = Some(Vec::new());
                        t.num_partitions = -1;
                        t.replication_factor = -1;
                        t.topic_config_error_code = TOPIC_AUTHORIZATION_FAILED;
                    }
                }
                r.topics.extend(results);
                ResponseKind::CreateTopics(r)
            }
            (Refusals::DeleteTopics(results), a) => {
                with_refusals!(a, DeleteTopics, DeleteTopicsResponse, responses, results)
            }
            (Refusals::CreatePartitions(results), a) => {
                with_refusals!(
                    a,
                    CreatePartitions,
                    CreatePartitionsResponse,
                    results,
                    results
                )
            }
            (Refusals::IncrementalAlterConfigs(results), a) => with_refusals!(
                a,
                IncrementalAlterConfigs,
                IncrementalAlterConfigsResponse,
                responses,
                results
            ),
            (Refusals::AlterConfigs(results), a) => {
                with_refusals!(a, AlterConfigs, AlterConfigsResponse, responses, results)
            }
            (Refusals::DescribeConfigs(results), a) => {
                with_refusals!(
                    a,
                    DescribeConfigs,
                    DescribeConfigsResponse,
                    results,
                    results
                )
            }
        }
    }
}

#[cfg(test)]
#[path = "resource_authz_tests.rs"]
mod tests;
