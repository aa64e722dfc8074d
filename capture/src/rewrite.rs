//! Broker endpoints in responses replaced, so that a client behind a proxy opens every
//! connection to the proxy: Metadata's `brokers`, FindCoordinator's `host`/`port` (v0–v3) and
//! `coordinators` (v4+), DescribeCluster's `brokers`. Only these responses are decoded and
//! re-encoded (at the version they were read, so the client reads them as it would have); every
//! other byte of the conversation passes unchanged.
//!
//! Not rewritten (say so where it matters): the `node_endpoints` tagged fields of Produce v10+
//! and Fetch v16+ responses (KIP-951: the new leader's address on NOT_LEADER errors; a client
//! that follows one connects to the broker directly), ShareFetch/ShareAcknowledge's, and
//! DescribeQuorum's controller listeners.

use std::fmt;

use bytes::Bytes;
use kafka_wire::protocol::frame::decode_response;
use kafka_wire::protocol::messages::{FindCoordinatorRequest, MetadataRequest};
use kafka_wire::protocol::{ApiKey, Body, DecodeError, EncodeError, Encoder, ResponseHeader};

use crate::describe_cluster;

/// The APIs whose responses carry broker endpoints that [`rewrite_response`] replaces.
pub const REWRITTEN_APIS: [ApiKey; 3] =
    [ApiKey::METADATA, ApiKey::FIND_COORDINATOR, ApiKey(describe_cluster::API_KEY)];

/// Whether responses of `api` carry endpoints [`rewrite_response`] replaces.
pub fn carries_endpoints(api: ApiKey) -> bool {
    REWRITTEN_APIS.contains(&api)
}

/// Why a response could not be rewritten (the caller forwards it unchanged and says so).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RewriteError {
    /// The response did not decode at the request's version.
    Decode(DecodeError),
    /// The rewritten response did not encode.
    Encode(EncodeError),
    /// DescribeCluster at a version this crate does not read.
    UnsupportedVersion {
        /// The API.
        api: ApiKey,
        /// The version.
        version: i16,
    },
}

impl fmt::Display for RewriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Decode(e) => write!(f, "cannot decode the response: {e}"),
            Self::Encode(e) => write!(f, "cannot encode the rewritten response: {e}"),
            Self::UnsupportedVersion { api, version } => {
                write!(f, "{api} v{version} is not a version kwire rewrites")
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

impl From<EncodeError> for RewriteError {
    fn from(e: EncodeError) -> Self {
        Self::Encode(e)
    }
}

/// Maps a broker endpoint `(host, port)` to the one the client should use instead, or `None`
/// to keep it.
pub type EndpointMap<'a> = dyn FnMut(&str, i32) -> Option<(String, i32)> + 'a;

/// Rewrites the endpoints in a response frame (without its size prefix) of `api` at `version`.
/// `Ok(None)`: nothing to change (the API carries no endpoints, or `map` kept them all), so the
/// original bytes are forwarded.
pub fn rewrite_response(
    api: ApiKey,
    version: i16,
    frame: &Bytes,
    map: &mut EndpointMap<'_>,
) -> Result<Option<Bytes>, RewriteError> {
    let mut changed = false;
    let mut replace = |host: &mut String, port: &mut i32| {
        if let Some((h, p)) = map(host, *port) {
            if *host != h || *port != p {
                *host = h;
                *port = p;
                changed = true;
            }
        }
    };
    let encoded = match api {
        ApiKey::METADATA => {
            let (header, mut body) = decode_response::<MetadataRequest>(frame.clone(), version)?;
            for broker in &mut body.brokers {
                replace(&mut broker.host, &mut broker.port);
            }
            encode(&header, &body, version)?
        }
        ApiKey::FIND_COORDINATOR => {
            let (header, mut body) = decode_response::<FindCoordinatorRequest>(frame.clone(), version)?;
            if let (Some(host), Some(port)) = (body.host.as_mut(), body.port.as_mut()) {
                // node_id -1 with an error code: no coordinator, nothing to point at.
                if body.node_id != Some(-1) {
                    replace(host, port);
                }
            }
            for coordinator in body.coordinators.iter_mut().flatten() {
                if coordinator.node_id != -1 {
                    replace(&mut coordinator.host, &mut coordinator.port);
                }
            }
            encode(&header, &body, version)?
        }
        ApiKey(describe_cluster::API_KEY) => {
            if !describe_cluster::VERSIONS.contains(&version) {
                return Err(RewriteError::UnsupportedVersion { api, version });
            }
            let mut response = describe_cluster::read(frame.clone(), version)?;
            for broker in &mut response.brokers {
                replace(&mut broker.host, &mut broker.port);
            }
            describe_cluster::write(&response, version)?
        }
        _ => return Ok(None),
    };
    Ok(changed.then(|| Bytes::from(encoded)))
}

/// A typed response frame (header and body) at `version`, without the size prefix.
fn encode<B: Body>(header: &ResponseHeader, body: &B, version: i16) -> Result<Vec<u8>, EncodeError> {
    let mut e = Encoder::new(B::SPEC.is_flexible(version));
    header.write(&mut e, B::SPEC.response_header_version(version))?;
    body.write(&mut e, version)?;
    Ok(e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_wire::protocol::messages::{Coordinator, FindCoordinatorResponse, MetadataResponse};
    use kafka_wire::protocol::{ErrorCode, TaggedFields};

    const BODIES_4_1: &str =
        include_str!("../../kafka-wire/src/protocol/messages/testdata/kafka-4.1.1-bodies.txt");

    fn unhex(hex: &str) -> Vec<u8> {
        (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex")).collect()
    }

    fn frame_of<B: Body>(body: &[u8], version: i16, correlation_id: i32) -> Bytes {
        let mut e = Encoder::new(B::SPEC.is_flexible(version));
        let header = ResponseHeader { correlation_id, tagged_fields: TaggedFields::default() };
        header.write(&mut e, B::SPEC.response_header_version(version)).unwrap();
        let mut out = e.into_inner();
        out.extend(body);
        Bytes::from(out)
    }

    #[allow(clippy::unnecessary_wraps)] // the shape of an `EndpointMap`
    fn to_proxy(host: &str, port: i32) -> Option<(String, i32)> {
        Some((format!("proxy-of-{host}"), port + 1000))
    }

    /// Kafka's own Metadata and FindCoordinator response bodies (every version in the 4.1.1
    /// fixtures): rewritten, they decode with every endpoint replaced and everything else
    /// equal; with an identity map they come back as the same bytes.
    #[test]
    fn kafkas_own_responses_keep_every_other_field_through_a_rewrite() {
        let mut checked = 0;
        for line in BODIES_4_1.lines() {
            let fields: Vec<&str> = line.split(' ').collect();
            let [api, "response", version, hex] = fields[..] else { continue };
            let version: i16 = version.parse().unwrap();
            let body = unhex(hex);
            match api {
                "Metadata" => {
                    let frame = frame_of::<MetadataResponse>(&body, version, 7);
                    let (_, before) = decode_response::<MetadataRequest>(frame.clone(), version).unwrap();
                    let kept = rewrite_response(ApiKey::METADATA, version, &frame, &mut |_, _| None).unwrap();
                    assert_eq!(kept, None);
                    let same =
                        rewrite_response(ApiKey::METADATA, version, &frame, &mut |h, p| Some((h.into(), p)));
                    assert_eq!(same, Ok(None));
                    let Some(rewritten) =
                        rewrite_response(ApiKey::METADATA, version, &frame, &mut to_proxy).unwrap()
                    else {
                        assert!(before.brokers.is_empty());
                        continue;
                    };
                    let (header, after) = decode_response::<MetadataRequest>(rewritten, version).unwrap();
                    assert_eq!(header.correlation_id, 7);
                    let mut expected = before.clone();
                    for b in &mut expected.brokers {
                        b.host = format!("proxy-of-{}", b.host);
                        b.port += 1000;
                    }
                    assert_eq!(after, expected, "Metadata v{version}");
                    checked += 1;
                }
                "FindCoordinator" => {
                    let frame = frame_of::<FindCoordinatorResponse>(&body, version, 8);
                    let (_, before) =
                        decode_response::<FindCoordinatorRequest>(frame.clone(), version).unwrap();
                    let Some(rewritten) =
                        rewrite_response(ApiKey::FIND_COORDINATOR, version, &frame, &mut to_proxy).unwrap()
                    else {
                        continue;
                    };
                    let (_, after) = decode_response::<FindCoordinatorRequest>(rewritten, version).unwrap();
                    assert_ne!(after, before);
                    checked += 1;
                }
                _ => {}
            }
        }
        assert!(checked >= 10, "only {checked} fixtures had endpoints");
    }

    #[test]
    fn find_coordinator_v0_and_v4_point_at_the_proxy_but_an_absent_coordinator_stays() {
        let v0 = FindCoordinatorResponse {
            error_code: Some(ErrorCode::NONE),
            node_id: Some(2),
            host: Some("broker-2".into()),
            port: Some(9092),
            ..Default::default()
        };
        let frame = frame_of::<FindCoordinatorResponse>(&v0.encode_body(0).unwrap(), 0, 1);
        let out = rewrite_response(ApiKey::FIND_COORDINATOR, 0, &frame, &mut to_proxy).unwrap().unwrap();
        let (_, after) = decode_response::<FindCoordinatorRequest>(out, 0).unwrap();
        assert_eq!((after.host.as_deref(), after.port), (Some("proxy-of-broker-2"), Some(10092)));

        let v4 = FindCoordinatorResponse {
            throttle_time_ms: Some(0),
            coordinators: Some(vec![
                Coordinator { key: "g".into(), node_id: 1, host: "b1".into(), port: 1, ..Default::default() },
                Coordinator {
                    key: "h".into(),
                    node_id: -1,
                    host: String::new(),
                    port: -1,
                    error_code: ErrorCode::COORDINATOR_NOT_AVAILABLE,
                    ..Default::default()
                },
            ]),
            ..Default::default()
        };
        let frame = frame_of::<FindCoordinatorResponse>(&v4.encode_body(4).unwrap(), 4, 1);
        let out = rewrite_response(ApiKey::FIND_COORDINATOR, 4, &frame, &mut to_proxy).unwrap().unwrap();
        let (_, after) = decode_response::<FindCoordinatorRequest>(out, 4).unwrap();
        let coordinators = after.coordinators.unwrap();
        assert_eq!((coordinators[0].host.as_str(), coordinators[0].port), ("proxy-of-b1", 1001));
        assert_eq!((coordinators[1].host.as_str(), coordinators[1].port), ("", -1));
    }

    fn describe_cluster_frame(version: i16) -> Vec<u8> {
        let mut f = 5_i32.to_be_bytes().to_vec();
        f.push(0); // header tags
        f.extend(0_i32.to_be_bytes());
        f.extend(0_i16.to_be_bytes());
        f.push(0); // null error message
        if version >= 1 {
            f.push(1);
        }
        f.push(4);
        f.extend(b"abc");
        f.extend(1_i32.to_be_bytes());
        f.push(3); // two brokers
        for (id, host) in [(1, b"h1"), (2, b"h2")] {
            f.extend(id_bytes(id));
            f.push(3);
            f.extend(host);
            f.extend(9092_i32.to_be_bytes());
            f.push(0);
            if version >= 2 {
                f.push(0);
            }
            f.push(0);
        }
        f.extend(i32::MIN.to_be_bytes());
        f.push(0);
        f
    }

    fn id_bytes(id: i32) -> [u8; 4] {
        id.to_be_bytes()
    }

    #[test]
    fn describe_cluster_brokers_point_at_the_proxy_in_every_version() {
        for version in 0..=2 {
            let frame = Bytes::from(describe_cluster_frame(version));
            let api = ApiKey(describe_cluster::API_KEY);
            let same =
                describe_cluster::write(&describe_cluster::read(frame.clone(), version).unwrap(), version);
            assert_eq!(same.unwrap(), frame.to_vec(), "v{version} round trip");
            let out = rewrite_response(api, version, &frame, &mut to_proxy).unwrap().unwrap();
            let after = describe_cluster::read(out, version).unwrap();
            let hosts: Vec<(&str, i32)> = after.brokers.iter().map(|b| (b.host.as_str(), b.port)).collect();
            assert_eq!(hosts, vec![("proxy-of-h1", 10092), ("proxy-of-h2", 10092)]);
        }
        assert!(matches!(
            rewrite_response(ApiKey(60), 3, &Bytes::new(), &mut to_proxy),
            Err(RewriteError::UnsupportedVersion { .. })
        ));
    }

    #[test]
    fn a_malformed_response_is_an_error_not_a_panic() {
        let err = rewrite_response(
            ApiKey::METADATA,
            12,
            &Bytes::from_static(&[0, 0, 0, 1, 0, 0xff]),
            &mut to_proxy,
        );
        assert!(matches!(err, Err(RewriteError::Decode(_))));
        assert_eq!(rewrite_response(ApiKey::FETCH, 12, &Bytes::new(), &mut to_proxy), Ok(None));
    }
}
