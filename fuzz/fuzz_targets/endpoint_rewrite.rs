//! `kwire proxy`'s endpoint rewrite (`kwire_capture::rewrite::rewrite_response`) on any response
//! bytes: it must never panic, and a response it rewrote must itself walk again (the spliced
//! lengths and tag sizes are consistent) and come back unchanged through an identity map.
//!
//! Byte 0 picks one of the APIs whose responses carry endpoints, byte 1 the version (0-18);
//! the rest is the response frame (header and body, no size prefix).
#![no_main]

use bytes::Bytes;
use kafka_wire::protocol::ApiKey;
use kwire_capture::rewrite::rewrite_response;
use libfuzzer_sys::fuzz_target;

/// Produce, Fetch, Metadata, FindCoordinator, Vote, BeginQuorumEpoch, EndQuorumEpoch,
/// DescribeQuorum, FetchSnapshot, DescribeCluster, ShareFetch, ShareAcknowledge, UpdateRaftVoter.
const APIS: [i16; 13] = [0, 1, 3, 10, 52, 53, 54, 55, 59, 60, 78, 79, 82];

#[allow(clippy::unnecessary_wraps)]
fn to_proxy(host: &str, port: i32) -> Option<(String, i32)> {
    Some((format!("proxy.{host}"), port.wrapping_add(1) & 0x7fff))
}

fuzz_target!(|data: &[u8]| {
    let [api, version, rest @ ..] = data else { return };
    let api = ApiKey(APIS[usize::from(*api) % APIS.len()]);
    let version = i16::from(*version % 19);
    let frame = Bytes::copy_from_slice(rest);
    if let Ok(Some(out)) = rewrite_response(api, version, &frame, &mut to_proxy) {
        assert!(rewrite_response(api, version, &out, &mut to_proxy).is_ok(), "a rewritten response walks");
        assert_eq!(rewrite_response(api, version, &out, &mut |h, p| Some((h.to_owned(), p))), Ok(None));
    }
});
