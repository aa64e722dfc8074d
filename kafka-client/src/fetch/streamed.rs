//! A batch too large to unpack whole within [`FetchOptions::max_decompressed_bytes`]: read as
//! it decompresses ([`StreamedBatch`]), its records kept until the budget's worth of their
//! decompressed chunks is held, the rest left for the next round.
//!
//! A round that stops inside the batch keeps it ([`HeldBatch`]: its compressed bytes and the
//! decompressor's state — gzip's 32 KiB window, an lz4 block, zstd's window — not its
//! decompressed bytes). The next round's Fetch starts inside the
//! same batch and the broker sends it again from its start; when that is the batch kept (same
//! base offset, length and CRC) and the position is where it stopped, reading goes on from the
//! kept state. So a batch of `n` budgets' worth is decompressed once in `n` rounds, holding one
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

/// A streamed batch a round stopped inside, kept for the next round.
#[derive(Debug)]
pub(super) struct HeldBatch {
    /// Which batch: its base offset, length and CRC as the record set had them.
    identity: BatchIdentity,
    /// The position the round stopped at: the offset of the next record to read.
    next: i64,
    batch: StreamedBatch,
}

/// What tells one batch of a partition's log from another: a batch sent again in a later
/// response has the same base offset, length and CRC (the CRC covers everything after it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct BatchIdentity {
    pub(super) base_offset: i64,
    pub(super) len: usize,
    pub(super) crc: u32,
}

impl BatchIdentity {
    /// A magic-2 batch's identity from its bytes (a record set's entry): `None` when they are
    /// too short to hold a batch header's CRC.
    pub(super) fn of(entry: &[u8]) -> Option<Self> {
        let base_offset = i64::from_be_bytes(*entry.first_chunk::<8>()?);
        // baseOffset (8), batchLength (4), partitionLeaderEpoch (4), magic (1), then the CRC.
        let crc = u32::from_be_bytes(*entry.get(17..21)?.first_chunk::<4>()?);
        Some(Self { base_offset, len: entry.len(), crc })
    }
}

impl HeldBatch {
    /// The kept batch if `identity` is it and reading would go on at `position`; `None`
    /// (dropping it) otherwise — another batch, or a position moved by a seek or a reset.
    pub(super) fn resume(
        held: Option<HeldBatch>,
        identity: Option<BatchIdentity>,
        position: i64,
    ) -> Option<StreamedBatch> {
        let held = held?;
        (Some(held.identity) == identity && held.next == position).then_some(held.batch)
    }

    pub(super) fn keep(identity: BatchIdentity, next: i64, batch: StreamedBatch) -> Self {
        Self { identity, next, batch }
    }
}

/// Appends the batch's records in `[*position, until)` to `records`, stopping once the chunks
/// holding the records kept add up to `limit` bytes; `*position` ends one past the last record
/// taken (or at the batch's end, capped at `until`). Returns how far it got and the bytes held.
/// After [`Taken::Part`], the batch reads on from the next record.
pub(super) fn take_streamed(
    batch: &mut StreamedBatch,
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
