//! Broker throttling (KIP-219): a response's `throttle_time_ms` says how long the broker wants
//! the client to hold back before its next request on that connection. Every response type
//! declares where its throttle time is, so the client can honour it for any call.

use super::messages::{
    ApiVersionsResponse, CreatePartitionsResponse, CreateTopicsResponse, DeleteRecordsResponse,
    DeleteTopicsResponse, DescribeGroupsResponse, FetchResponse, FindCoordinatorResponse, ListGroupsResponse,
    ListOffsetsResponse, MetadataResponse, OffsetCommitResponse, OffsetDeleteResponse, OffsetFetchResponse,
    OffsetForLeaderEpochResponse, ProduceResponse, SaslAuthenticateResponse, SaslHandshakeResponse,
};

/// A response that may ask the client to hold back.
pub trait Throttled {
    /// Milliseconds the broker asked the client to wait before its next request; 0 when none.
    fn throttle_time_ms(&self) -> i32;
}

macro_rules! optional_throttle {
    ($($t:ty),* $(,)?) => {$(
        impl Throttled for $t {
            fn throttle_time_ms(&self) -> i32 {
                self.throttle_time_ms.unwrap_or(0).max(0)
            }
        }
    )*};
}

macro_rules! plain_throttle {
    ($($t:ty),* $(,)?) => {$(
        impl Throttled for $t {
            fn throttle_time_ms(&self) -> i32 {
                self.throttle_time_ms.max(0)
            }
        }
    )*};
}

macro_rules! never_throttled {
    ($($t:ty),* $(,)?) => {$(
        impl Throttled for $t {
            fn throttle_time_ms(&self) -> i32 {
                0
            }
        }
    )*};
}

optional_throttle!(
    ApiVersionsResponse,
    CreateTopicsResponse,
    DeleteTopicsResponse,
    DescribeGroupsResponse,
    FetchResponse,
    FindCoordinatorResponse,
    ListGroupsResponse,
    ListOffsetsResponse,
    MetadataResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
    OffsetForLeaderEpochResponse,
    ProduceResponse,
);
plain_throttle!(CreatePartitionsResponse, DeleteRecordsResponse, OffsetDeleteResponse);
// Neither SASL response has a throttle field: authentication is not quota-managed.
never_throttled!(SaslAuthenticateResponse, SaslHandshakeResponse);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_or_negative_throttle_times_mean_no_wait() {
        let mut r = MetadataResponse::default();
        assert_eq!(r.throttle_time_ms(), 0);
        r.throttle_time_ms = Some(250);
        assert_eq!(r.throttle_time_ms(), 250);
        r.throttle_time_ms = Some(-5);
        assert_eq!(r.throttle_time_ms(), 0);
    }
}
