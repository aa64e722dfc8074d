//! Splitting planned ranges into tasks (rule R8): exact, contiguous, non-overlapping pieces
//! whose union is the range. Unlike Spark's calculator, the remainder is spread over the
//! pieces (sizes differ by at most one) rather than piled on the last.
//!
//! A split either returns pieces whose union is exactly its input, or an error: a request
//! for zero records or pieces is refused, never answered with nothing, and so is one that
//! would make more than [`MAX_PIECES`] pieces — checked before anything is allocated.

use std::error::Error;
use std::fmt;

use crate::model::{Offset, TopicPartition};
use crate::plan::Plan;

/// The most pieces one split may return: 2^22 = 4,194,304 (about 160 MiB of [`TopicRange`]s),
/// enough for every partition of a million-partition plan in four pieces each. A split that
/// would need more is refused with [`SplitError::TooManyPieces`] instead of exhausting memory.
pub const MAX_PIECES: u64 = 1 << 22;

/// How to cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Split {
    /// Pieces of at most this many records.
    MaxRecords(u64),
    /// About this many pieces in total, shared among the ranges in proportion to their sizes.
    /// Every non-empty range is at least one piece, so the result has
    /// `max(n, non-empty ranges)` pieces at most; a range is never cut below one record a piece.
    Pieces(u64),
}

/// A split that cannot be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SplitError {
    /// `MaxRecords(0)` or `Pieces(0)`.
    Zero,
    /// The split would make `pieces` pieces, more than `max` ([`MAX_PIECES`]).
    TooManyPieces {
        /// How many pieces the split would make.
        pieces: u128,
        /// The limit, [`MAX_PIECES`].
        max: u64,
    },
}

impl fmt::Display for SplitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SplitError::Zero => f.write_str("a split needs at least one record or piece"),
            SplitError::TooManyPieces { pieces, max } => {
                write!(f, "the split would make {pieces} pieces, more than the {max} allowed")
            }
        }
    }
}

impl Error for SplitError {}

/// A piece of work: read `[from, until)` of `tp`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TopicRange {
    /// Where the records are; every piece of a split keeps its range's value.
    pub tp: TopicPartition,
    /// The first offset to read (inclusive).
    pub from: Offset,
    /// One past the last offset to read (exclusive).
    pub until: Offset,
}

impl TopicRange {
    /// `until − from`, the number of offsets in the range; 0 when `until <= from`.
    pub const fn records(&self) -> u64 {
        self.from.records_until(self.until)
    }
}

/// Cuts `[from, until)` into `pieces` contiguous ranges whose sizes differ by at most one
/// (larger ones first). Empty input (`until <= from`) gives no pieces; `pieces` above the record
/// count gives one-record pieces. `pieces = 0` is [`SplitError::Zero`], and more than
/// [`MAX_PIECES`] resulting pieces is [`SplitError::TooManyPieces`].
pub fn split_range(from: Offset, until: Offset, pieces: u64) -> Result<Vec<(Offset, Offset)>, SplitError> {
    if pieces == 0 {
        return Err(SplitError::Zero);
    }
    let k = pieces.min(from.records_until(until));
    if k > MAX_PIECES {
        return Err(SplitError::TooManyPieces { pieces: u128::from(k), max: MAX_PIECES });
    }
    let mut out = Vec::with_capacity(k as usize);
    cut(from, until, k, |a, b| out.push((a, b)));
    Ok(out)
}

/// `[from, until)` in `k <= records` pieces, handed to `push` in order.
fn cut(from: Offset, until: Offset, k: u64, mut push: impl FnMut(Offset, Offset)) {
    let size = from.records_until(until);
    if k == 0 {
        return;
    }
    let base = size / k;
    let extra = size % k;
    let mut at = from;
    for i in 0..k {
        let len = base + u64::from(i < extra);
        let next = at.saturating_add(len);
        push(at, next);
        at = next;
    }
}

/// Splits every non-empty range; empty ranges produce no pieces. Pieces come out grouped by
/// input range, in input order, each group in offset order. The total number of pieces is
/// computed (in 128 bits) and checked against [`MAX_PIECES`] before anything is allocated.
pub fn split_ranges(ranges: &[TopicRange], split: Split) -> Result<Vec<TopicRange>, SplitError> {
    let counts: Vec<u64> = match split {
        Split::MaxRecords(0) | Split::Pieces(0) => return Err(SplitError::Zero),
        Split::MaxRecords(m) => ranges.iter().map(|r| r.records().div_ceil(m)).collect(),
        Split::Pieces(n) => {
            let non_empty = ranges.iter().filter(|r| r.records() > 0).count() as u64;
            let total: u128 = ranges.iter().map(|r| u128::from(r.records())).sum();
            let extra = u128::from(n.saturating_sub(non_empty));
            ranges
                .iter()
                .map(|r| {
                    let size = r.records();
                    if size == 0 {
                        0
                    } else {
                        // total >= size > 0; extra × size / total <= extra < 2^64.
                        let more = (extra * u128::from(size) / total) as u64;
                        more.saturating_add(1).min(size)
                    }
                })
                .collect()
        }
    };
    let pieces: u128 = counts.iter().map(|&k| u128::from(k)).sum();
    if pieces > u128::from(MAX_PIECES) {
        return Err(SplitError::TooManyPieces { pieces, max: MAX_PIECES });
    }
    // At most MAX_PIECES, checked above.
    let mut out = Vec::with_capacity(pieces as usize);
    for (r, k) in ranges.iter().zip(counts) {
        cut(r.from, r.until, k, |from, until| out.push(TopicRange { tp: r.tp.clone(), from, until }));
    }
    Ok(out)
}

/// The plan's ranges as [`TopicRange`]s, in plan order (skipped and failed entries have none).
pub fn plan_ranges(plan: &Plan) -> Vec<TopicRange> {
    plan.entries
        .iter()
        .filter_map(|e| e.range().map(|r| TopicRange { tp: e.tp.clone(), from: r.from, until: r.until }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(p: i32, from: i64, until: i64) -> TopicRange {
        TopicRange { tp: TopicPartition::new("t", p), from: Offset(from), until: Offset(until) }
    }

    #[test]
    fn remainder_spread_over_first_pieces() {
        let pieces = split_range(Offset(10), Offset(20), 3).unwrap();
        assert_eq!(
            pieces,
            vec![(Offset(10), Offset(14)), (Offset(14), Offset(17)), (Offset(17), Offset(20))]
        );
        assert!(split_range(Offset(5), Offset(5), 3).unwrap().is_empty());
        assert!(split_range(Offset(6), Offset(5), 3).unwrap().is_empty());
        assert_eq!(split_range(Offset(0), Offset(2), 10).unwrap().len(), 2);
    }

    #[test]
    fn too_many_pieces_is_an_error_not_an_allocation() {
        assert_eq!(split_range(Offset(0), Offset(10), 0), Err(SplitError::Zero));
        assert_eq!(
            split_range(Offset(0), Offset(i64::MAX), u64::MAX),
            Err(SplitError::TooManyPieces { pieces: i64::MAX as u128, max: MAX_PIECES })
        );
        assert_eq!(split_range(Offset(0), Offset(i64::MAX), MAX_PIECES).unwrap().len() as u64, MAX_PIECES);
        let all = [r(0, 0, i64::MAX)];
        assert!(matches!(split_ranges(&all, Split::MaxRecords(1)), Err(SplitError::TooManyPieces { .. })));
        assert_eq!(
            split_ranges(&all, Split::Pieces(u64::MAX)).unwrap_err(),
            SplitError::TooManyPieces { pieces: i64::MAX as u128, max: MAX_PIECES }
        );
        // Huge ranges in few pieces are fine.
        let p = split_ranges(&all, Split::MaxRecords(u64::MAX)).unwrap();
        assert_eq!(p, vec![r(0, 0, i64::MAX)]);
    }

    #[test]
    fn max_records_bounds_each_piece() {
        let pieces = split_ranges(&[r(0, 0, 10), r(1, 5, 5)], Split::MaxRecords(4)).unwrap();
        assert_eq!(pieces, vec![r(0, 0, 4), r(0, 4, 7), r(0, 7, 10)]);
    }

    #[test]
    fn pieces_shared_by_size() {
        // 8 pieces: one each, then 6 more shared 900:100 → 5 and 0.
        let pieces = split_ranges(&[r(0, 0, 900), r(1, 0, 100)], Split::Pieces(8)).unwrap();
        assert_eq!(pieces.iter().filter(|p| p.tp.partition == 0).count(), 6);
        assert_eq!(pieces.iter().filter(|p| p.tp.partition == 1).count(), 1);
        assert_eq!(split_ranges(&[r(0, 0, 9)], Split::Pieces(0)), Err(SplitError::Zero));
        assert_eq!(split_ranges(&[r(0, 0, 9)], Split::MaxRecords(0)), Err(SplitError::Zero));
    }
}
