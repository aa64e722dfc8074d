//! Group coordinators: found with FindCoordinator, cached per group, found again when a
//! response says the coordinator moved (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE) or the
//! connection to it failed, and retried in place while it loads (COORDINATOR_LOAD_IN_PROGRESS).

use std::future::Future;
use std::time::Duration;

use crate::cluster::client::Client;
use crate::cluster::retry::Backoff;
use crate::deadline::deadline_after;
use crate::error::{BrokerRef, ClientError};
use kafka_wire::protocol::messages::find_coordinator::KEY_TYPE_GROUP;
use kafka_wire::protocol::messages::{find_coordinator, FindCoordinatorRequest};
use kafka_wire::protocol::names::validate_group;
use kafka_wire::protocol::{ErrorCode, Recovery};

impl Client {
    /// The coordinator of `group`, from the cache or asked of any broker.
    ///
    /// A cluster that has never had a group answers COORDINATOR_NOT_AVAILABLE until it has
    /// created `__consumer_offsets`; such retriable answers are retried with backoff for up to
    /// the client's request timeout.
    pub async fn coordinator(&self, group: &str) -> Result<BrokerRef, ClientError> {
        validate_group(group)?;
        let deadline = deadline_after(self.config().request_timeout);
        let mut backoff = Backoff::new(Duration::from_millis(50), Duration::from_secs(1), deadline);
        loop {
            match self.find_coordinator_once(group).await {
                Err(e) if e.is_retriable() => match backoff.next_wait() {
                    Some(wait) => tokio::time::sleep(wait).await,
                    None => {
                        return Err(ClientError::DeadlineExceeded {
                            what: format!("finding the coordinator of group `{group}`"),
                            last_error: Box::new(e),
                        })
                    }
                },
                other => return other,
            }
        }
    }

    /// Finds the coordinators of all `groups` not cached yet with one FindCoordinator carrying
    /// them all as CoordinatorKeys (v4+, Kafka 3.0+), and caches the answers. Best effort: a
    /// group whose key answered an error, or every group but the first when the broker is older
    /// than v4 (one key per request), stays uncached, so [`coordinator`](Self::coordinator)
    /// finds it alone with its retries. Returns how many groups it cached.
    pub async fn find_coordinators(&self, groups: &[String]) -> usize {
        let wanted: Vec<&String> = groups
            .iter()
            .filter(|g| validate_group(g).is_ok() && self.cached_coordinator(g).is_none())
            .collect();
        let Some(first) = wanted.first() else { return 0 };
        let answer = self
            .send_any_built(|version| {
                if version >= 4 {
                    FindCoordinatorRequest {
                        key: None,
                        key_type: Some(find_coordinator::KEY_TYPE_GROUP),
                        coordinator_keys: Some(wanted.iter().map(|g| (*g).clone()).collect()),
                        tagged_fields: kafka_wire::protocol::TaggedFields::default(),
                    }
                } else {
                    FindCoordinatorRequest::for_group(first, version)
                }
            })
            .await;
        let Ok((_, response)) = answer else { return 0 };
        let found: Vec<(String, BrokerRef)> = match response.coordinators {
            Some(list) => list
                .into_iter()
                .filter(|c| c.error_code.is_ok())
                .map(|c| {
                    (c.key, BrokerRef { node_id: Some(c.node_id), addr: format!("{}:{}", c.host, c.port) })
                })
                .collect(),
            None if response.error_code.unwrap_or_default().is_ok() => vec![(
                (*first).clone(),
                BrokerRef {
                    node_id: response.node_id,
                    addr: format!(
                        "{}:{}",
                        response.host.as_deref().unwrap_or_default(),
                        response.port.unwrap_or(-1)
                    ),
                },
            )],
            None => Vec::new(),
        };
        let mut cached = 0;
        for (group, broker) in found {
            if wanted.iter().any(|g| **g == group) {
                self.remember_coordinator(&group, broker);
                cached += 1;
            }
        }
        cached
    }

    /// One FindCoordinator round (or the cached answer), without retries.
    async fn find_coordinator_once(&self, group: &str) -> Result<BrokerRef, ClientError> {
        if let Some(found) = self.cached_coordinator(group) {
            return Ok(found);
        }
        let found =
            self.find_coordinator_uncached(group, KEY_TYPE_GROUP, &format!("group `{group}`")).await?;
        self.remember_coordinator(group, found.clone());
        Ok(found)
    }

    /// One FindCoordinator round for `key` of `key_type` (a group or a transactional id),
    /// neither cached nor retried; `what` names the key in errors. A transactional id needs
    /// FindCoordinator v1 (Kafka 0.11).
    pub(crate) async fn find_coordinator_uncached(
        &self,
        key: &str,
        key_type: i8,
        what: &str,
    ) -> Result<BrokerRef, ClientError> {
        let (version, response) =
            self.send_any_built(|version| FindCoordinatorRequest::for_key(key, key_type, version)).await?;
        if key_type != KEY_TYPE_GROUP && version == 0 {
            return Err(ClientError::NotSupported {
                broker: BrokerRef { node_id: None, addr: "any broker".to_owned() },
                feature: format!("finding the coordinator of {what}"),
                needs: "0.11",
            });
        }
        let broker_of = |code: ErrorCode, node_id: i32, host: &str, port: i32| {
            if code.is_ok() {
                Ok(BrokerRef { node_id: Some(node_id), addr: format!("{host}:{port}") })
            } else {
                Err(ClientError::Kafka {
                    broker: BrokerRef { node_id: None, addr: "any broker".to_owned() },
                    api: find_coordinator::SPEC.key,
                    code,
                    context: what.to_owned(),
                })
            }
        };
        match &response.coordinators {
            Some(list) => {
                let c = list.iter().find(|c| c.key == key).ok_or_else(|| ClientError::Protocol {
                    broker: BrokerRef { node_id: None, addr: "any broker".to_owned() },
                    message: format!("FindCoordinator answered without {what}"),
                })?;
                broker_of(c.error_code, c.node_id, &c.host, c.port)
            }
            None => broker_of(
                response.error_code.unwrap_or_default(),
                response.node_id.unwrap_or(-1),
                response.host.as_deref().unwrap_or_default(),
                response.port.unwrap_or(-1),
            ),
        }
    }

    /// Runs `call` against the coordinator of `group`, finding it again and retrying as the
    /// errors call for, until `timeout` has passed. A group id breaking Kafka's rules is refused
    /// before anything is sent.
    ///
    /// The coordinator is cached per group; it is found again when `call` fails with
    /// NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE or a connection error, and `call` is retried
    /// in place (with backoff) on other retriable Kafka errors such as
    /// COORDINATOR_LOAD_IN_PROGRESS. Other errors are returned at once; at the deadline the last
    /// error is returned inside [`ClientError::DeadlineExceeded`].
    pub async fn with_coordinator<T, F, Fut>(
        &self,
        group: &str,
        timeout: Duration,
        call: F,
    ) -> Result<T, ClientError>
    where
        F: Fn(BrokerRef) -> Fut,
        Fut: Future<Output = Result<T, ClientError>>,
    {
        validate_group(group)?;
        let deadline = deadline_after(timeout);
        let mut backoff = Backoff::new(Duration::from_millis(50), Duration::from_secs(1), deadline);
        let mut last: Option<ClientError> = None;
        loop {
            // Finding the coordinator and the call itself end at the deadline, even when a
            // broker accepts the request and never answers (the request timeout may be longer).
            let attempt = async {
                match self.find_coordinator_once(group).await {
                    Ok(broker) => call(broker).await,
                    Err(e) => Err(e),
                }
            };
            let Ok(outcome) =
                tokio::time::timeout_at(tokio::time::Instant::from_std(deadline), attempt).await
            else {
                let coordinator = self
                    .cached_coordinator(group)
                    .unwrap_or_else(|| BrokerRef { node_id: None, addr: "any broker".to_owned() });
                return Err(ClientError::DeadlineExceeded {
                    what: format!("calling the coordinator of group `{group}`"),
                    last_error: Box::new(last.unwrap_or_else(|| ClientError::Protocol {
                        broker: coordinator,
                        message: format!("no answer within the {timeout:?} deadline"),
                    })),
                });
            };
            let err = match outcome {
                Ok(value) => return Ok(value),
                Err(e) => e,
            };
            let retry = match &err {
                ClientError::Kafka { code, .. } => match code.recovery() {
                    Recovery::RefindCoordinator => {
                        self.forget_coordinator(group);
                        true
                    }
                    Recovery::Retry | Recovery::RefreshMetadata => true,
                    Recovery::Fatal | Recovery::None => false,
                },
                e if e.is_retriable() => {
                    self.forget_coordinator(group);
                    true
                }
                _ => false,
            };
            if !retry {
                return Err(err);
            }
            match backoff.next_wait() {
                Some(wait) => {
                    last = Some(err);
                    tokio::time::sleep(wait).await;
                }
                None => {
                    return Err(ClientError::DeadlineExceeded {
                        what: format!("calling the coordinator of group `{group}`"),
                        last_error: Box::new(err),
                    })
                }
            }
        }
    }
}
