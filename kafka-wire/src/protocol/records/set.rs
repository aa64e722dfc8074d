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
    /// The complete entries (magic-2 batches or legacy message sets), in log order.
    pub batches: Vec<RecordSetBatch>,
    /// Bytes at the end that are the start of an entry the broker cut short; 0 if none.
    pub truncated_tail_bytes: usize,
}

/// One complete entry of a `records` field, not yet decoded: public so a lazy reader (the
/// client's fetch) can decode only the entries it needs ([`BatchView::parse_entry`] for magic 2,
/// [`legacy::read_entry`] for magic 0/1).
///
/// [`BatchView::parse_entry`]: super::BatchView::parse_entry
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    /// Where the entry starts in `records`, for errors.
    pub at: usize,
    /// 2 for a batch, 0 or 1 for a legacy message (any other value is refused).
    pub magic: i8,
    /// The whole entry, offset and size included.
    pub bytes: &'a [u8],
}

/// Splits a `records` field into its complete entries by their size fields alone (nothing is
/// decompressed or checked beyond the sizes and the magic). After the last complete entry,
/// [`Entries::truncated_tail_bytes`] says how much of a cut-short entry followed. Public for
/// readers that stop early instead of decoding the whole set as [`RecordSet::decode`] does.
#[derive(Debug)]
pub struct Entries<'a> {
    c: Cursor<'a>,
    tail: usize,
}

impl<'a> Entries<'a> {
    /// Entries of `records`, a `records` field; byte offsets in errors count from its start.
    pub fn new(records: &'a [u8]) -> Self {
        Self { c: Cursor::new(records, 0), tail: 0 }
    }

    /// Bytes at the end that are the start of an entry the broker cut short; meaningful once
    /// [`Entries::next_entry`] returned `Ok(None)`.
    pub fn truncated_tail_bytes(&self) -> usize {
        self.tail
    }

    /// The next complete entry, `Ok(None)` at the end or at a cut-short tail.
    pub fn next_entry(&mut self) -> DecodeResult<Option<Entry<'a>>> {
        let c = &mut self.c;
        let at = c.pos();
        let rest = c.remaining();
        if rest == 0 {
            return Ok(None);
        }
        if rest < LOG_OVERHEAD {
            self.tail = rest;
            return Ok(None);
        }
        let mut peek = c.clone();
        peek.i64("offset")?;
        let size = peek.i32("batch_length")?;
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
            self.tail = rest;
            return Ok(None);
        }
        let bytes = c.take_slice(total, "batch")?;
        let magic = bytes.get(HEADER_UP_TO_MAGIC - 1).map_or(-1, |&m| m as i8);
        match magic {
            2 if total < RECORD_BATCH_OVERHEAD => Err(c.error_at(
                DecodeErrorKind::Invalid(format!(
                    "record batch of {total} bytes is shorter than its {RECORD_BATCH_OVERHEAD}-byte header"
                )),
                "batch_length",
                at + 8,
            )),
            0..=2 => Ok(Some(Entry { at, magic, bytes })),
            m => Err(c.error_at(
                DecodeErrorKind::Invalid(format!("unknown record format magic {m}")),
                "magic",
                at + HEADER_UP_TO_MAGIC - 1,
            )),
        }
    }
}

impl RecordSet {
    /// Decodes every complete entry. Byte offsets in errors count from the start of `records`.
    pub fn decode(records: &Bytes, opts: &DecodeOptions) -> DecodeResult<Self> {
        let mut budget = Budget::new(opts);
        let mut batches = Vec::new();
        let mut entries = Entries::new(records);
        while let Some(entry) = entries.next_entry()? {
            let bytes = records.slice_ref(entry.bytes);
            if entry.magic == 2 {
                batches.push(RecordSetBatch::V2(RecordBatch::parse(&bytes, entry.at, opts, &mut budget)?));
            } else {
                let mut messages = Vec::new();
                let compression = legacy::read_entry(&bytes, entry.at, opts, &mut budget, 0, &mut messages)?;
                batches.push(RecordSetBatch::Legacy(LegacyBatch { compression, messages }));
            }
        }
        Ok(Self { batches, truncated_tail_bytes: entries.truncated_tail_bytes() })
    }

    /// The offset to fetch next: after the last complete entry.
    pub fn next_offset(&self) -> Option<i64> {
        self.batches.iter().rev().find_map(RecordSetBatch::next_offset)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::error::DecodeErrorKind;
    use crate::protocol::records::batch::tests::{batch, empty_batch_claiming};
    use crate::protocol::records::{Compression, LegacyMessage, Record};

    fn v2(base_offset: i64, values: &[&'static [u8]]) -> RecordBatch {
        let records = values
            .iter()
            .enumerate()
            .map(|(i, v)| Record { offset_delta: i as i32, ..Record::new(None, Some(Bytes::from_static(v))) })
            .collect();
        RecordBatch::new(base_offset, 0, Compression::None, records)
    }

    fn concat(batches: &[&RecordBatch]) -> Vec<u8> {
        let mut out = Vec::new();
        for b in batches {
            b.encode(&mut out).unwrap();
        }
        out
    }

    #[test]
    fn a_last_batch_cut_short_by_the_broker_is_an_incomplete_tail_not_an_error() {
        let (a, b, c) = (v2(0, &[b"a", b"b"]), v2(2, &[b"c"]), v2(3, &[b"dddd", b"eeee", b"ffff"]));
        let whole = concat(&[&a, &b, &c]);
        let two = concat(&[&a, &b]).len();
        // Every cut inside the third batch (including inside its 12-byte prefix).
        for cut in two + 1..whole.len() {
            let set = RecordSet::decode(&Bytes::copy_from_slice(&whole[..cut]), &DecodeOptions::default())
                .unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
            assert_eq!(
                set.batches,
                [RecordSetBatch::V2(a.clone()), RecordSetBatch::V2(b.clone())],
                "cut at {cut}"
            );
            assert_eq!(set.truncated_tail_bytes, cut - two);
            assert_eq!(set.next_offset(), Some(3));
        }
        let set = RecordSet::decode(&Bytes::from(whole), &DecodeOptions::default()).unwrap();
        assert_eq!((set.batches.len(), set.truncated_tail_bytes, set.next_offset()), (3, 0, Some(6)));
    }

    #[test]
    fn a_first_batch_bigger_than_the_fetch_is_all_tail() {
        let whole = concat(&[&v2(0, &[b"value"])]);
        let set =
            RecordSet::decode(&Bytes::copy_from_slice(&whole[..40]), &DecodeOptions::default()).unwrap();
        assert!(set.batches.is_empty());
        assert_eq!((set.truncated_tail_bytes, set.next_offset()), (40, None));
    }

    #[test]
    fn empty_records_are_an_empty_set() {
        assert_eq!(
            RecordSet::decode(&Bytes::new(), &DecodeOptions::default()).unwrap(),
            RecordSet::default()
        );
    }

    #[test]
    fn legacy_and_v2_entries_mix_after_a_format_upgrade() {
        let mut bytes = Vec::new();
        let old = LegacyMessage {
            offset: 0,
            magic: 1,
            attributes: 0,
            timestamp: Some(5),
            key: None,
            value: Some(Bytes::from_static(b"old")),
        };
        old.encode(&mut bytes).unwrap();
        v2(1, &[b"new"]).encode(&mut bytes).unwrap();
        let set = RecordSet::decode(&Bytes::from(bytes), &DecodeOptions::default()).unwrap();
        assert!(matches!(&set.batches[0], RecordSetBatch::Legacy(l) if l.messages == [old]));
        assert!(matches!(&set.batches[1], RecordSetBatch::V2(b) if b.base_offset == 1));
        assert_eq!(set.next_offset(), Some(2));
    }

    #[test]
    fn a_corrupt_batch_before_the_tail_is_an_error() {
        let mut bytes = concat(&[&v2(0, &[b"a"]), &v2(1, &[b"b"])]);
        bytes[30] ^= 0xff; // inside the first batch's CRC-covered bytes
        let err = RecordSet::decode(&Bytes::from(bytes), &DecodeOptions::default()).unwrap_err();
        assert!(matches!(err.kind, DecodeErrorKind::CrcMismatch { .. }));
    }

    #[test]
    fn an_entry_size_below_any_format_minimum_is_an_error() {
        let mut bytes = concat(&[&v2(0, &[b"a"])]);
        bytes[8..12].copy_from_slice(&3i32.to_be_bytes());
        let err = RecordSet::decode(&Bytes::from(bytes), &DecodeOptions::default()).unwrap_err();
        assert_eq!((err.field, err.offset), ("batch_length", 8));
        // A magic-2 entry too short for its header, though long enough for a legacy message.
        let mut bytes = concat(&[&v2(0, &[b"a"])]);
        bytes[8..12].copy_from_slice(&20i32.to_be_bytes());
        assert!(RecordSet::decode(&Bytes::from(bytes), &DecodeOptions::default()).is_err());
    }

    #[test]
    fn an_unknown_magic_is_an_error() {
        let mut bytes = concat(&[&v2(0, &[b"a"])]);
        bytes[16] = 3;
        let err = RecordSet::decode(&Bytes::from(bytes), &DecodeOptions::default()).unwrap_err();
        assert_eq!((err.field, err.offset), ("magic", 16));
    }

    #[test]
    fn a_huge_record_count_inside_a_set_fails_fast() {
        let err = RecordSet::decode(&Bytes::from(empty_batch_claiming(i32::MAX)), &DecodeOptions::default())
            .unwrap_err();
        assert!(matches!(err.kind, DecodeErrorKind::LengthExceedsInput { .. }));
    }

    #[cfg(feature = "gzip")]
    #[test]
    fn the_decompression_budget_covers_the_whole_set() {
        let big = |base| {
            let records = vec![Record::new(None, Some(Bytes::from(vec![0u8; 600 * 1024])))];
            RecordBatch::new(base, 0, Compression::Gzip, records)
        };
        let bytes = Bytes::from(concat(&[&big(0), &big(1)]));
        let opts = DecodeOptions { max_decompressed_size: 1024 * 1024, ..DecodeOptions::default() };
        // Each batch alone fits the 1 MiB budget; the two together do not.
        assert!(RecordBatch::decode(bytes.slice(..bytes.len() / 2), &opts).is_ok());
        let err = RecordSet::decode(&bytes, &opts).unwrap_err();
        assert_eq!(err.kind, DecodeErrorKind::DecompressedTooLarge { max: 1024 * 1024 });
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        #[test]
        fn sets_of_random_batches_read_back_at_any_cut(
            batches in proptest::collection::vec(batch(), 1..4),
            cut in any::<prop::sample::Index>(),
        ) {
            let mut bytes = Vec::new();
            let mut ends = Vec::new();
            for b in &batches {
                b.encode(&mut bytes).unwrap();
                ends.push(bytes.len());
            }
            let cut = cut.index(bytes.len() + 1);
            let set = RecordSet::decode(&Bytes::copy_from_slice(&bytes[..cut]), &DecodeOptions::default()).unwrap();
            let complete = ends.iter().filter(|&&e| e <= cut).count();
            prop_assert_eq!(set.batches.len(), complete);
            let consumed = if complete == 0 { 0 } else { ends[complete - 1] };
            prop_assert_eq!(set.truncated_tail_bytes, cut - consumed);
            for (got, want) in set.batches.iter().zip(&batches) {
                prop_assert_eq!(got, &RecordSetBatch::V2(want.clone()));
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic_the_set_reader(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = RecordSet::decode(&Bytes::from(data), &DecodeOptions::default());
        }
    }
}
