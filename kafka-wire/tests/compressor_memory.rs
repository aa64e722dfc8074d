//! `compressor_memory`, what a producer sets aside for the one batch it compresses at a time,
//! held against what each Rust codec's `compress` really allocates: the peak of this binary's
//! heap during the call, through a counting allocator, with `out`'s room reserved beforehand
//! (zstd allocates in C; its unit test asks the context for its size). One test in its own
//! binary, so that no other test's allocations land in the count.

// The counting allocator needs `unsafe impl GlobalAlloc`; it only forwards to `System`.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use kafka_wire::protocol::records::compression::{compress, compressor_memory, max_compressed_len};
use kafka_wire::protocol::records::Compression;

/// The system allocator, counting the bytes live now and the most live since the last reset.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed on to `System` unchanged; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is `System.alloc`'s.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
            PEAK.fetch_max(live, Ordering::SeqCst);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::SeqCst);
        // SAFETY: the caller's contract for `dealloc` is `System.dealloc`'s.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract for `realloc` is `System.realloc`'s.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::SeqCst);
            let live = LIVE.fetch_add(new_size, Ordering::SeqCst) + new_size;
            PEAK.fetch_max(live, Ordering::SeqCst);
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Bytes `compress` had live at its peak beyond what was live before it, `out`'s room excluded.
fn working_memory(codec: Compression, input: &[u8]) -> usize {
    let mut out = Vec::with_capacity(max_compressed_len(codec, input.len()));
    let before = LIVE.load(Ordering::SeqCst);
    PEAK.store(before, Ordering::SeqCst);
    compress(codec, input, &mut out).unwrap();
    let peak = PEAK.load(Ordering::SeqCst);
    assert!(out.len() <= out.capacity());
    peak - before
}

#[test]
fn each_rust_codec_compresses_within_the_memory_it_is_charged() {
    for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4] {
        let bound = compressor_memory(codec);
        let mut largest = 0;
        for len in [1usize, 1 << 10, 64 << 10, 1 << 20, 4 << 20] {
            // Incompressible bytes and one repeated value: the two ends of what a batch holds.
            let noise: Vec<u8> = (0..len).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
            let repeated =
                b"a record value that repeats ".iter().copied().cycle().take(len).collect::<Vec<u8>>();
            for input in [&noise, &repeated] {
                let used = working_memory(codec, input);
                assert!(
                    used <= bound,
                    "{codec:?}, {len} bytes: {used} bytes of working memory, over the {bound} charged"
                );
                largest = largest.max(used);
            }
        }
        eprintln!("{codec:?}: at most {largest} bytes of working memory, {bound} charged");
        // A bound far above the truth would hold back buffer memory for nothing.
        assert!(
            largest * 10 >= bound * 6,
            "{codec:?}: the bound ({bound}) is far above the most used ({largest})"
        );
    }
}
