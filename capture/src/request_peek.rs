//! [`peek_request`]: what a request frame's header says, read without decoding the body, so a
//! frame of any API — known to kwire or not — can be paired with its response.

use bytes::Bytes;
use kafka_wire::protocol::{ApiKey, Decoder};

/// Produce's first flexible version (request header v2 from there on).
const PRODUCE_FIRST_FLEXIBLE: i16 = 9;
/// ControlledShutdown v0 is the one request with header v0 (no client id).
const CONTROLLED_SHUTDOWN: ApiKey = ApiKey(7);

/// A request header's fields, and whether the broker will answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestSummary {
    /// The API key (any value: kwire need not know it).
    pub api: ApiKey,
    /// The API version.
    pub version: i16,
    /// The correlation id the response will carry.
    pub correlation_id: i32,
    /// The client id (header v1+), `None` when null, absent or not readable.
    pub client_id: Option<String>,
    /// False for a Produce request with `acks = 0`, which the broker never answers.
    pub expects_response: bool,
}

/// Reads a request frame's header (the frame without its size prefix). `None` when the frame is
/// shorter than the fixed part of a header (8 bytes).
pub fn peek_request(frame: &Bytes) -> Option<RequestSummary> {
    let fixed = frame.get(..8)?;
    let api = ApiKey(i16::from_be_bytes([fixed[0], fixed[1]]));
    let version = i16::from_be_bytes([fixed[2], fixed[3]]);
    let correlation_id = i32::from_be_bytes([fixed[4], fixed[5], fixed[6], fixed[7]]);
    let mut summary =
        RequestSummary { api, version, correlation_id, client_id: None, expects_response: true };
    if api == CONTROLLED_SHUTDOWN && version == 0 {
        return Some(summary);
    }
    let mut d = Decoder::new(frame.slice(8..));
    let Ok(client_id) = d.classic_nullable_string("client_id") else { return Some(summary) };
    summary.client_id = client_id;
    if api == ApiKey::PRODUCE {
        summary.expects_response = produce_acks(&mut d, version) != Some(0);
    }
    Some(summary)
}

/// A Produce request's `acks`, read after the client id.
fn produce_acks(d: &mut Decoder, version: i16) -> Option<i16> {
    if version >= PRODUCE_FIRST_FLEXIBLE {
        d.set_flexible(true);
        d.tagged_fields("header.tagged_fields").ok()?;
    }
    if version >= 3 {
        d.nullable_string("transactional_id").ok()?;
    }
    d.i16("acks").ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_wire::protocol::frame::encode_request;
    use kafka_wire::protocol::messages::{MetadataRequest, ProduceRequest};

    fn unprefixed(frame: Vec<u8>) -> Bytes {
        Bytes::from(frame).slice(4..)
    }

    #[test]
    fn a_requests_header_fields_are_read_without_its_body() {
        let frame =
            unprefixed(encode_request(&MetadataRequest::for_topics(&[]), 12, 77, Some("app-1")).unwrap());
        let summary = peek_request(&frame).unwrap();
        assert_eq!(
            summary,
            RequestSummary {
                api: ApiKey::METADATA,
                version: 12,
                correlation_id: 77,
                client_id: Some("app-1".into()),
                expects_response: true
            }
        );
    }

    #[test]
    fn produce_with_acks_zero_expects_no_response_in_classic_and_flexible_versions() {
        for version in [3, 8, 9, 11] {
            for (acks, expects) in [(0, false), (1, true), (-1, true)] {
                let request =
                    ProduceRequest { acks, transactional_id: Some("tx".into()), ..Default::default() };
                let frame = unprefixed(encode_request(&request, version, 1, Some("p")).unwrap());
                assert_eq!(peek_request(&frame).unwrap().expects_response, expects, "v{version} acks {acks}");
            }
        }
    }

    #[test]
    fn an_unknown_api_still_pairs_and_a_short_frame_is_none() {
        let mut frame = 1234_i16.to_be_bytes().to_vec();
        frame.extend(3_i16.to_be_bytes());
        frame.extend(9_i32.to_be_bytes());
        frame.extend((-1_i16).to_be_bytes());
        let summary = peek_request(&Bytes::from(frame)).unwrap();
        assert_eq!((summary.api, summary.version, summary.correlation_id), (ApiKey(1234), 3, 9));
        assert_eq!(summary.client_id, None);
        assert_eq!(peek_request(&Bytes::from_static(&[0, 1, 2])), None);
    }
}
