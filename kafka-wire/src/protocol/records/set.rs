//! A Fetch response's `records` field: batches back to back, magic 2 and legacy magic 0/1
//! possibly mixed (segments written before a message-format upgrade), where the broker may
//! cut the last batch short to honour a size limit. A cut-short tail is not an error: it is
//! reported in [`RecordSet::truncated_tail_bytes`], and the consumer fetches it again from
//! the next offset (with a bigger limit if no batch at all was complete).
//!
//! Both formats put the entry size at byte 8 (counting from byte 12) and the magic at byte
//! 16, so each entry's format is known before it is parsed.

use bytes::Bytes;

use super::batch::{RecordBatch, RECORD_BATCH_OVERHEAD};
use super::legacy::{self, LegacyBatch, LOG_OVERHEAD, MIN_MESSAGE_SIZE_V0};
use super::{Budget, Cursor, DecodeOptions};
use crate::protocol::decoder::DecodeResult;
use crate::protocol::error::DecodeErrorKind;

/// Offset, size and the fields up to and including the magic byte.
const HEADER_UP_TO_MAGIC: usize = 17;

/// One entry of a record set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordSetBatch {
    /// A magic-2 batch.
    V2(RecordBatch),
    /// A magic-0/1 message, or a compressed wrapper expanded into its messages.
    Legacy(LegacyBatch),
}

impl RecordSetBatch {
    /// The offset to fetch after this entry.
    pub fn next_offset(&self) -> Option<i64> {
        match self {
            Self::V2(b) => Some(b.next_offset()),
            Self::Legacy(b) => b.next_offset(),
        }
    }
}

/// The decoded entries of a `records` field.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecordSet {
    pub batches: Vec<RecordSetBatch>,
    /// Bytes at the end that are the start of an entry the broker cut short; 0 if none.
    pub truncated_tail_bytes: usize,
}

impl RecordSet {
    /// Decodes every complete entry. Byte offsets in errors count from the start of `records`.
    pub fn decode(records: &Bytes, opts: &DecodeOptions) -> DecodeResult<Self> {
        let mut budget = Budget::new(opts);
        let mut batches = Vec::new();
        let mut c = Cursor::new(records, 0);
        while c.remaining() > 0 {
            let at = c.pos();
            let rest = c.remaining();
            if rest < LOG_OVERHEAD {
                return Ok(Self { batches, truncated_tail_bytes: rest });
            }
            c.i64("offset")?;
            let size = c.i32("batch_length")?;
            let size = match usize::try_from(size) {
                Ok(n) if n >= MIN_MESSAGE_SIZE_V0 => n,
                _ => {
                    return Err(c.error_at(
                        DecodeErrorKind::Invalid(format!(
                            "entry size {size} is below the {MIN_MESSAGE_SIZE_V0}-byte minimum"
                        )),
                        "batch_length",
                        at + 8,
                    ))
                }
            };
            let total = LOG_OVERHEAD + size;
            if total > rest {
                return Ok(Self { batches, truncated_tail_bytes: rest });
            }
            debug_assert!(total >= HEADER_UP_TO_MAGIC);
            c.take_slice(size, "batch")?;
            let entry = records.slice(at..at + total);
            let magic = entry.get(HEADER_UP_TO_MAGIC - 1).map_or(-1, |&m| m as i8);
            match magic {
                2 => {
                    if total < RECORD_BATCH_OVERHEAD {
                        return Err(c.error_at(
                            DecodeErrorKind::Invalid(format!(
                                "record batch of {total} bytes is shorter than its {RECORD_BATCH_OVERHEAD}-byte header"
                            )),
                            "batch_length",
                            at + 8,
                        ));
                    }
                    batches.push(RecordSetBatch::V2(RecordBatch::parse(&entry, at, opts, &mut budget)?));
                }
                0 | 1 => {
                    let mut messages = Vec::new();
                    let compression = legacy::read_entry(&entry, at, opts, &mut budget, 0, &mut messages)?;
                    batches.push(RecordSetBatch::Legacy(LegacyBatch { compression, messages }));
                }
                m => {
                    return Err(c.error_at(
                        DecodeErrorKind::Invalid(format!("unknown record format magic {m}")),
                        "magic",
                        at + HEADER_UP_TO_MAGIC - 1,
                    ))
                }
            }
        }
        Ok(Self { batches, truncated_tail_bytes: 0 })
    }

    /// The offset to fetch next: after the last complete entry.
    pub fn next_offset(&self) -> Option<i64> {
        self.batches.iter().rev().find_map(RecordSetBatch::next_offset)
    }
}
