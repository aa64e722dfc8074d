//! The steps ConsumerGroupDescribe (KIP-848) and ShareGroupDescribe (KIP-932) share: ask the
//! group's coordinator about one group id and read that group's own error code. Turning the
//! answer into a [`GroupDescription`](crate::GroupDescription) is left to each caller.

use std::fmt::Debug;
use std::time::Duration;

use crate::cluster::client::Client;
use crate::error::{BrokerRef, ClientError};
use kafka_wire::protocol::messages::{
    ConsumerDescribedGroup, ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, ShareDescribedGroup,
    ShareGroupDescribeRequest, ShareGroupDescribeResponse,
};
use kafka_wire::protocol::{ErrorCode, Request, TaggedFields};

/// A describe request of a newer group type: group ids in, one answer per group out, each with
/// its own error code (the response as a whole has none).
pub(super) trait GroupDescribe: Request + Debug {
    /// One group of the response.
    type Group;
    /// The request describing `group_ids`, without authorized operations.
    fn for_groups(group_ids: Vec<String>) -> Self;
    /// The response's groups.
    fn groups(response: Self::Response) -> Vec<Self::Group>;
    /// A group's id and error code.
    fn id_and_error(group: &Self::Group) -> (&str, ErrorCode);
}

impl GroupDescribe for ConsumerGroupDescribeRequest {
    type Group = ConsumerDescribedGroup;
    fn for_groups(group_ids: Vec<String>) -> Self {
        Self { group_ids, include_authorized_operations: false, tagged_fields: TaggedFields::default() }
    }
    fn groups(response: ConsumerGroupDescribeResponse) -> Vec<ConsumerDescribedGroup> {
        response.groups
    }
    fn id_and_error(group: &ConsumerDescribedGroup) -> (&str, ErrorCode) {
        (&group.group_id, group.error_code)
    }
}

impl GroupDescribe for ShareGroupDescribeRequest {
    type Group = ShareDescribedGroup;
    fn for_groups(group_ids: Vec<String>) -> Self {
        Self { group_ids, include_authorized_operations: false, tagged_fields: TaggedFields::default() }
    }
    fn groups(response: ShareGroupDescribeResponse) -> Vec<ShareDescribedGroup> {
        response.groups
    }
    fn id_and_error(group: &ShareDescribedGroup) -> (&str, ErrorCode) {
        (&group.group_id, group.error_code)
    }
}

impl Client {
    /// `group` as its coordinator describes it with `R`, and that coordinator; `None` when the
    /// coordinator has no such group of `R`'s type: GROUP_ID_NOT_FOUND (unknown, or a group of
    /// another type) or UNSUPPORTED_VERSION (Kafka 3.7–3.9 advertise ConsumerGroupDescribe, and
    /// Kafka 4.1 with `share.version` 0 ShareGroupDescribe, and answer that for the group when
    /// the protocol is off).
    ///
    /// Any other group-level error fails the call inside [`with_coordinator`], which finds the
    /// coordinator again or retries on the coordinator errors and fails on the others.
    ///
    /// [`with_coordinator`]: Self::with_coordinator
    pub(super) async fn describe_one_group<R: GroupDescribe>(
        &self,
        group: &str,
        timeout: Duration,
    ) -> Result<Option<(BrokerRef, R::Group)>, ClientError>
    where
        R::Response: Debug,
    {
        self.with_coordinator(group, timeout, |broker| async move {
            let (_, response) = self.send_built(&broker, |_| R::for_groups(vec![group.to_owned()])).await?;
            let api = R::SPEC.key;
            let Some(g) = R::groups(response).into_iter().find(|g| R::id_and_error(g).0 == group) else {
                let message = format!("{api} answered without group `{group}`");
                return Err(ClientError::Protocol { broker, message });
            };
            let code = R::id_and_error(&g).1;
            if code == ErrorCode::GROUP_ID_NOT_FOUND || code == ErrorCode::UNSUPPORTED_VERSION {
                return Ok(None);
            }
            let context = format!("group `{group}`");
            code.into_result().map_err(|code| ClientError::Kafka {
                broker: broker.clone(),
                api,
                code,
                context,
            })?;
            Ok(Some((broker, g)))
        })
        .await
    }
}
