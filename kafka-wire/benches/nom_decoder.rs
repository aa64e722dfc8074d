//! kwire's `Decoder` against the same decode written with nom's parser combinators.
//!
//! The question (ARCHITECTURE.md, "nom: text formats yes, binary codec measured"): would the binary codec's
//! primitives be faster as nom parsers? Both sides decode the same ListOffsets response bytes
//! (10,000 partitions; v3 classic and v8 flexible) into the same `ListOffsetsResponse` value,
//! with the same defences: every count checked against the bytes left before anything is
//! reserved, UTF-8 checked, tag order checked. nom gets its cheapest error type (no field
//! names, no offsets), which only favours it.
//!
//! `cargo bench -p kafka-wire --bench nom_decoder`

use bytes::Bytes;
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use kafka_wire::protocol::messages::{
    ListOffsetsPartitionResponse, ListOffsetsResponse, ListOffsetsTopicResponse,
};
use kafka_wire::protocol::{Body, ErrorCode, TaggedFields};
use nom::bytes::complete::take;
use nom::error::{Error, ErrorKind};
use nom::number::complete::{be_i16, be_i32, be_i64, be_u8};
use nom::{Err, IResult, Parser};

type In<'a> = &'a [u8];
type Res<'a, T> = IResult<In<'a>, T>;

/// Most elements reserved up front, as in `Decoder`.
const PREALLOCATE_MAX: usize = 1024;

fn fail<T>(input: In<'_>, kind: ErrorKind) -> Res<'_, T> {
    Err(Err::Error(Error::new(input, kind)))
}

/// Unsigned LEB128 of at most 5 bytes.
fn uvarint(mut input: In<'_>) -> Res<'_, u32> {
    let mut value: u64 = 0;
    for i in 0..5 {
        let (rest, byte) = be_u8(input)?;
        input = rest;
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return u32::try_from(value)
                .map_or_else(|_| fail(input, ErrorKind::TooLarge), |v| Ok((input, v)));
        }
    }
    fail(input, ErrorKind::TooLarge)
}

/// A length prefix: compact (uvarint N+1) or classic (i16 or i32); `None` is null.
fn length(flexible: bool, classic_i16: bool) -> impl Fn(In<'_>) -> Res<'_, Option<usize>> {
    move |input| {
        let (rest, n) = if flexible {
            uvarint.map(|v| i64::from(v) - 1).parse(input)?
        } else if classic_i16 {
            be_i16.map(i64::from).parse(input)?
        } else {
            be_i32.map(i64::from).parse(input)?
        };
        match n {
            -1 => Ok((rest, None)),
            n if n < 0 => fail(input, ErrorKind::Verify),
            n => Ok((rest, Some(n as usize))),
        }
    }
}

fn string(flexible: bool) -> impl Fn(In<'_>) -> Res<'_, String> {
    move |input| {
        let (rest, n) = length(flexible, true)(input)?;
        let Some(n) = n else { return fail(input, ErrorKind::Verify) };
        let (rest, raw) = take(n).parse(rest)?;
        match std::str::from_utf8(raw) {
            Ok(s) => Ok((rest, s.to_owned())),
            Err(_) => fail(input, ErrorKind::Char),
        }
    }
}

/// A non-null array whose elements take at least `min_elem` bytes: the count is checked
/// against the input left before anything is reserved.
fn array<'a, T>(
    flexible: bool,
    min_elem: usize,
    mut element: impl FnMut(In<'a>) -> Res<'a, T>,
) -> impl FnMut(In<'a>) -> Res<'a, Vec<T>> {
    move |input| {
        let (mut rest, n) = length(flexible, false)(input)?;
        let Some(n) = n else { return fail(input, ErrorKind::Verify) };
        if n.saturating_mul(min_elem) > rest.len() {
            return fail(input, ErrorKind::Eof);
        }
        let mut out = Vec::with_capacity(n.min(PREALLOCATE_MAX));
        for _ in 0..n {
            let (next, value) = element(rest)?;
            rest = next;
            out.push(value);
        }
        Ok((rest, out))
    }
}

fn tagged_fields(flexible: bool) -> impl Fn(In<'_>) -> Res<'_, TaggedFields> {
    move |input| {
        if !flexible {
            return Ok((input, TaggedFields::default()));
        }
        let (mut rest, count) = uvarint(input)?;
        if count == 0 {
            return Ok((rest, TaggedFields::default()));
        }
        if (count as usize).saturating_mul(2) > rest.len() {
            return fail(input, ErrorKind::Eof);
        }
        let mut fields = Vec::with_capacity((count as usize).min(PREALLOCATE_MAX));
        let mut previous = None;
        for _ in 0..count {
            let (next, tag) = uvarint(rest)?;
            if previous.is_some_and(|p| tag <= p) {
                return fail(rest, ErrorKind::Verify);
            }
            previous = Some(tag);
            let (next, size) = uvarint(next)?;
            let (next, data) = take(size as usize).parse(next)?;
            fields.push((tag, Bytes::copy_from_slice(data)));
            rest = next;
        }
        Ok((rest, TaggedFields::new(fields)))
    }
}

fn partition(version: i16) -> impl Fn(In<'_>) -> Res<'_, ListOffsetsPartitionResponse> {
    let flexible = version >= 6;
    move |input| {
        let (input, partition_index) = be_i32(input)?;
        let (input, error_code) = be_i16(input)?;
        let (input, timestamp) = be_i64(input)?;
        let (input, offset) = be_i64(input)?;
        let (input, leader_epoch) = if version >= 4 { be_i32.map(Some).parse(input)? } else { (input, None) };
        let (input, tagged_fields) = tagged_fields(flexible)(input)?;
        Ok((
            input,
            ListOffsetsPartitionResponse {
                partition_index,
                error_code: ErrorCode(error_code),
                old_style_offsets: None,
                timestamp: Some(timestamp),
                offset: Some(offset),
                leader_epoch,
                tagged_fields,
            },
        ))
    }
}

/// ListOffsets response v1–v10 with nom (v0's old-style offsets are left out: the bench
/// measures v3 and v8).
fn list_offsets_response(input: In<'_>, version: i16) -> Res<'_, ListOffsetsResponse> {
    let flexible = version >= 6;
    let (input, throttle_time_ms) = if version >= 2 { be_i32.map(Some).parse(input)? } else { (input, None) };
    let (input, topics) = array(flexible, 2, |input| {
        let (input, name) = string(flexible)(input)?;
        let (input, partitions) = array(flexible, 7, partition(version))(input)?;
        let (input, tagged_fields) = tagged_fields(flexible)(input)?;
        Ok((input, ListOffsetsTopicResponse { name, partitions, tagged_fields }))
    })(input)?;
    let (input, tagged_fields) = tagged_fields(flexible)(input)?;
    if !input.is_empty() {
        return fail(input, ErrorKind::NonEmpty);
    }
    Ok((input, ListOffsetsResponse { throttle_time_ms, topics, tagged_fields }))
}

fn fixture(version: i16) -> ListOffsetsResponse {
    ListOffsetsResponse {
        throttle_time_ms: Some(0),
        topics: (0..10)
            .map(|t| ListOffsetsTopicResponse {
                name: format!("bench-topic-{t:04}"),
                partitions: (0..1000)
                    .map(|p| ListOffsetsPartitionResponse {
                        partition_index: p,
                        error_code: ErrorCode(0),
                        old_style_offsets: None,
                        timestamp: Some(-1),
                        offset: Some(1_000_000 + t * 7_919 + i64::from(p) * 104_729),
                        leader_epoch: (version >= 4).then_some(7),
                        tagged_fields: TaggedFields::default(),
                    })
                    .collect(),
                tagged_fields: TaggedFields::default(),
            })
            .collect(),
        tagged_fields: TaggedFields::default(),
    }
}

fn decode(c: &mut Criterion) {
    for version in [3, 8] {
        let value = fixture(version);
        let bytes = Bytes::from(value.encode_body(version).expect("encodes"));
        // Both decoders agree before anything is timed, and both refuse the same cut input.
        let ours = ListOffsetsResponse::decode_body(bytes.clone(), version).expect("kwire decodes");
        let (_, theirs) = list_offsets_response(&bytes, version).expect("nom decodes");
        assert_eq!(ours, value);
        assert_eq!(theirs, value);
        let cut = bytes.slice(..bytes.len() / 2);
        assert!(ListOffsetsResponse::decode_body(cut.clone(), version).is_err());
        assert!(list_offsets_response(&cut, version).is_err());

        let mut group = c.benchmark_group(format!("list_offsets_v{version}_10000/decode"));
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function("kwire Decoder", |b| {
            b.iter(|| ListOffsetsResponse::decode_body(black_box(bytes.clone()), version).expect("decodes"));
        });
        group.bench_function("nom", |b| {
            b.iter(|| list_offsets_response(black_box(&bytes), version).expect("decodes"));
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).warm_up_time(std::time::Duration::from_secs(1));
    targets = decode
}
criterion_main!(benches);
