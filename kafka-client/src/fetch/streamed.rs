//! A batch too large to unpack whole within [`FetchOptions::max_decompressed_bytes`]: read as
//! it decompresses ([`StreamedBatch`]), its records kept until the budget's worth of their
//! decompressed chunks is held, the rest left for the next round.
//!
//! The next round's Fetch starts inside the same batch (the broker sends it again from its
//! start), which is decompressed again up to the position and kept from there: a batch of `n`
//! budgets' worth is read in `n` rounds, decompressing ≈ `n²/2` budgets in all, holding one
//! budget (plus one chunk) at any time. Only a batch past
//! [`DecodeOptions::max_decompressed_size`] in all, or a single record past it, is refused.
//!
//! [`FetchOptions::max_decompressed_bytes`]: super::ranges::FetchOptions::max_decompressed_bytes
//! [`DecodeOptions::max_decompressed_size`]: kafka_wire::protocol::records::DecodeOptions::max_decompressed_size

use kafka_wire::protocol::records::StreamedBatch;
use kafka_wire::protocol::DecodeError;

use super::fetched::FetchedRecord;

/// The decompressed bytes read at a time: small enough that a chunk is a small part of any
/// sensible budget, large enough that the per-chunk copy of a record cut at its end is noise.
pub(super) fn chunk_size(limit: usize) -> usize {
    (limit / 8).clamp(16 << 10, 1 << 20)
}

/// How much of a streamed batch a round took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Taken {
    /// Every record the range wants from it: reading goes on with the next batch.
    Whole,
    /// Records up to `limit` decompressed bytes (at least one): the next round reads on from
    /// `*position`, inside this batch.
    Part,
}

/// Appends the batch's records in `[*position, until)` to `records`, stopping once the chunks
/// holding the records kept add up to `limit` bytes; `*position` ends one past the last record
/// taken (or at the batch's end, capped at `until`). Returns how far it got and the bytes held.
pub(super) fn take_streamed(
    mut batch: StreamedBatch<'_>,
    position: &mut i64,
    until: i64,
    records: &mut Vec<FetchedRecord>,
    limit: usize,
) -> Result<(Taken, usize), DecodeError> {
    let h = batch.header;
    let mut held = 0usize;
    let mut last_chunk: *const u8 = std::ptr::null();
    while let Some(record) = batch.next_record() {
        let (r, chunk) = record?;
        let offset = h.offset_of(&r);
        if offset < *position {
            continue;
        }
        if offset >= until {
            break;
        }
        if chunk.as_ptr() != last_chunk {
            last_chunk = chunk.as_ptr();
            held += chunk.len();
        }
        records.push(FetchedRecord::of_batch(&h, r, chunk));
        *position = offset.saturating_add(1);
        if held >= limit && *position < h.next_offset().min(until) {
            return Ok((Taken::Part, held));
        }
    }
    *position = (*position).max(h.next_offset().min(until));
    Ok((Taken::Whole, held))
}
