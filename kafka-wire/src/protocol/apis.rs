//! The one list of the APIs kwire implements: [`for_each_api!`](crate::for_each_api).
//!
//! Everything that needs "every API" expands from it — the registry
//! ([`supported_apis`](super::registry::supported_apis)), the JSON rendering, the throttle
//! impls, the message tests, the Kafka oracle tests and the fuzz targets — so adding an API is
//! one line there plus its message file (which declares its versions in its `SPEC`).
//!
//! The list is checked against each message's `SPEC` when this crate compiles: the key, the
//! name and the response type of every entry must be the ones the request type declares, and
//! the keys must be ascending.

/// Calls `$m!` with every API kwire implements, in API-key order, as
/// `(key, Name, NameRequest, NameResponse)` entries separated by commas:
///
/// ```text
/// $m! { (0, Produce, ProduceRequest, ProduceResponse), (1, Fetch, FetchRequest, FetchResponse), ... }
/// ```
///
/// `key` is an integer literal (the API key, usable in a `match` on `ApiKey.0`), and the other
/// three are bare identifiers, so a callback can `stringify!` the name or special-case one type
/// with a literal pattern. The types resolve where `$m!` expands: bring
/// `kafka_wire::protocol::messages::*` (or the types used) into scope there.
///
/// ```
/// use kafka_wire::protocol::messages::*;
/// use kafka_wire::protocol::Body;
///
/// macro_rules! names {
///     ($(($key:literal, $name:ident, $req:ident, $resp:ident)),* $(,)?) => {
///         [$((stringify!($name), <$req as Body>::SPEC.versions.max)),*]
///     };
/// }
/// let apis = kafka_wire::for_each_api!(names);
/// assert_eq!(apis[2].0, "ListOffsets");
/// ```
#[macro_export]
macro_rules! for_each_api {
    ($m:ident) => {
        $m! {
            (0, Produce, ProduceRequest, ProduceResponse),
            (1, Fetch, FetchRequest, FetchResponse),
            (2, ListOffsets, ListOffsetsRequest, ListOffsetsResponse),
            (3, Metadata, MetadataRequest, MetadataResponse),
            (8, OffsetCommit, OffsetCommitRequest, OffsetCommitResponse),
            (9, OffsetFetch, OffsetFetchRequest, OffsetFetchResponse),
            (10, FindCoordinator, FindCoordinatorRequest, FindCoordinatorResponse),
            (11, JoinGroup, JoinGroupRequest, JoinGroupResponse),
            (12, Heartbeat, HeartbeatRequest, HeartbeatResponse),
            (13, LeaveGroup, LeaveGroupRequest, LeaveGroupResponse),
            (14, SyncGroup, SyncGroupRequest, SyncGroupResponse),
            (15, DescribeGroups, DescribeGroupsRequest, DescribeGroupsResponse),
            (16, ListGroups, ListGroupsRequest, ListGroupsResponse),
            (17, SaslHandshake, SaslHandshakeRequest, SaslHandshakeResponse),
            (18, ApiVersions, ApiVersionsRequest, ApiVersionsResponse),
            (19, CreateTopics, CreateTopicsRequest, CreateTopicsResponse),
            (20, DeleteTopics, DeleteTopicsRequest, DeleteTopicsResponse),
            (21, DeleteRecords, DeleteRecordsRequest, DeleteRecordsResponse),
            (22, InitProducerId, InitProducerIdRequest, InitProducerIdResponse),
            (23, OffsetForLeaderEpoch, OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse),
            (24, AddPartitionsToTxn, AddPartitionsToTxnRequest, AddPartitionsToTxnResponse),
            (25, AddOffsetsToTxn, AddOffsetsToTxnRequest, AddOffsetsToTxnResponse),
            (26, EndTxn, EndTxnRequest, EndTxnResponse),
            (28, TxnOffsetCommit, TxnOffsetCommitRequest, TxnOffsetCommitResponse),
            (36, SaslAuthenticate, SaslAuthenticateRequest, SaslAuthenticateResponse),
            (37, CreatePartitions, CreatePartitionsRequest, CreatePartitionsResponse),
            (47, OffsetDelete, OffsetDeleteRequest, OffsetDeleteResponse),
            (68, ConsumerGroupHeartbeat, ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse),
            (69, ConsumerGroupDescribe, ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse),
            (77, ShareGroupDescribe, ShareGroupDescribeRequest, ShareGroupDescribeResponse),
            (90, DescribeShareGroupOffsets, DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse),
        }
    };
}

/// Compile-time checks of the list against the message files.
mod check {
    use super::super::api::{Body, Request};
    #[allow(clippy::wildcard_imports)] // every message type, as the list names them
    use super::super::messages::*;

    const fn same_str(a: &str, b: &str) -> bool {
        let (a, b) = (a.as_bytes(), b.as_bytes());
        if a.len() != b.len() {
            return false;
        }
        let mut i = 0;
        while i < a.len() {
            if a[i] != b[i] {
                return false;
            }
            i += 1;
        }
        true
    }

    const fn ascending(keys: &[i16]) -> bool {
        let mut i = 1;
        while i < keys.len() {
            if keys[i - 1] >= keys[i] {
                return false;
            }
            i += 1;
        }
        true
    }

    /// As a `fn(A) -> B`, compiles only when `A` and `B` are the same type.
    fn identity<T>(t: T) -> T {
        t
    }

    macro_rules! check {
        ($(($key:literal, $name:ident, $req:ident, $resp:ident)),* $(,)?) => {
            $(
                const _: () = assert!(
                    <$req as Body>::SPEC.key.0 == $key,
                    concat!(stringify!($name), ": the key in for_each_api! is not the one its SPEC declares")
                );
                const _: () = assert!(
                    same_str(<$req as Body>::SPEC.name, stringify!($name)),
                    concat!(stringify!($name), ": the name in for_each_api! is not the one its SPEC declares")
                );
                const _: () = assert!(
                    <$req as Body>::SPEC.key.0 == <$resp as Body>::SPEC.key.0,
                    concat!(stringify!($name), ": request and response declare different SPECs")
                );
            )*
            const _: () = assert!(ascending(&[$($key),*]), "for_each_api! must list the APIs in key order");
            /// Type-checks each entry's response against `<Request>::Response`; never called.
            #[allow(dead_code)]
            fn responses_match() {
                $(let _: fn(<$req as Request>::Response) -> $resp = identity;)*
            }
        };
    }

    crate::for_each_api!(check);
}
