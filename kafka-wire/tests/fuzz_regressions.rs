//! Inputs the cargo-fuzz targets in `fuzz/` found that crashed a decoder or broke a round trip,
//! each kept as a named test with its bytes inline (see fuzz/README.md). The targets' input
//! layout: for `request`/`response`, byte 0 is the API key and byte 1 the version, then the
//! body; the bytes below are the body alone.

use std::fmt::Debug;

use bytes::Bytes;
use kafka_wire::protocol::messages::MetadataRequest;
use kafka_wire::protocol::Body;

/// The fuzz targets' property: a body that decodes encodes again, and those bytes decode to an
/// equal value. Returns whether `body` decoded at all.
fn round_trips<T: Body + PartialEq + Debug>(body: &'static [u8], version: i16) -> bool {
    let Ok(value) = T::decode_body(Bytes::from_static(body), version) else { return false };
    let encoded = value.encode_body(version).expect("a decoded body encodes");
    let again = T::decode_body(Bytes::from(encoded), version).expect("re-encoded bytes decode");
    assert_eq!(again, value, "{} v{version}: decode(encode(x)) != x", T::SPEC.name);
    true
}

/// Target `request`, input `03 00 ff ff ff ff`: a Metadata v0 request whose topics array is
/// null. v0's array is not nullable (Kafka refuses it); kwire read it as `None` ("all topics"),
/// which it writes at v0 as the empty array, which reads back as `Some([])`.
#[test]
fn metadata_v0_request_with_a_null_topics_array_is_an_error() {
    assert!(MetadataRequest::decode_body(Bytes::from_static(&[0xff, 0xff, 0xff, 0xff]), 0).is_err());
    assert!(!round_trips::<MetadataRequest>(&[0xff, 0xff, 0xff, 0xff], 0));
    // The empty v0 array (Kafka's "all topics" at v0) still reads, and round-trips.
    assert!(round_trips::<MetadataRequest>(&[0, 0, 0, 0], 0));
    // From v1 a null array is "all topics".
    let all = MetadataRequest::decode_body(Bytes::from_static(&[0xff, 0xff, 0xff, 0xff]), 1).unwrap();
    assert_eq!(all.topics, None);
    assert!(round_trips::<MetadataRequest>(&[0xff, 0xff, 0xff, 0xff], 1));
}
