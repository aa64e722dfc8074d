//! Share groups (KIP-932): describing one (ShareGroupDescribe) and reading its share-partition
//! start offsets (DescribeShareGroupOffsets). Both go to the group's coordinator. A broker
//! whose cluster has `share.version` finalized at 0 (Kafka 4.1's default) advertises neither:
//! callers see [`ClientError::is_unsupported`] and know it has no share groups.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::cluster::client::Client;
use crate::cluster::router::TopicPartition;
use crate::error::ClientError;
use crate::groups::description::{
    partitions_of, ConsumerGroupEpochs, ConsumerMemberState, GroupDescription, GroupMember, GroupType,
};
use kafka_wire::protocol::messages::{
    describe_share_group_offsets, DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsRequestGroup,
    ShareGroupDescribeRequest,
};
use kafka_wire::protocol::{ErrorCode, TaggedFields};

/// A share group's position in one partition (DescribeShareGroupOffsets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareStartOffset {
    /// The share-partition start offset: every record below it has been acknowledged or
    /// archived; records from it on may still be (re)delivered.
    pub offset: i64,
    /// The partition's leader epoch the share coordinator recorded; `None` when unknown (−1).
    pub leader_epoch: Option<i32>,
}

impl Client {
    /// `group` as a share group, or `None` when the coordinator has no such share group
    /// (GROUP_ID_NOT_FOUND: unknown, or a group of another type; UNSUPPORTED_VERSION: share
    /// groups are off).
    pub async fn describe_share_group(
        &self,
        group: &str,
        timeout: Duration,
    ) -> Result<Option<GroupDescription>, ClientError> {
        let Some((coordinator, g)) =
            self.describe_one_group::<ShareGroupDescribeRequest>(group, timeout).await?
        else {
            return Ok(None);
        };
        Ok(Some(GroupDescription {
            group_id: g.group_id,
            group_type: GroupType::Share,
            state: g.group_state,
            protocol_type: "share".to_owned(),
            protocol: g.assignor_name,
            epochs: Some(ConsumerGroupEpochs {
                group_epoch: g.group_epoch,
                assignment_epoch: g.assignment_epoch,
            }),
            members: g
                .members
                .into_iter()
                .map(|m| GroupMember {
                    member_id: m.member_id,
                    group_instance_id: None,
                    client_id: m.client_id,
                    client_host: m.client_host,
                    consumer: Some(ConsumerMemberState {
                        member_epoch: m.member_epoch,
                        rack_id: m.rack_id,
                        subscribed_topics: m.subscribed_topic_names,
                        subscribed_topic_regex: None,
                        assignment: partitions_of(m.assignment),
                        target_assignment: None,
                    }),
                    classic_assignment: None,
                })
                .collect(),
            coordinator,
        }))
    }

    /// The share-partition start offsets of share group `group`, for every partition it has
    /// state for. Partitions it has no start offset for yet (−1) are absent.
    ///
    /// A partition-level error fails the call naming the partition; GROUP_ID_NOT_FOUND (no such
    /// share group) is an error too: call this for a group [`describe_share_group`] found.
    ///
    /// [`describe_share_group`]: Self::describe_share_group
    pub async fn share_group_start_offsets(
        &self,
        group: &str,
        timeout: Duration,
    ) -> Result<BTreeMap<TopicPartition, ShareStartOffset>, ClientError> {
        self.with_coordinator(group, timeout, |broker| async move {
            let (_, response) = self
                .send_built(&broker, |_| DescribeShareGroupOffsetsRequest {
                    groups: vec![DescribeShareGroupOffsetsRequestGroup {
                        group_id: group.to_owned(),
                        topics: None,
                        tagged_fields: TaggedFields::default(),
                    }],
                    tagged_fields: TaggedFields::default(),
                })
                .await?;
            let fail = |code: ErrorCode, context: String| ClientError::Kafka {
                broker: broker.clone(),
                api: describe_share_group_offsets::SPEC.key,
                code,
                context,
            };
            let g = response.groups.into_iter().find(|g| g.group_id == group).ok_or_else(|| {
                ClientError::Protocol {
                    broker: broker.clone(),
                    message: format!("DescribeShareGroupOffsets answered without group `{group}`"),
                }
            })?;
            g.error_code.into_result().map_err(|code| fail(code, format!("group `{group}`")))?;
            let mut out = BTreeMap::new();
            for topic in g.topics {
                for p in topic.partitions {
                    let tp = TopicPartition::new(topic.topic_name.clone(), p.partition_index);
                    p.error_code.into_result().map_err(|code| fail(code, format!("group `{group}` {tp}")))?;
                    if p.start_offset >= 0 {
                        let leader_epoch = (p.leader_epoch >= 0).then_some(p.leader_epoch);
                        out.insert(tp, ShareStartOffset { offset: p.start_offset, leader_epoch });
                    }
                }
            }
            Ok(out)
        })
        .await
    }
}
