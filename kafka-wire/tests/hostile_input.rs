//! Hostile input, the comparison of issue 3: a 7-byte ListOffsets v1 body whose array length
//! claims 0x7fffffff elements, and a 61-byte record batch claiming 0x7fffffff records. The
//! `kafka-protocol` crate reserves capacity for the claimed count and aborts the process on
//! both (171 GB for the first); kwire must return an error, in microseconds, allocating no
//! more than the input's size.
//!
//! A counting global allocator measures the decode calls. It counts only on the thread that
//! asked, so the other tests of this binary running in parallel do not disturb the numbers.

// The counting allocator needs `unsafe impl GlobalAlloc`; it only forwards to `System`.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_wire::protocol::messages::ListOffsetsResponse;
use kafka_wire::protocol::records::{BatchView, Compression, DecodeOptions, Record, RecordBatch, RecordSet};
use kafka_wire::protocol::DecodeErrorKind;
use kafka_wire::protocol::{Body, DecodeError};

struct Counting;

thread_local! {
    static TRACKING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
    static BYTES: Cell<usize> = const { Cell::new(0) };
}

fn record(size: usize) {
    // `try_with`: the allocator also runs while thread-locals are being torn down.
    if TRACKING.try_with(Cell::get).unwrap_or(false) {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        let _ = BYTES.try_with(|n| n.set(n.get() + size));
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        record(layout.size());
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        record(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        record(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// What one decode call cost: the error, the allocations and bytes it asked for, and the
/// fastest of `runs` timings (the machine is shared; the minimum is the call's own cost).
struct Measured {
    error: DecodeError,
    allocations: usize,
    bytes: usize,
    fastest: Duration,
}

fn measure(runs: usize, mut decode: impl FnMut() -> Result<(), DecodeError>) -> Measured {
    let mut fastest = Duration::MAX;
    let mut error = None;
    ALLOCATIONS.with(|n| n.set(0));
    BYTES.with(|n| n.set(0));
    for _ in 0..runs {
        TRACKING.with(|t| t.set(true));
        let start = Instant::now();
        let result = decode();
        let elapsed = start.elapsed();
        TRACKING.with(|t| t.set(false));
        fastest = fastest.min(elapsed);
        error = Some(result.expect_err("hostile input must be an error"));
    }
    Measured {
        error: error.expect("at least one run"),
        allocations: ALLOCATIONS.with(Cell::get) / runs,
        bytes: BYTES.with(Cell::get) / runs,
        fastest,
    }
}

fn check(name: &str, input_len: usize, m: &Measured) {
    println!(
        "{name}: {} at byte {} ({}), {} allocation(s) / {} byte(s) per call, fastest {:.2} µs",
        m.error.field,
        m.error.offset,
        m.error.kind,
        m.allocations,
        m.bytes,
        m.fastest.as_secs_f64() * 1e6
    );
    assert!(m.bytes <= input_len, "{name}: allocated {} bytes for a {input_len}-byte input", m.bytes);
    // Microseconds, with room for a loaded machine: the claimed sizes would take seconds to
    // even reserve, let alone fill.
    assert!(m.fastest < Duration::from_millis(1), "{name}: took {:?}", m.fastest);
}

/// 7 bytes: ListOffsets v1 response, `topics` array length 0x7fffffff, then three bytes.
const LIST_OFFSETS_V1: [u8; 7] = [0x7f, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00];

#[test]
fn a_7_byte_list_offsets_body_claiming_2_pow_31_topics_is_an_error_without_allocation() {
    let input = Bytes::from_static(&LIST_OFFSETS_V1);
    let m = measure(1_000, || ListOffsetsResponse::decode_body(input.clone(), 1).map(drop));
    assert_eq!(m.error.field, "topics");
    assert_eq!(m.error.offset, 4, "reported right after the count");
    assert_eq!(m.error.kind, DecodeErrorKind::LengthExceedsInput { claimed: 0x7fff_ffff, available: 3 });
    check("ListOffsets v1 body", input.len(), &m);
    assert_eq!(m.allocations, 0);
}

/// 61 bytes: an empty, valid record batch whose `record_count` is patched to 0x7fffffff and
/// whose CRC is recomputed, so the count itself is what the decoder must refuse.
fn hostile_batch() -> Bytes {
    let empty = RecordBatch::new(0, 1_750_000_000_000, Compression::None, Vec::new());
    let mut bytes = empty.to_bytes().expect("an empty batch encodes").to_vec();
    assert_eq!(bytes.len(), 61);
    bytes[57..61].copy_from_slice(&0x7fff_ffff_i32.to_be_bytes());
    let crc = crc32c::crc32c(&bytes[21..]);
    bytes[17..21].copy_from_slice(&crc.to_be_bytes());
    Bytes::from(bytes)
}

#[test]
fn a_61_byte_record_batch_claiming_2_pow_31_records_is_an_error_without_allocation() {
    let input = hostile_batch();
    let opts = DecodeOptions::default();
    let m = measure(1_000, || RecordBatch::decode(input.clone(), &opts).map(drop));
    assert_eq!(m.error.field, "record_count");
    assert_eq!(m.error.kind, DecodeErrorKind::LengthExceedsInput { claimed: 0x7fff_ffff, available: 0 });
    check("record batch", input.len(), &m);
    assert_eq!(m.allocations, 0);
}

#[test]
fn the_same_batch_inside_a_fetch_responses_records_is_an_error_too() {
    // A consumer meets batches through `RecordSet` (a fetch response's `records` field); the
    // claim is refused there as well, and nothing is kept of the batch.
    let input = hostile_batch();
    let opts = DecodeOptions::default();
    let m = measure(1_000, || RecordSet::decode(&input, &opts).map(drop));
    assert_eq!(m.error.field, "record_count");
    check("record set", input.len(), &m);
}

#[test]
fn the_same_batch_through_the_borrowed_view_is_an_error_without_allocation() {
    let input = hostile_batch();
    let opts = DecodeOptions::default();
    let m = measure(1_000, || BatchView::parse(&input, &opts).map(drop));
    assert_eq!(m.error.field, "record_count");
    assert_eq!(m.error.kind, DecodeErrorKind::LengthExceedsInput { claimed: 0x7fff_ffff, available: 0 });
    check("record batch view", input.len(), &m);
    assert_eq!(m.allocations, 0);
}

#[test]
fn reading_every_record_of_an_uncompressed_batch_through_the_view_allocates_nothing() {
    let records = (0..1_000)
        .map(|i| Record {
            offset_delta: i,
            headers: vec![kafka_wire::protocol::records::Header {
                key: "trace".into(),
                value: Some(Bytes::from(format!("t{i}"))),
            }],
            ..Record::new(Some(Bytes::from(format!("key-{i}"))), Some(Bytes::from(format!("value-{i}"))))
        })
        .collect();
    let input = RecordBatch::new(0, 1_750_000_000_000, Compression::None, records).to_bytes().unwrap();
    let opts = DecodeOptions::default();
    ALLOCATIONS.with(|n| n.set(0));
    TRACKING.with(|t| t.set(true));
    let mut bytes_seen = 0usize;
    let result = BatchView::parse(&input, &opts).and_then(|view| {
        for r in view.records() {
            let r = r?;
            bytes_seen += r.key.map_or(0, <[u8]>::len) + r.value.map_or(0, <[u8]>::len);
            bytes_seen +=
                r.headers.iter().map(|h| h.key.len() + h.value.map_or(0, <[u8]>::len)).sum::<usize>();
        }
        Ok(())
    });
    TRACKING.with(|t| t.set(false));
    result.unwrap();
    assert!(bytes_seen > 20_000, "{bytes_seen}");
    assert_eq!(ALLOCATIONS.with(Cell::get), 0, "the view allocated while reading 1,000 records");
}
