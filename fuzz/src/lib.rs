//! Shared code of the kafka-wire fuzz targets: how an input picks an API and a version, the
//! dispatch over every API (expanded from kafka-wire's one list, `for_each_api!`), and the
//! round-trip properties each target asserts.
//!
//! Input layout of `request` and `response`: byte 0 is the API key (any other value picks an
//! API by index), byte 1 the version (out of range: folded into the API's range), and the rest
//! is the body — or, for the `decode_request`/`decode_response` half, the header and body.

use std::fmt::Debug;
use std::sync::OnceLock;

use bytes::Bytes;
use kafka_wire::protocol::frame::{decode_request, decode_response};
use kafka_wire::protocol::messages::*;
use kafka_wire::protocol::records::{
    BatchView, Compression, DecodeOptions, LegacyBatch, RecordBatch, RecordSet, RecordSetBatch, RecordView,
};
use kafka_wire::protocol::registry::supported_apis;
use kafka_wire::protocol::{ApiKey, ApiSpec, Body, DecodeError, Request};

/// A request value to seed the message targets with: `Default` where the request has one.
macro_rules! sample_request {
    (MetadataRequest) => {
        MetadataRequest::for_topics(&["topic".to_owned()])
    };
    ($req:ident) => {
        <$req>::default()
    };
}

fn specs() -> &'static [ApiSpec] {
    static SPECS: OnceLock<Vec<ApiSpec>> = OnceLock::new();
    SPECS.get_or_init(supported_apis)
}

/// Splits an input into (API, version, rest), or `None` if it is shorter than two bytes.
pub fn pick_api(data: &[u8]) -> Option<(ApiSpec, i16, &[u8])> {
    let [key, version, rest @ ..] = data else { return None };
    let specs = specs();
    let spec = specs
        .iter()
        .find(|s| s.key.0 == i16::from(*key))
        .copied()
        .unwrap_or(specs[usize::from(*key) % specs.len()]);
    let version = i16::from(*version);
    let version = if spec.versions.contains(version) {
        version
    } else {
        let span = spec.versions.max - spec.versions.min + 1;
        spec.versions.min + version % span
    };
    Some((spec, version, rest))
}

/// decode(encode(x)) == x, and encoding is a fixpoint: a value that decodes must also encode
/// (at the version it was read at), and its bytes must read back to the same value.
pub fn check_body_round_trip<T: Body + PartialEq + Debug>(value: &T, version: i16) {
    let name = T::SPEC.name;
    let encoded = value
        .encode_body(version)
        .unwrap_or_else(|e| panic!("{name} v{version}: decoded but does not encode: {e}\n{value:?}"));
    let again = T::decode_body(Bytes::from(encoded.clone()), version)
        .unwrap_or_else(|e| panic!("{name} v{version}: re-encoded bytes do not decode: {e}\n{value:?}"));
    assert_eq!(&again, value, "{name} v{version}: decode(encode(x)) != x");
    let twice = again.encode_body(version).expect("encodes once, encodes twice");
    assert_eq!(twice, encoded, "{name} v{version}: encoding is not a fixpoint");
}

fn body<T: Body + PartialEq + Debug>(bytes: &Bytes, version: i16) {
    if let Ok(value) = T::decode_body(bytes.clone(), version) {
        check_body_round_trip(&value, version);
    }
}

fn response_of<R: Request>(bytes: &Bytes, version: i16)
where
    R::Response: PartialEq + Debug,
{
    body::<R::Response>(bytes, version);
    if let Ok((_header, value)) = decode_response::<R>(bytes.clone(), version) {
        check_body_round_trip(&value, version);
    }
}

fn request_of<R: Request + PartialEq + Debug>(bytes: &Bytes, version: i16) {
    body::<R>(bytes, version);
    if let Ok((header, value)) = decode_request::<R>(bytes.clone()) {
        check_body_round_trip(&value, header.api_version);
    }
}

macro_rules! dispatch {
    ($(($key:literal, $name:ident, $req:ident, $resp:ident)),* $(,)?) => {
        /// Decodes `rest` as the response body of `spec` at `version`, and as a whole response
        /// frame (header + body), checking the round trip of whatever decodes.
        pub fn response(spec: ApiSpec, version: i16, rest: &Bytes) {
            $(if spec.key == <$req as Body>::SPEC.key {
                return response_of::<$req>(rest, version);
            })*
            unreachable!("{}: supported_apis() expands from the same list", spec.name);
        }

        /// Decodes `rest` as the request body of `spec` at `version`, and as a whole request
        /// frame (whose header names its own version), checking the round trip of whatever decodes.
        pub fn request(spec: ApiSpec, version: i16, rest: &Bytes) {
            $(if spec.key == <$req as Body>::SPEC.key {
                return request_of::<$req>(rest, version);
            })*
            unreachable!("{}: supported_apis() expands from the same list", spec.name);
        }

        /// The typed decoder of `api`'s responses on `frame` (header and body, no size prefix)
        /// at `version`; `None` where kwire has no typed messages for that API or version.
        pub fn typed_response(api: ApiKey, version: i16, frame: &Bytes) -> Option<Result<(), DecodeError>> {
            $(if api == <$req as Body>::SPEC.key {
                if !<$req as Body>::SPEC.versions.contains(version) {
                    return None;
                }
                return Some(decode_response::<$req>(frame.clone(), version).map(|_| ()));
            })*
            None
        }

        /// Sample (mostly default-valued) request and response bodies for every API and version: seed inputs
        /// (with the `pick_api` prefix) for the message targets.
        pub fn default_bodies() -> Vec<(&'static str, bool, i16, Vec<u8>)> {
            let mut out = Vec::new();
            $(
                let spec = <$req as Body>::SPEC;
                for version in spec.versions.min..=spec.versions.max {
                    if let Ok(b) = sample_request!($req).encode_body(version) {
                        out.push((spec.name, true, version, b));
                    }
                    if let Ok(b) = <$resp>::default().encode_body(version) {
                        out.push((spec.name, false, version, b));
                    }
                }
            )*
            out
        }
    };
}

// Every API kwire implements: the one list, kafka-wire's `for_each_api!`.
kafka_wire::for_each_api!(dispatch);

/// Decode options for the record targets: a 4 MiB decompression budget (well under the 256 MB
/// RSS limit even with the codecs' own buffers), CRC checks on or off as the input says (off
/// lets the fuzzer past the checksum into the records).
pub fn record_options(flags: u8) -> DecodeOptions {
    DecodeOptions {
        max_decompressed_size: 4 * 1024 * 1024,
        max_legacy_nesting: usize::from((flags >> 1) & 3),
        verify_crc: flags & 1 == 1,
    }
}

/// A batch that decodes must encode, and read back equal (with its CRC now checked).
pub fn check_batch_round_trip(batch: &RecordBatch, opts: &DecodeOptions) {
    let bytes =
        batch.to_bytes().unwrap_or_else(|e| panic!("batch decoded but does not encode: {e}\n{batch:?}"));
    let opts = DecodeOptions { verify_crc: true, ..*opts };
    let again = RecordBatch::decode(bytes, &opts)
        .unwrap_or_else(|e| panic!("re-encoded batch does not decode: {e}\n{batch:?}"));
    assert_eq!(&again, batch, "record batch: decode(encode(x)) != x");
}

/// The borrowed view and the owning decoder agree on `bytes`: both fail, or both succeed with
/// the same header and records (the view's records, its headers included, copied out).
pub fn check_view_matches_owning(bytes: &[u8], opts: &DecodeOptions) {
    let owning = RecordBatch::decode(Bytes::copy_from_slice(bytes), opts);
    let viewed = BatchView::parse(bytes, opts).and_then(|view| {
        let records = view.records().map(|r| r.map(RecordView::to_record)).collect::<Result<Vec<_>, _>>()?;
        Ok((view.header, records))
    });
    match (owning, viewed) {
        (Ok(batch), Ok((header, records))) => {
            assert_eq!(
                (header.base_offset, header.attributes, header.last_offset_delta, header.max_timestamp),
                (batch.base_offset, batch.attributes, batch.last_offset_delta, batch.max_timestamp),
                "view header != owning header"
            );
            assert_eq!(records, batch.records, "view records != owning records");
        }
        (Err(_), Err(_)) => {}
        (owning, viewed) => panic!("owning decoder and view disagree: {owning:?} vs {viewed:?}"),
    }
}

/// Re-encodes a record set whose entries kwire can write back (magic-2 batches and plain
/// legacy messages; compressed legacy wrappers are skipped) and checks it reads back equal.
pub fn check_set_round_trip(set: &RecordSet, opts: &DecodeOptions) {
    let mut out = Vec::new();
    for entry in &set.batches {
        match entry {
            RecordSetBatch::V2(b) => b.encode(&mut out).expect("a decoded batch encodes"),
            RecordSetBatch::Legacy(LegacyBatch { compression: Compression::None, messages }) => {
                for m in messages {
                    m.encode(&mut out).expect("a decoded legacy message encodes");
                }
            }
            RecordSetBatch::Legacy(_) => return,
        }
    }
    let opts = DecodeOptions { verify_crc: true, ..*opts };
    let again = RecordSet::decode(&Bytes::from(out), &opts)
        .unwrap_or_else(|e| panic!("re-encoded record set does not decode: {e}\n{set:?}"));
    assert_eq!(again.truncated_tail_bytes, 0);
    assert_eq!(again.batches, set.batches, "record set: decode(encode(x)) != x");
}

/// The decompressors' output cap in the `decompress_*` targets.
pub const DECOMPRESS_CAP: usize = 256 * 1024;

/// Decompresses `input` under [`DECOMPRESS_CAP`]; whatever comes out must compress and
/// decompress back to itself.
pub fn decompress(codec: Compression, input: &[u8]) {
    use kafka_wire::protocol::records::compression;
    let Ok(out) = compression::decompress(codec, input, DECOMPRESS_CAP) else { return };
    assert!(out.len() <= DECOMPRESS_CAP);
    let mut packed = Vec::new();
    compression::compress(codec, &out, &mut packed).expect("compresses");
    let back = compression::decompress(codec, &packed, out.len()).expect("own output decompresses");
    assert!(back == out, "{codec}: decompress(compress(x)) != x");
}

/// The streaming decompressor against the whole-buffer one on the same input and cap, read in
/// pieces of `step` bytes: the same output, or both refuse the input.
pub fn streaming_matches_whole(codec: Compression, input: &[u8], step: usize) {
    use kafka_wire::protocol::records::{compression, Decompressor};
    let whole = compression::decompress(codec, input, DECOMPRESS_CAP);
    let streamed = Decompressor::new(codec, Bytes::copy_from_slice(input), DECOMPRESS_CAP).and_then(|mut d| {
        let (mut out, mut buf) = (Vec::new(), vec![0u8; step.max(1)]);
        loop {
            let n = d.read(&mut buf)?;
            assert!(
                d.produced() <= DECOMPRESS_CAP + 1,
                "{codec}: {} bytes buffered past the cap",
                d.produced()
            );
            if n == 0 {
                return Ok(out);
            }
            out.extend_from_slice(&buf[..n]);
        }
    });
    match (whole, streamed) {
        (Ok(a), Ok(b)) => assert!(a == b, "{codec}: streamed output differs from whole"),
        (Err(_), Err(_)) => {}
        (whole, streamed) => {
            panic!("{codec}: whole {:?} vs streamed {:?}", whole.map(|v| v.len()), streamed.map(|v| v.len()))
        }
    }
}

/// A batch read as it decompresses ([`StreamedBatch`], `chunk_size` bytes at a time) against
/// the view that decompresses it whole: both fail, or both give the same records. The input's
/// length field is set to its length first (a stream is handed an entry a record set already
/// split off; the view checks the length itself).
pub fn check_streamed_matches_view(bytes: &[u8], opts: &DecodeOptions, chunk_size: usize) {
    use kafka_wire::protocol::records::StreamedBatch;
    let mut bytes = bytes.to_vec();
    let Some(len) = bytes.len().checked_sub(12).and_then(|n| i32::try_from(n).ok()) else { return };
    bytes[8..12].copy_from_slice(&len.to_be_bytes());
    let viewed = BatchView::parse(&bytes, opts)
        .and_then(|view| view.records().map(|r| r.map(RecordView::to_record)).collect::<Result<Vec<_>, _>>());
    let streamed = StreamedBatch::parse_entry(&bytes, 0, opts, chunk_size).and_then(|mut batch| {
        let mut records = Vec::new();
        while let Some(r) = batch.next_record() {
            let (record, chunk) = r?;
            assert!(chunk.len() <= opts.max_decompressed_size, "a chunk past the cap");
            records.push(record.to_record_in(chunk));
        }
        Ok(records)
    });
    match (viewed, streamed) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "streamed records != view records"),
        (Err(_), Err(_)) => {}
        (viewed, streamed) => panic!("view and stream disagree: {viewed:?} vs {streamed:?}"),
    }
}

/// The group every `file_store` input is decoded as (the seeds are documents of this group).
pub const FILE_STORE_GROUP: &str = "g";

/// The file offset store's parser on `data`: no panic, and an accepted document encodes as
/// kwire writes it and reads back to the same offsets.
pub fn file_store_document(data: &[u8]) {
    use kwire_stores::file;
    let path = std::path::Path::new("fuzz-input.json");
    let Ok(offsets) = file::decode(path, data, FILE_STORE_GROUP) else { return };
    let written = file::encode(FILE_STORE_GROUP, &offsets);
    let again = file::decode(path, &written, FILE_STORE_GROUP)
        .unwrap_or_else(|e| panic!("kwire's own document does not decode: {e}"));
    let key = |o: &offset_store::StoredOffset| (o.topic.clone(), o.partition);
    let (mut want, mut got) = (offsets, again);
    want.sort_by_key(key);
    got.sort_by_key(key);
    assert_eq!(got, want, "file store: decode(encode(x)) != x");
}

/// The kafka-consumer-groups CSV reader on `data` (as UTF-8; other bytes are not text): no
/// panic, and accepted entries print and read back equal, in the same order.
pub fn consumer_groups_csv(data: &[u8]) {
    use offset_engine::formats::{from_csv, to_csv};
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(entries) = from_csv(text) else { return };
    let again = from_csv(&to_csv(&entries)).unwrap_or_else(|e| panic!("printed CSV does not read back: {e}"));
    assert_eq!(again, entries, "csv: from_csv(to_csv(x)) != x");
}

/// The broker's SCRAM messages (`kafka_wire::protocol::scram`) on `data`: byte 0 is the length
/// of the client nonce taken from the front of the rest, the remainder is the broker's message.
/// No panic, and what parses keeps the parsers' promises: the combined nonce extends the
/// client's, the iteration count is within the caps, the salt and signature are not empty.
pub fn scram_server_message(data: &[u8]) {
    use kafka_wire::protocol::scram::{
        parse_server_final, parse_server_first, MAX_ITERATIONS, MIN_ITERATIONS,
    };
    let [nonce_len, rest @ ..] = data else { return };
    let (nonce, message) = rest.split_at(usize::from(*nonce_len).min(rest.len()));
    let Ok(nonce) = std::str::from_utf8(nonce) else { return };
    if let Ok(first) = parse_server_first(message, nonce) {
        assert!(first.nonce.starts_with(nonce) && first.nonce.len() > nonce.len(), "{first:?}");
        assert!((MIN_ITERATIONS..=MAX_ITERATIONS).contains(&first.iterations), "{first:?}");
        assert!(!first.salt_base64.is_empty(), "{first:?}");
    }
    if let Ok(last) = parse_server_final(message) {
        assert!(!last.verifier_base64.is_empty(), "{last:?}");
    }
}

/// The consumer protocol (`kafka_wire::protocol::consumer_protocol`, the bytes inside JoinGroup
/// metadata and SyncGroup assignments, which a group leader reads from every member) on
/// `data`, as a subscription and as an assignment: no panic, and what decodes keeps the
/// decoders' promises — it encodes at the version it was read as, to the input's own fields
/// (the input less its version prefix and the bytes left unread), and those bytes read back to
/// the same value with nothing left over.
pub fn consumer_protocol(data: &[u8]) {
    use kafka_wire::protocol::consumer_protocol::{ConsumerAssignment, ConsumerSubscription, Decoded};
    fn check<T: PartialEq + Debug>(
        data: &[u8],
        read: Result<Decoded<T>, kafka_wire::protocol::DecodeError>,
        encode: impl Fn(&T, i16) -> Vec<u8>,
        decode: impl Fn(Bytes) -> Result<Decoded<T>, kafka_wire::protocol::DecodeError>,
    ) {
        let Ok(read) = read else { return };
        let version = read.read_as();
        assert!(version <= read.version && read.ignored_bytes <= data.len() - 2, "{read:?}");
        let again = encode(&read.value, version);
        assert_eq!(again[..2], version.to_be_bytes(), "{read:?}");
        assert_eq!(
            again[2..],
            data[2..data.len() - read.ignored_bytes],
            "re-encoded fields differ: {read:?}"
        );
        let twice =
            decode(Bytes::from(again)).unwrap_or_else(|e| panic!("re-encoded bytes do not decode: {e}"));
        assert_eq!(twice, Decoded { version, value: read.value, ignored_bytes: 0 }, "decode(encode(x)) != x");
    }
    let input = Bytes::copy_from_slice(data);
    check(
        data,
        ConsumerSubscription::decode(input.clone()),
        |s, v| s.encode(v).expect("a decoded subscription encodes"),
        ConsumerSubscription::decode,
    );
    check(
        data,
        ConsumerAssignment::decode(input),
        |a, v| a.encode(v).expect("a decoded assignment encodes"),
        ConsumerAssignment::decode,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_consumer_protocol_property_holds_for_short_higher_and_kafka_written_inputs() {
        consumer_protocol(&[]);
        consumer_protocol(&[0]);
        consumer_protocol(&[0xff, 0xff, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
        // A v9 assignment (read as v3) with a later field after it.
        consumer_protocol(&[0, 9, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1, 2, 3]);
        // A v1 subscription kafka-clients 4.1.1 wrote (kafka-4.1.1-consumer-protocol.txt).
        let hex = "00010000000000000000000000010002c3a900000002718e68142c8a9b10";
        let bytes: Vec<u8> =
            (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
        consumer_protocol(&bytes);
    }

    #[test]
    fn the_rfc_7677_server_first_message_passes_the_scram_property() {
        let mut data = vec![20];
        data.extend_from_slice(b"rOprNGfwEbeRWgbNEkqO");
        data.extend_from_slice(
            b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
        );
        scram_server_message(&data);
        scram_server_message(&[]);
        scram_server_message(&[255, b'v', b'=']);
    }

    #[test]
    fn the_fault_properties_hold_for_the_book_s_rules_a_flag_and_an_answered_request() {
        fault_rules(
            b"[[rule]]\napi = \"Produce\"\ntopic = \"orders\"\nfirst = 3\naction = \"error\"\n\
              error = \"NOT_LEADER_OR_FOLLOWER\"\n",
        );
        fault_rules(b"api=Produce|Fetch,version=3+,action=delay,delay_ms=5,direction=response");
        fault_rules(b"rule = [{ action = \"cut-before\" }]\n");
        fault_rules(&[0xff]);
        for data in [&[][..], &[0], &[0, 1], &[1, 3, 12, 0], &[2, 12, 0, 0]] {
            fault_answers(data);
        }
        // A Metadata v12 request, answered with NOT_COORDINATOR (byte 1: the code plus 1).
        let request = kafka_wire::protocol::frame::encode_request(
            &MetadataRequest::for_topics(&["t".to_owned()]),
            12,
            7,
            Some("c"),
        )
        .unwrap();
        fault_answers(&[&[0, 17][..], &request[4..]].concat());
    }

    #[test]
    fn every_supported_api_is_dispatched() {
        for spec in specs() {
            let bytes = Bytes::new();
            response(*spec, spec.versions.min, &bytes);
            request(*spec, spec.versions.min, &bytes);
        }
    }

    #[test]
    fn pick_api_keeps_a_supported_key_and_version_and_folds_others() {
        let (spec, v, rest) = pick_api(&[2, 5, 9]).unwrap();
        assert_eq!((spec.name, v, rest), ("ListOffsets", 5, &[9][..]));
        let (spec, v, _) = pick_api(&[255, 255]).unwrap();
        assert!(spec.versions.contains(v), "{} v{v}", spec.name);
    }
}

// ---------------------------------------------------------------------------------------------
// The schema interpreter (every API Kafka defines)

pub use kafka_wire::protocol::json::Kind;

fn all_specs() -> &'static [ApiSpec] {
    static SPECS: OnceLock<Vec<ApiSpec>> = OnceLock::new();
    SPECS.get_or_init(kafka_wire::protocol::registry::all_apis)
}

/// [`pick_api`] over every API of kafka-wire's schema table instead of the typed ones.
pub fn pick_any_api(data: &[u8]) -> Option<(ApiSpec, i16, &[u8])> {
    let [key, version, rest @ ..] = data else { return None };
    let specs = all_specs();
    let spec = specs
        .iter()
        .find(|s| s.key.0 == i16::from(*key))
        .copied()
        .unwrap_or(specs[usize::from(*key) % specs.len()]);
    let span = spec.versions.max - spec.versions.min + 1;
    let version = i16::from(*version);
    let version = if spec.versions.contains(version) { version } else { spec.versions.min + version % span };
    Some((spec, version, rest))
}

/// The schema interpreter on `rest` as a `kind` body of `spec` at `version` and as a whole
/// frame (a request frame names its own API and version; a response frame is read as
/// `spec`'s): whatever decodes must encode from its JSON, those bytes must decode to the same
/// JSON, and encoding must be a fixpoint. Rendering records decoded must not panic either.
pub fn schema(spec: ApiSpec, kind: Kind, version: i16, rest: &Bytes) {
    use kafka_wire::protocol::schema::{decode, encode};
    let name = spec.name;
    if let Ok(json) = decode::body_to_json(spec.key, kind, version, rest.clone(), false) {
        let bytes = encode::json_to_body(spec.key, kind, version, &json).unwrap_or_else(|e| {
            panic!("{name} {kind:?} v{version}: decoded but does not encode: {e}\n{json}")
        });
        let again = decode::body_to_json(spec.key, kind, version, Bytes::from(bytes.clone()), false)
            .unwrap_or_else(|e| {
                panic!("{name} {kind:?} v{version}: re-encoded bytes do not decode: {e}\n{json}")
            });
        assert_eq!(again, json, "{name} {kind:?} v{version}: decode(encode(x)) != x");
        let twice =
            encode::json_to_body(spec.key, kind, version, &again).expect("encodes once, encodes twice");
        assert_eq!(twice, bytes, "{name} {kind:?} v{version}: encoding is not a fixpoint");
        let _ = decode::body_to_json(spec.key, kind, version, rest.clone(), true);
    }
    let (frame, response) = match kind {
        Kind::Request => (decode::request_frame_to_json(rest.clone(), false), None),
        Kind::Response => (
            decode::response_frame_to_json(spec.key, version, rest.clone(), false),
            Some((spec.key, version)),
        ),
    };
    if let Ok(frame) = frame {
        let bytes = encode::json_to_frame(&frame.json, response).unwrap_or_else(|e| {
            panic!("{name} {kind:?} frame: decoded but does not encode: {e}\n{}", frame.json)
        });
        let again = match kind {
            Kind::Request => decode::request_frame_to_json(Bytes::from(bytes), false),
            Kind::Response => decode::response_frame_to_json(spec.key, version, Bytes::from(bytes), false),
        }
        .unwrap_or_else(|e| {
            panic!("{name} {kind:?} frame: re-encoded bytes do not decode: {e}\n{}", frame.json)
        });
        assert_eq!(again, frame, "{name} {kind:?} frame: decode(encode(x)) != x");
    }
}

/// The consumer-group member's machines driven by `data` as answers from a coordinator
/// (`kafka_client::fuzzing::member_answers`): no panic.
pub fn member_answers(data: &[u8]) {
    kafka_client::fuzzing::member_answers(data);
}

// ---------------------------------------------------------------------------------------------
// `kwire proxy`'s fault injection (kwire-faults)

/// The path every `fault_rules` input is read as, which its errors and rules must name.
pub const FAULT_RULES_PATH: &str = "fuzz.toml";

/// The position every `fault_rules` input is read at as a `--fault` flag.
const FAULT_FLAG_POSITION: usize = 3;

/// The fault rules' parsers (`kwire_faults::rules::parse_file`, `parse_flag` and
/// `kwire_faults::scenario::parse_scenario`) on `data` as text (other bytes are not text): no
/// panic, and what the parsers promise —
/// - every error names where: the file (`fuzz.toml...`) or the flag (`--fault #3: `);
/// - each rule of a file names the line of its own `[[rule]]` header (or inline table), as
///   toml's own parser places it;
/// - a rules file is a scenario without settings: what `parse_file` reads, `parse_scenario`
///   reads to the same rules;
/// - the two spellings read alike: a flag that reads, written as a `[[rule]]` table of the same
///   keys and values, reads to the same selector, trigger and action.
pub fn fault_rules(data: &[u8]) {
    use kwire_faults::rules::{parse_file, parse_flag};
    use kwire_faults::scenario::{parse_scenario, Scenario};
    let Ok(text) = std::str::from_utf8(data) else { return };
    let path = FAULT_RULES_PATH;

    let file = parse_file(text, path);
    match &file {
        Ok(rules) => {
            let lines = rule_lines(text);
            assert_eq!(lines.len(), rules.len(), "one place per rule: {lines:?}");
            for (rule, line) in rules.iter().zip(&lines) {
                assert_eq!(rule.origin, format!("{path}:{line}"), "the rule's origin is its own line");
            }
        }
        Err(e) => assert!(e.starts_with(path), "a file's error names it: {e}"),
    }

    match parse_scenario(text, path) {
        Ok(scenario) => {
            if let Ok(rules) = file {
                assert_eq!(scenario, Scenario { rules, ..Scenario::default() }, "a rules file is a scenario");
            }
        }
        Err(e) => {
            assert!(e.starts_with(path), "a scenario's error names it: {e}");
            assert!(file.is_err(), "a rules file the scenario parser refuses: {e}");
        }
    }

    let prefix = format!("--fault #{FAULT_FLAG_POSITION}");
    match parse_flag(text, FAULT_FLAG_POSITION) {
        Ok(rule) => {
            assert_eq!(rule.origin, prefix);
            let table = flag_as_table(text);
            let again = parse_file(&table, path)
                .unwrap_or_else(|e| panic!("the flag reads, its [[rule]] table does not: {e}\n{table}"));
            assert_eq!(again.len(), 1, "{table}");
            let again = &again[0];
            assert_eq!(
                (&again.selector, &again.trigger, &again.action),
                (&rule.selector, &rule.trigger, &rule.action),
                "the flag and its [[rule]] table read differently:\n{table}"
            );
        }
        Err(e) => assert!(e.starts_with(&format!("{prefix}: ")), "a flag's error names its position: {e}"),
    }
}

/// The line of each rule of a TOML document that has only `rule` at its top (a `[[rule]]`
/// header, or the inline table in a `rule = [...]` array), as toml's own parser spans them.
fn rule_lines(text: &str) -> Vec<usize> {
    let doc = toml::de::DeTable::parse(text).expect("parse_file read it");
    let Some(rules) = doc.get_ref().get("rule").and_then(|r| r.get_ref().as_array()) else {
        return Vec::new();
    };
    let line = |at: usize| text[..at].matches('\n').count() + 1;
    rules.iter().map(|rule| line(rule.span().start)).collect()
}

/// A `--fault` text as one `[[rule]]` table of the same keys and values (split as the flag
/// parser splits it: pairs at `,`, key and value at the first `=`, `|` in a list for `,`).
fn flag_as_table(text: &str) -> String {
    let quoted = |s: &str| {
        let mut out = String::from("\"");
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    };
    let mut table = String::from("[[rule]]\n");
    for pair in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (k, v) = pair.split_once('=').expect("the flag read: every pair is key=value");
        table.push_str(&format!("{} = {}\n", quoted(k.trim()), quoted(&v.trim().replace('|', ","))));
    }
    table
}

/// The field names `fault_answers` rewrites (byte 3 picks one, and a value): scalars of many
/// responses, of each type (ints of every width, strings, nullable strings, uuids, records).
pub const REWRITE_FIELDS: &[&str] = &[
    "throttle_time_ms",
    "error_code",
    "leader_id",
    "leader_epoch",
    "offset",
    "high_watermark",
    "timestamp",
    "host",
    "port",
    "rack",
    "node_id",
    "partition_index",
    "name",
    "topic_id",
    "cluster_id",
    "member_id",
    "generation_id",
    "records",
    "is_internal",
    "session_id",
];

/// The values `fault_answers` writes: what a rule's `value` can be (a whole number, `true` /
/// `false`, `null` or text), at the edges of the field types.
pub fn rewrite_values() -> [serde_json::Value; 12] {
    use serde_json::Value;
    [
        Value::from(0),
        Value::from(-1),
        Value::from(99),
        Value::from(70_000),
        Value::from(i64::MAX),
        Value::from(i64::MIN),
        Value::from("elsewhere"),
        Value::from(""),
        Value::from("x6PVMq1pS4W3wfd3cT6Ncg"),
        Value::Bool(true),
        Value::Bool(false),
        Value::Null,
    ]
}

/// `kwire proxy`'s byte-level fault actions on `data`. Byte 0 modulo 3 picks the action:
/// - 0: the request actions on the rest as a request frame (no size prefix), byte 1 the error
///   code (less 1: -1 to 254): `error_answer`, which must give a size-prefixed response of the
///   request's API and version, with its correlation id, that kafka-wire decodes (the schema
///   interpreter, and the typed decoder where kwire has one); and `request_topics::named_in`,
///   which names nothing for a request that does not decode;
/// - 1: `rewrite_fields` on the rest as a response of the API and version bytes 1 and 2 pick
///   ([`pick_any_api`]), byte 3 the field and value: a rewritten response decodes, with the
///   field set to the value as many times as it says;
/// - 2: `corrupt_fetch_response` on the rest as a Fetch response of the version byte 1 picks:
///   one byte of the frame flipped, inside a batch whose base offset it names, the response
///   still decodes, and a batch whose CRC held no longer does.
pub fn fault_answers(data: &[u8]) {
    let [action, rest @ ..] = data else { return };
    match action % 3 {
        0 => request_faults(rest),
        1 => rewritten_response(rest),
        _ => corrupted_fetch(rest),
    }
}

fn request_faults(data: &[u8]) {
    use kafka_wire::protocol::schema::decode::{request_frame_to_json, response_frame_to_json};
    use kafka_wire::protocol::ErrorCode;
    use kwire_faults::error_answer::error_answer;
    use kwire_faults::request_topics::named_in;
    let [code, frame @ ..] = data else { return };
    let frame = Bytes::copy_from_slice(frame);
    let named = named_in(&frame);
    let Ok(request) = request_frame_to_json(frame.clone(), false) else {
        assert!(named.is_empty(), "a request that does not decode names nothing: {named:?}");
        return;
    };
    let code = ErrorCode(i16::from(*code) - 1);
    let Ok(answer) = error_answer(&frame, code) else { return };
    let (api, version) = (request.api, request.version);
    let size = u32::from_be_bytes(answer[..4].try_into().expect("a size prefix"));
    assert_eq!(size as usize, answer.len() - 4, "{api} v{version}: the size prefix counts the rest");
    let body = Bytes::from(answer).slice(4..);
    let decoded = response_frame_to_json(api, version, body.clone(), false)
        .unwrap_or_else(|e| panic!("{api} v{version}: the error answer does not decode: {e}"));
    assert_eq!(
        decoded.json["header"]["correlation_id"], request.json["header"]["correlation_id"],
        "{api} v{version}: the answer's correlation id"
    );
    if let Some(Err(e)) = typed_response(api, version, &body) {
        panic!("{api} v{version}: the error answer does not decode with the typed decoder: {e}");
    }
}

fn rewritten_response(data: &[u8]) {
    use kafka_wire::protocol::schema::decode::response_frame_to_json;
    use kwire_faults::rewrite::rewrite_fields;
    let Some((spec, version, rest)) = pick_any_api(data) else { return };
    let [pick, frame @ ..] = rest else { return };
    let values = rewrite_values();
    let field = REWRITE_FIELDS[usize::from(*pick) % REWRITE_FIELDS.len()];
    let value = &values[usize::from(*pick) / REWRITE_FIELDS.len() % values.len()];
    let (api, frame) = (spec.key, Bytes::copy_from_slice(frame));
    let Ok((out, set)) = rewrite_fields(&frame, api, version, field, value) else { return };
    assert!(set > 0, "{api} v{version}: a rewrite that set nothing");
    let again = response_frame_to_json(api, version, Bytes::from(out), false).unwrap_or_else(|e| {
        panic!("{api} v{version}: `{field}` = {value}: the rewrite does not decode: {e}")
    });
    let holding = count_fields(&again.json["body"], field, value);
    assert!(
        holding == set,
        "{api} v{version}: `{field}` = {value} set {set} times, {holding} read back\n{}",
        again.json
    );
}

/// How many scalar fields named `field` below `node` equal `value`.
fn count_fields(node: &serde_json::Value, field: &str, value: &serde_json::Value) -> usize {
    use serde_json::Value;
    match node {
        Value::Object(fields) => fields
            .iter()
            .map(|(key, child)| match child {
                Value::Object(_) | Value::Array(_) => count_fields(child, field, value),
                _ => usize::from(key == field && child == value),
            })
            .sum(),
        Value::Array(items) => items.iter().map(|item| count_fields(item, field, value)).sum(),
        _ => 0,
    }
}

fn corrupted_fetch(data: &[u8]) {
    use kafka_wire::protocol::DecodeErrorKind;
    use kwire_faults::corrupt::corrupt_fetch_response;
    let [version, frame @ ..] = data else { return };
    let versions = <FetchRequest as Body>::SPEC.versions;
    let version = versions.min + i16::from(*version) % (versions.max - versions.min + 1);
    let frame = Bytes::copy_from_slice(frame);
    let Some((out, which)) = corrupt_fetch_response(&frame, version) else { return };
    assert_eq!(out.len(), frame.len(), "v{version}: the corrupted response keeps its length");
    let flipped: Vec<usize> = (0..out.len()).filter(|i| out[*i] != frame[*i]).collect();
    let [at] = flipped[..] else { panic!("v{version}: {} bytes changed, not one", flipped.len()) };
    assert_eq!(out[at], !frame[at], "v{version}: the byte is flipped");
    // The batch: its first byte 61 before the flipped one (the v2 batch header's size).
    let start = at.checked_sub(61).expect("the flip is past a batch header");
    let base_offset = i64::from_be_bytes(frame[start..start + 8].try_into().expect("8 bytes"));
    assert_eq!(which.base_offset, base_offset, "v{version}: the batch named is the batch corrupted");
    decode_response::<FetchRequest>(Bytes::from(out.clone()), version)
        .unwrap_or_else(|e| panic!("v{version}: the corrupted response does not decode: {e}"));
    let length = i32::from_be_bytes(frame[start + 8..start + 12].try_into().expect("4 bytes"));
    let end = start + 12 + usize::try_from(length).expect("a whole batch");
    let opts = DecodeOptions { verify_crc: true, ..DecodeOptions::default() };
    if RecordBatch::decode(frame.slice(start..end), &opts).is_ok() {
        let err = RecordBatch::decode(Bytes::from(out).slice(start..end), &opts)
            .expect_err("a batch whose CRC held fails it once corrupted");
        assert!(matches!(err.kind, DecodeErrorKind::CrcMismatch { .. }), "v{version}: {err}");
    }
}
