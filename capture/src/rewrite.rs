//! Broker endpoints in responses replaced, so that a client behind a proxy opens every
//! connection to the proxy.
//!
//! Which fields are endpoints comes from Kafka's own schemas (`kafka_wire::protocol::schema`),
//! not from a hand-kept list: in a *response*, every struct with a `host` string and a `port`
//! (int32 or uint16) names a Kafka node a client may connect to — Metadata's and
//! DescribeCluster's `brokers`, FindCoordinator's `host`/`port` (v0–v3) and `coordinators`
//! (v4+), the KIP-951 `node_endpoints` of Produce v10+ and Fetch v16+ (the new leader after
//! NOT_LEADER_OR_FOLLOWER), ShareFetch's and ShareAcknowledge's `node_endpoints`,
//! DescribeQuorum v2's `nodes.listeners`, and the KRaft responses (Vote, BeginQuorumEpoch,
//! EndQuorumEpoch, FetchSnapshot, UpdateRaftVoter) — and is rewritten. [`LEFT_ALONE`] lists
//! the response fields that look like addresses but are not nodes, with the reason; a test
//! walks the whole table and fails on any host or port field that is neither.
//!
//! Requests are never changed: what a client or a broker says about itself (a broker's
//! registration listeners, a Streams instance's `user_endpoint`, ACL hosts) must reach the
//! cluster as sent.
//!
//! The rewrite is one pass over the bytes (`endpoint_splice`): no value is decoded,
//! nothing is allocated unless an endpoint changes, and every other byte (tagged fields kwire
//! does not know included) is forwarded as it came.

use std::fmt;
use std::sync::OnceLock;

use bytes::Bytes;
use kafka_wire::protocol::schema::{self, Field, FieldType, Message, MessageKind};
use kafka_wire::protocol::{ApiKey, DecodeError};

use crate::endpoint_splice::Splice;

/// Response fields whose names say host or port but which are not a Kafka node's endpoint, so
/// the proxy forwards them unchanged: `(API, field path, why)`.
pub const LEFT_ALONE: &[(&str, &str, &str)] = &[
    ("DescribeGroups", "groups.members.client_host", "the member client's own address, as the broker saw it"),
    ("ConsumerGroupDescribe", "groups.members.client_host", "the member client's own address"),
    ("ShareGroupDescribe", "groups.members.client_host", "the member client's own address"),
    ("StreamsGroupDescribe", "groups.members.client_host", "the member client's own address"),
    ("DescribeAcls", "resources.acls.host", "an ACL's host pattern (no port), not an endpoint"),
    ("DeleteAcls", "filter_results.matching_acls.host", "an ACL's host pattern (no port), not an endpoint"),
    (
        "StreamsGroupHeartbeat",
        "partitions_by_user_endpoint.user_endpoint",
        "a Kafka Streams instance's application.server (interactive queries), not a broker",
    ),
    (
        "StreamsGroupDescribe",
        "groups.members.user_endpoint",
        "a Kafka Streams instance's application.server (interactive queries), not a broker",
    ),
];

/// Why a response could not be rewritten (the caller forwards it unchanged and says so).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RewriteError {
    /// The response did not walk at the request's version.
    Decode(DecodeError),
    /// The API carries endpoints in other versions, but this version is not in Kafka 4.1's
    /// schemas (a newer broker): its endpoints cannot be found.
    UnsupportedVersion {
        /// The API.
        api: ApiKey,
        /// The version.
        version: i16,
    },
    /// The replacement host does not fit a Kafka string.
    HostTooLong(usize),
    /// The replacement port does not fit a uint16 port field.
    PortOutOfRange(i32),
}

impl fmt::Display for RewriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Decode(e) => write!(f, "cannot read the response: {e}"),
            Self::UnsupportedVersion { api, version } => {
                write!(f, "{api} v{version} is not in Kafka 4.1's schemas; its endpoints cannot be found")
            }
            Self::HostTooLong(len) => {
                write!(f, "a replacement host of {len} bytes does not fit a Kafka string")
            }
            Self::PortOutOfRange(port) => {
                write!(f, "the replacement port {port} does not fit a uint16 field")
            }
        }
    }
}

impl std::error::Error for RewriteError {}

impl From<DecodeError> for RewriteError {
    fn from(e: DecodeError) -> Self {
        Self::Decode(e)
    }
}

/// Maps a broker endpoint `(host, port)` to the one the client should use instead, or `None`
/// to keep it.
pub type EndpointMap<'a> = dyn FnMut(&str, i32) -> Option<(String, i32)> + 'a;

/// The positions of the `host` and `port` fields if `fields` (a struct, or a message's
/// top level) is a node endpoint at `version`.
pub(crate) fn endpoint_fields(fields: &[Field], version: i16) -> Option<(usize, usize)> {
    let present = |f: &Field| f.versions.contains(version) && !f.is_tagged_at(version);
    let host = fields.iter().position(|f| f.name == "host" && f.ty == FieldType::String && present(f))?;
    let port = fields.iter().position(|f| {
        f.name == "port" && matches!(f.ty, FieldType::Int32 | FieldType::Uint16) && present(f)
    })?;
    let not_a_node = LEFT_ALONE
        .iter()
        .any(|(_, path, _)| fields[host].path.strip_prefix(path).is_some_and(|rest| rest == ".host"));
    (!not_a_node).then_some((host, port))
}

/// Whether a value of type `ty` can hold a node endpoint at `version`.
pub(crate) fn type_has_endpoint(ty: &FieldType, version: i16) -> bool {
    match ty {
        FieldType::Struct(fields) => fields_have_endpoint(fields, version),
        FieldType::Array(element) => type_has_endpoint(element, version),
        _ => false,
    }
}

fn fields_have_endpoint(fields: &[Field], version: i16) -> bool {
    endpoint_fields(fields, version).is_some()
        || fields.iter().any(|f| f.versions.contains(version) && type_has_endpoint(&f.ty, version))
}

/// One response schema that holds endpoints in some version; `versions` has bit `v` set for
/// each version `v` < 64 that does.
struct Indexed {
    message: &'static Message,
    versions: u64,
}

/// The response schemas that carry endpoints, built once from the table.
fn index() -> &'static [Indexed] {
    static INDEX: OnceLock<Vec<Indexed>> = OnceLock::new();
    INDEX.get_or_init(|| {
        schema::messages()
            .iter()
            .filter(|m| m.kind == MessageKind::Response)
            .filter_map(|message| {
                let last = message.valid.1.min(63);
                let versions = (message.valid.0..=last)
                    .filter(|&v| fields_have_endpoint(message.fields, v))
                    .fold(0_u64, |bits, v| bits | 1 << v);
                (versions != 0).then_some(Indexed { message, versions })
            })
            .collect()
    })
}

/// Whether `api`'s responses carry node endpoints at `version` (what [`rewrite_response`]
/// replaces). Also true for a version the schemas lack of an API that carries them in others,
/// so that [`rewrite_response`] can say it could not rewrite it.
pub fn carries_endpoints(api: ApiKey, version: i16) -> bool {
    let mut known = false;
    for entry in index().iter().filter(|e| e.message.key == api.0) {
        known = true;
        if entry.message.valid.contains(version) {
            return has_version(entry, version);
        }
    }
    known && schema::find(api, MessageKind::Response, version).is_none()
}

fn has_version(entry: &Indexed, version: i16) -> bool {
    match u32::try_from(version) {
        Ok(v) if v < 64 => entry.versions & (1 << v) != 0,
        _ => fields_have_endpoint(entry.message.fields, version),
    }
}

/// Rewrites the endpoints in a response frame (without its size prefix) of `api` at `version`.
/// `Ok(None)`: nothing to change (the response carries no endpoints, or `map` kept them all),
/// so the original bytes are forwarded.
pub fn rewrite_response(
    api: ApiKey,
    version: i16,
    frame: &Bytes,
    map: &mut EndpointMap<'_>,
) -> Result<Option<Bytes>, RewriteError> {
    if !carries_endpoints(api, version) {
        return Ok(None);
    }
    let Some(message) = index()
        .iter()
        .find(|e| e.message.key == api.0 && e.message.valid.contains(version))
        .map(|e| e.message)
    else {
        return Err(RewriteError::UnsupportedVersion { api, version });
    };
    let header_version = schema::response_header_version(api, version).unwrap_or(0);
    let mut splice = Splice::new(frame, 0, message.flexible.contains(version), version);
    splice.header(header_version)?;
    splice.body(message.fields, map)?;
    Ok(splice.finish(message.name)?.map(Bytes::from))
}
