//! Kafka's own message definitions as data: every request, response and header of every API,
//! at every version, generated from the `common/message/*.json` files inside the kafka-clients
//! jars (`scripts/gen-schemas` writes [`table.rs`](self), with its provenance and licence).
//!
//! The table is the one list of *all* APIs (names, keys, versions, flexible versions); the
//! hand-written messages in [`messages`](super::messages), listed by
//! [`for_each_api!`](crate::for_each_api), are the typed fast path for the APIs the client
//! sends. With the `json` feature, one interpreter reads and writes any message described here
//! (the `decode` and `encode` modules); the JSON renderers in `protocol::json` fall back to it
//! for every API and version the typed codec lacks.

#[cfg(feature = "json")]
pub mod decode;
#[cfg(feature = "json")]
pub mod encode;
#[cfg(all(test, feature = "json"))]
mod interpreter_tests;
#[rustfmt::skip]
mod table;

use super::api::{ApiKey, ApiSpec, VersionRange};

/// An inclusive version range `min..=max` as the schema files write it (`"3+"` is
/// `Versions(3, i16::MAX)`, `"none"` is empty: `Versions(0, -1)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Versions(pub i16, pub i16);

/// `"0+"`: every version.
pub const ALL: Versions = Versions(0, i16::MAX);

impl Versions {
    /// Whether `version` is in the range.
    pub const fn contains(self, version: i16) -> bool {
        self.0 <= version && version <= self.1
    }
}

/// What a schema describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageKind {
    /// A request body.
    Request,
    /// A response body.
    Response,
    /// The request header or the response header (`RequestHeader`, `ResponseHeader`).
    Header,
}

/// The wire type of a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldType {
    /// `bool`: one byte, non-zero is true.
    Bool,
    /// `int8`.
    Int8,
    /// `int16`.
    Int16,
    /// `uint16`.
    Uint16,
    /// `int32`.
    Int32,
    /// `uint32`.
    Uint32,
    /// `int64`.
    Int64,
    /// `float64`: IEEE 754, big-endian.
    Float64,
    /// `string`: UTF-8 with an i16 length (a varint length + 1 in flexible versions).
    String,
    /// `uuid`: 16 bytes.
    Uuid,
    /// `bytes`: an i32 length (varint + 1 in flexible versions) and the bytes.
    Bytes,
    /// `records`: a record set, framed like `bytes`.
    Records,
    /// A nested struct, with its own tagged-field section in flexible versions.
    Struct(&'static [Field]),
    /// `[]T`: an i32 count (varint + 1 in flexible versions) and the elements.
    Array(&'static FieldType),
}

impl FieldType {
    /// The fewest bytes one value of this type takes on the wire (`flexible`: in a flexible
    /// version, where lengths and counts are varints of at least one byte) — the bound an
    /// element count is checked against before anything is allocated. Exact for fixed-size
    /// types.
    pub const fn min_size(&self, flexible: bool) -> usize {
        match self {
            FieldType::Bool | FieldType::Int8 | FieldType::Struct(_) => 1,
            FieldType::Int16 | FieldType::Uint16 => 2,
            FieldType::Int32 | FieldType::Uint32 => 4,
            FieldType::Int64 | FieldType::Float64 => 8,
            FieldType::Uuid => 16,
            _ if flexible => 1,
            FieldType::String => 2,
            FieldType::Bytes | FieldType::Records | FieldType::Array(_) => 4,
        }
    }
}

/// One field of a message or struct.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Kafka's name in snake case (`throttle_time_ms`): the JSON key.
    pub name: &'static str,
    /// The dotted path from the message (`topics.partitions.partition_index`), named in errors.
    pub path: &'static str,
    /// The wire type.
    pub ty: FieldType,
    /// The versions that have the field.
    pub versions: Versions,
    /// The versions in which it may be null.
    pub nullable: Versions,
    /// The tag, or −1 for a field that is never tagged.
    pub tag: i32,
    /// The versions in which it is a tagged field (written in the tag section, if not default).
    pub tagged: Versions,
    /// Written in the classic (non-compact) form even in flexible versions (the request
    /// header's `client_id`).
    pub classic: bool,
    /// Kafka's default as the schema writes it (`"-1"`, `"true"`, `"null"`, `"0x7fffffff"`),
    /// or empty for the type's zero value.
    pub default: &'static str,
}

impl Field {
    /// Whether this field sits in the tag section at `version` rather than in line.
    pub const fn is_tagged_at(&self, version: i16) -> bool {
        self.tag >= 0 && self.tagged.contains(version)
    }
}

/// One schema: a request, response or header, over the versions one jar defines it for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message {
    /// The API's name (`JoinGroup`), or `RequestHeader` / `ResponseHeader`.
    pub name: &'static str,
    /// The API key (−1 for a header).
    pub key: i16,
    /// Request, response or header.
    pub kind: MessageKind,
    /// The versions this entry covers.
    pub valid: Versions,
    /// The flexible (KIP-482) versions.
    pub flexible: Versions,
    /// The kafka-clients release the definition comes from (`"4.1.1"`, or `"3.9.1"` for
    /// versions Kafka 4.0 removed).
    pub source: &'static str,
    /// The top-level fields.
    pub fields: &'static [Field],
}

/// Every schema, ordered by API key, then request / response / header, then first version.
pub fn messages() -> &'static [Message] {
    table::MESSAGES
}

/// The schema of `key`'s request or response (`kind`) at `version`, if Kafka defines one.
pub fn find(key: ApiKey, kind: MessageKind, version: i16) -> Option<&'static Message> {
    table::MESSAGES.iter().find(|m| m.key == key.0 && m.kind == kind && m.valid.contains(version))
}

/// The request header (`request: true`) or response header schema at `header_version`.
pub fn header(request: bool, header_version: i16) -> Option<&'static Message> {
    let name = if request { "RequestHeader" } else { "ResponseHeader" };
    table::MESSAGES
        .iter()
        .find(|m| m.kind == MessageKind::Header && m.name == name && m.valid.contains(header_version))
}

/// Every API in the table as an [`ApiSpec`]: its versions across both jars and its first
/// flexible version, in key order.
pub fn api_specs() -> Vec<ApiSpec> {
    let mut out: Vec<ApiSpec> = Vec::new();
    for m in table::MESSAGES.iter().filter(|m| m.kind == MessageKind::Request) {
        let flexible_from = (m.flexible.0 <= m.flexible.1).then_some(m.flexible.0);
        match out.last_mut() {
            Some(last) if last.key.0 == m.key => {
                last.versions.min = last.versions.min.min(m.valid.0);
                last.versions.max = last.versions.max.max(m.valid.1);
                last.flexible_from = match (last.flexible_from, flexible_from) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                // The newest jar's name (4.1.1 renamed ListClientMetricsResources).
                if m.source == "4.1.1" {
                    last.name = m.name;
                }
            }
            _ => out.push(ApiSpec {
                key: ApiKey(m.key),
                name: m.name,
                versions: VersionRange::new(m.valid.0, m.valid.1),
                flexible_from,
            }),
        }
    }
    out
}

/// The request header version for `version` of `key`: 2 in flexible versions, 0 for
/// ControlledShutdown v0 (the one request older than client ids), 1 otherwise. `None` when
/// the table has no such request.
pub fn request_header_version(key: ApiKey, version: i16) -> Option<i16> {
    let m = find(key, MessageKind::Request, version)?;
    let classic = i16::from(!(key == ApiKey::CONTROLLED_SHUTDOWN && version == 0));
    Some(if m.flexible.contains(version) { 2 } else { classic })
}

/// The response header version for `version` of `key`: 1 in flexible versions, except
/// ApiVersions, whose response header is always v0 (KIP-511) so that any client can read it.
pub fn response_header_version(key: ApiKey, version: i16) -> Option<i16> {
    let m = find(key, MessageKind::Response, version)?;
    Some(i16::from(key != ApiKey::API_VERSIONS && m.flexible.contains(version)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_holds_every_api_kafka_4_1_defines_and_those_kafka_4_removed() {
        let specs = api_specs();
        let keys: Vec<i16> = specs.iter().map(|s| s.key.0).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(keys, sorted, "one spec per key, in key order");
        // 4.1.1's request schemas with versions (89), plus LeaderAndIsr, StopReplica,
        // UpdateMetadata and ControlledShutdown from 3.9.1.
        assert_eq!(specs.len(), 93);
        let produce = specs.iter().find(|s| s.key == ApiKey::PRODUCE).unwrap();
        assert_eq!((produce.versions, produce.flexible_from), (VersionRange::new(0, 13), Some(9)));
        let join = specs.iter().find(|s| s.key == ApiKey::JOIN_GROUP).unwrap();
        assert_eq!(join.name, "JoinGroup");
        let leader_and_isr = specs.iter().find(|s| s.key == ApiKey::LEADER_AND_ISR).unwrap();
        assert_eq!(leader_and_isr.versions, VersionRange::new(0, 7));
        assert_eq!(find(ApiKey::PRODUCE, MessageKind::Request, 2).unwrap().source, "3.9.1");
        assert_eq!(find(ApiKey::PRODUCE, MessageKind::Request, 3).unwrap().source, "4.1.1");
    }

    #[test]
    fn every_request_has_its_response_at_every_version() {
        for spec in api_specs() {
            for v in spec.versions.min..=spec.versions.max {
                assert!(find(spec.key, MessageKind::Request, v).is_some(), "{} v{v} request", spec.name);
                assert!(find(spec.key, MessageKind::Response, v).is_some(), "{} v{v} response", spec.name);
            }
        }
    }

    #[test]
    fn every_api_key_constant_names_the_api_the_table_names() {
        for spec in api_specs() {
            assert_eq!(spec.key.name(), Some(spec.name), "API key {}", spec.key.0);
        }
    }

    #[test]
    fn header_versions_follow_flexibility_with_the_two_exceptions() {
        assert_eq!(request_header_version(ApiKey::METADATA, 8), Some(1));
        assert_eq!(request_header_version(ApiKey::METADATA, 9), Some(2));
        assert_eq!(request_header_version(ApiKey::CONTROLLED_SHUTDOWN, 0), Some(0));
        assert_eq!(response_header_version(ApiKey::METADATA, 9), Some(1));
        assert_eq!(response_header_version(ApiKey::API_VERSIONS, 3), Some(0));
        assert_eq!(request_header_version(ApiKey(999), 0), None);
        for v in 0..=2 {
            assert!(header(true, v).is_some(), "request header v{v}");
        }
        assert!(header(false, 0).is_some() && header(false, 1).is_some());
        let client_id = header(true, 2).unwrap().fields.iter().find(|f| f.name == "client_id").unwrap();
        assert!(client_id.classic);
    }
}
