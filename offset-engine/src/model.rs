//! The vocabulary: offsets, partitions, epochs, topic ids, the stored position and the log view.
//!
//! Every number that comes off the wire is an `i64`/`i32` and is kept as such (Kafka's own
//! types), but wrapped so an offset is never passed where an epoch is expected. Values are
//! checked where the engine consumes them ([`LogView::validate`], [`Stored::validate`]), never
//! trusted.
//!
//! Kafka spells "unknown" as a value: the all-zero topic id, offset `-1`, leader epoch `-1`.
//! The engine never compares those as real values. The `from_wire` constructors
//! ([`TopicId::from_wire`], [`LeaderEpoch::from_wire`], [`Offset::from_wire`],
//! [`Stored::from_wire`], [`crate::TimeLookup::from_wire`]) turn them into `None` (or the
//! variant that means "none"), and every entry point normalises again what a caller built by
//! hand ([`Stored::normalized`], [`LogView::normalized`]): a `Some(TopicId([0; 16]))` or a
//! `Some(LeaderEpoch(-1))` is treated as unknown, everywhere.

use std::error::Error;
use std::fmt;
use std::str::FromStr;

pub use kafka_vocab::{Isolation, StoredOffset, TopicPartition};
use kafka_vocab::{Uuid, UuidParseError};

/// A position in a partition's log. A committed offset is the *next* offset to read (Kafka's
/// convention), so a partition holding records `0..=9` has `high_watermark = Offset(10)`, and a
/// consumer that processed all of them commits `Offset(10)`.
///
/// Valid offsets are `>= 0`; the engine reports negative ones as invalid input instead of
/// treating `-1` as "nothing stored" (absence is `Option<Stored>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Offset(pub i64);

impl Offset {
    /// The offset as Kafka's wire integer.
    pub const fn get(self) -> i64 {
        self.0
    }

    /// Records in `[self, until)`; `0` when `until <= self`. Saturates instead of overflowing.
    pub const fn records_until(self, until: Offset) -> u64 {
        if until.0 <= self.0 {
            0
        } else {
            // `until > self`, so the difference is positive; `abs_diff` cannot overflow.
            until.0.abs_diff(self.0)
        }
    }

    /// An offset from the wire: `None` for Kafka's "none"/"unknown" `-1` (and any other negative
    /// value: no offset is negative).
    pub const fn from_wire(offset: i64) -> Option<Offset> {
        if offset < 0 {
            None
        } else {
            Some(Offset(offset))
        }
    }

    /// `self + n`, clamped to `i64::MAX`.
    #[must_use]
    pub const fn saturating_add(self, n: u64) -> Offset {
        let n = if n > i64::MAX as u64 { i64::MAX } else { n as i64 };
        Offset(self.0.saturating_add(n))
    }
}

impl fmt::Display for Offset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl From<i64> for Offset {
    fn from(v: i64) -> Self {
        Offset(v)
    }
}

/// A partition leader epoch (KIP-101/KIP-320). Increases with every leader change; stored with
/// committed offsets so a truncation after an unclean election can be detected.
///
/// Kafka sends `-1` for "no epoch"; [`LeaderEpoch::from_wire`] maps it to `None`, and the engine
/// treats a negative epoch it is handed directly as unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LeaderEpoch(pub i32);

impl LeaderEpoch {
    /// `None` for Kafka's `-1` "no epoch" (and any other negative value).
    pub const fn from_wire(epoch: i32) -> Option<LeaderEpoch> {
        if epoch < 0 {
            None
        } else {
            Some(LeaderEpoch(epoch))
        }
    }

    /// `epoch` unless it is negative (unknown).
    pub const fn known(epoch: Option<LeaderEpoch>) -> Option<LeaderEpoch> {
        match epoch {
            Some(e) if e.0 >= 0 => Some(e),
            _ => None,
        }
    }
}

impl fmt::Display for LeaderEpoch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A topic's 16-byte id (Kafka 2.8+). A topic deleted and recreated under the same name gets a
/// new id, which is the only reliable evidence that stored offsets belong to another log.
///
/// Kafka sends the all-zero id to mean "unknown" (`Uuid.ZERO_UUID`); [`TopicId::from_wire`]
/// maps it to `None`, parsing its text form is an error ([`TopicIdParseError::Zero`]; use
/// [`TopicId::parse_wire`] to get `None`), and the engine treats a `TopicId([0; 16])` it is
/// handed directly as unknown: never compared with a real id, never stored.
/// Displays like Java's `Uuid.toString()`: URL-safe base64 without padding (22 characters).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TopicId(pub [u8; 16]);

impl TopicId {
    /// `None` for Kafka's all-zero "no id" value.
    pub fn from_wire(bytes: [u8; 16]) -> Option<TopicId> {
        if bytes == [0; 16] {
            None
        } else {
            Some(TopicId(bytes))
        }
    }

    /// Whether this is Kafka's all-zero "unknown" id.
    #[inline]
    pub fn is_zero(&self) -> bool {
        u128::from_ne_bytes(self.0) == 0
    }

    /// `id` unless it is the all-zero "unknown" id.
    #[inline]
    pub fn known(id: Option<TopicId>) -> Option<TopicId> {
        match id {
            Some(i) if !i.is_zero() => Some(i),
            _ => None,
        }
    }

    /// Parses the text form as Kafka writes it anywhere an id may be unknown: the all-zero id
    /// (`AAAAAAAAAAAAAAAAAAAAAA`) is `Ok(None)`.
    pub fn parse_wire(s: &str) -> Result<Option<TopicId>, TopicIdParseError> {
        match s.parse::<TopicId>() {
            Ok(id) => Ok(Some(id)),
            Err(TopicIdParseError::Zero) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

impl fmt::Display for TopicId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Uuid(self.0).fmt(f)
    }
}

impl fmt::Debug for TopicId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TopicId({self})")
    }
}

/// Why a string is not a topic id.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TopicIdParseError {
    /// Not Kafka's 22-character base64url text (the one codec, [`Uuid::parse`], says why).
    Text(UuidParseError),
    /// The all-zero id, which Kafka uses for "unknown", not a topic's id
    /// ([`TopicId::parse_wire`] reads it as `None`).
    Zero,
}

impl fmt::Display for TopicIdParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Text(e) => e.fmt(f),
            Self::Zero => f.write_str("the all-zero topic id means \"unknown\", not a topic"),
        }
    }
}

impl Error for TopicIdParseError {}

impl FromStr for TopicId {
    type Err = TopicIdParseError;

    /// Kafka's text form (the one codec: [`Uuid::parse`]); the all-zero id is an error here.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let id = Uuid::parse(s).map_err(TopicIdParseError::Text)?;
        if id.is_zero() {
            return Err(TopicIdParseError::Zero);
        }
        Ok(TopicId(id.0))
    }
}

/// A stored (committed) position: where a consumer will resume. `offset` is the next offset to
/// read. The optional fields are what a modern store keeps alongside: without `topic_id` a
/// recreated topic cannot be told from a truncated one, without `leader_epoch` a truncation
/// cannot be detected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stored {
    /// The next offset to read, `>= 0` (see [`Stored::validate`]).
    pub offset: Offset,
    /// The leader epoch of the last record read; `None` when the store has none.
    pub leader_epoch: Option<LeaderEpoch>,
    /// The topic's id when the offset was committed; `None` when the store has none.
    pub topic_id: Option<TopicId>,
    /// When the offset was committed, milliseconds since the Unix epoch.
    pub commit_timestamp_ms: Option<i64>,
}

impl Stored {
    /// A bare offset, as old stores (ZooKeeper, files) keep it.
    pub const fn at(offset: i64) -> Self {
        Stored { offset: Offset(offset), leader_epoch: None, topic_id: None, commit_timestamp_ms: None }
    }

    /// A stored position as the wire or a store spells it: `None` for offset `-1` (Kafka's
    /// OffsetFetch "nothing committed"); a leader epoch below 0, the all-zero topic id and a
    /// negative timestamp become `None`. Any other negative offset is kept, so that planning
    /// reports it as [`InvalidInput::NegativeStored`] instead of guessing.
    pub fn from_wire(
        offset: i64,
        leader_epoch: Option<i32>,
        topic_id: Option<[u8; 16]>,
        commit_timestamp_ms: Option<i64>,
    ) -> Option<Stored> {
        if offset == -1 {
            return None;
        }
        Some(Stored {
            offset: Offset(offset),
            leader_epoch: leader_epoch.and_then(LeaderEpoch::from_wire),
            topic_id: topic_id.and_then(TopicId::from_wire),
            commit_timestamp_ms: commit_timestamp_ms.filter(|t| *t >= 0),
        })
    }

    /// A store's entry as the engine reads it, Kafka's "unknown" values normalised as in
    /// [`Stored::from_wire`]: `None` for offset `-1` (nothing committed); an epoch of `-1` and
    /// the all-zero topic id are `None`.
    pub fn from_store(entry: &StoredOffset) -> Option<Stored> {
        Stored::from_wire(
            entry.offset,
            entry.leader_epoch,
            entry.topic_id.map(|id| id.0),
            entry.commit_timestamp_ms,
        )
    }

    /// This position as the store entry of `tp`.
    pub fn to_store(&self, tp: &TopicPartition) -> StoredOffset {
        StoredOffset {
            topic: tp.topic.to_string(),
            partition: tp.partition,
            offset: self.offset.0,
            leader_epoch: self.leader_epoch.map(|e| e.0),
            topic_id: self.topic_id.map(|id| Uuid(id.0)),
            commit_timestamp_ms: self.commit_timestamp_ms,
        }
    }

    /// The same position with "unknown" values as `None`: a negative leader epoch and the
    /// all-zero topic id.
    #[must_use]
    pub fn normalized(self) -> Stored {
        Stored {
            leader_epoch: LeaderEpoch::known(self.leader_epoch),
            topic_id: TopicId::known(self.topic_id),
            ..self
        }
    }

    /// A stored offset must be `>= 0`: `-1` is how Kafka's OffsetFetch says "none", which the
    /// caller must turn into `None` before it gets here.
    pub fn validate(&self) -> Result<(), InvalidInput> {
        if self.offset.0 < 0 {
            return Err(InvalidInput::NegativeStored { stored: self.offset });
        }
        Ok(())
    }
}

/// What the broker says about a partition's log, as ListOffsets/Metadata report it.
///
/// Invariant checked by [`LogView::validate`]: `0 <= log_start <= last_stable <= high_watermark`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LogView {
    /// The first offset still in the log (ListOffsets earliest, `-2`).
    pub log_start: Offset,
    /// One past the last replicated record (ListOffsets latest, `-1`, read_uncommitted).
    pub high_watermark: Offset,
    /// One past the last record not covered by an open transaction (ListOffsets latest under
    /// read_committed). Equal to `high_watermark` when there are no transactions.
    pub last_stable: Offset,
    /// The partition's current leader epoch; `None` when the broker did not say.
    pub leader_epoch: Option<LeaderEpoch>,
    /// The topic's id; `None` when unknown (brokers before Kafka 2.8). The engine reads the
    /// all-zero id as `None` too.
    pub topic_id: Option<TopicId>,
}

impl LogView {
    /// A view without transactions, epochs or ids: `last_stable = high_watermark`.
    pub const fn new(log_start: i64, high_watermark: i64) -> Self {
        LogView {
            log_start: Offset(log_start),
            high_watermark: Offset(high_watermark),
            last_stable: Offset(high_watermark),
            leader_epoch: None,
            topic_id: None,
        }
    }

    /// The exclusive end a consumer with this isolation can read up to.
    pub const fn end(&self, isolation: Isolation) -> Offset {
        match isolation {
            Isolation::ReadUncommitted => self.high_watermark,
            Isolation::ReadCommitted => self.last_stable,
        }
    }

    /// The same view with "unknown" values as `None`: a negative leader epoch and the all-zero
    /// topic id.
    #[must_use]
    pub fn normalized(self) -> LogView {
        LogView {
            leader_epoch: LeaderEpoch::known(self.leader_epoch),
            topic_id: TopicId::known(self.topic_id),
            ..self
        }
    }

    /// `Ok` when `0 <= log_start <= last_stable <= high_watermark`, else
    /// [`InvalidInput::InconsistentLogView`] with the three offsets.
    pub fn validate(&self) -> Result<(), InvalidInput> {
        let ok = self.log_start.0 >= 0
            && self.log_start <= self.last_stable
            && self.last_stable <= self.high_watermark;
        if ok {
            Ok(())
        } else {
            Err(InvalidInput::InconsistentLogView {
                log_start: self.log_start,
                last_stable: self.last_stable,
                high_watermark: self.high_watermark,
            })
        }
    }
}

/// What the caller found when it looked a partition up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LogState {
    /// The partition exists; its log as the broker reported it.
    Found(LogView),
    /// The topic exists but has no such partition.
    PartitionNotFound,
    /// No topic of that name (deleted, or never existed).
    TopicNotFound,
}

/// Input the engine refuses to reason about. Reported per partition, never a panic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InvalidInput {
    /// Not `0 <= log_start <= last_stable <= high_watermark`.
    InconsistentLogView {
        /// The view's first offset.
        log_start: Offset,
        /// The view's exclusive end under read_committed.
        last_stable: Offset,
        /// The view's exclusive end under read_uncommitted.
        high_watermark: Offset,
    },
    /// A stored offset below 0 (a `-1` "none" placeholder that was not turned into `None`).
    NegativeStored {
        /// The stored offset as given.
        stored: Offset,
    },
    /// A timestamp lookup answered with an offset below `-1` (`-1` is Kafka's "no record at or
    /// after the time" and is read as [`crate::TimeLookup::NoRecordAtOrAfter`]).
    NegativeTimestampOffset {
        /// The offset as answered.
        offset: Offset,
    },
}

impl fmt::Display for InvalidInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InconsistentLogView { log_start, last_stable, high_watermark } => write!(
                f,
                "inconsistent log view: need 0 <= log_start ({log_start}) <= last_stable \
                 ({last_stable}) <= high_watermark ({high_watermark})"
            ),
            Self::NegativeStored { stored } => {
                write!(f, "stored offset {stored} is negative; \"nothing stored\" must be passed as absent")
            }
            Self::NegativeTimestampOffset { offset } => {
                write!(f, "the offset looked up for the time is {offset}, neither an offset nor -1 (none)")
            }
        }
    }
}

impl Error for InvalidInput {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_entries_convert_both_ways() {
        let o = StoredOffset {
            topic: "t".into(),
            partition: 2,
            offset: 40,
            leader_epoch: Some(3),
            topic_id: Some(Uuid([5; 16])),
            commit_timestamp_ms: Some(9),
        };
        let tp = TopicPartition::new("t", 2);
        assert_eq!(Stored::from_store(&o).map(|s| s.to_store(&tp)), Some(o.clone()));
        let zero = StoredOffset { topic_id: Some(Uuid::ZERO), leader_epoch: Some(-1), ..o.clone() };
        let engine = Stored::from_store(&zero).expect("offset 40 is a position");
        assert_eq!(
            (engine.topic_id, engine.leader_epoch),
            (None, None),
            "Kafka's zero id and -1 mean unknown"
        );
        assert_eq!(Stored::from_store(&StoredOffset { offset: -1, ..o }), None, "-1 is nothing committed");
    }

    #[test]
    fn topic_id_text_matches_java_uuid_to_string() {
        // Java: new Uuid(0x0123456789abcdefL, 0xfedcba9876543210L).toString()
        let id = TopicId([
            0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10,
        ]);
        assert_eq!(id.to_string(), "ASNFZ4mrze_-3LqYdlQyEA");
        assert_eq!("ASNFZ4mrze_-3LqYdlQyEA".parse::<TopicId>(), Ok(id));
    }

    #[test]
    fn topic_id_parse_rejects_bad_text() {
        assert_eq!(
            "abc".parse::<TopicId>(),
            Err(TopicIdParseError::Text(UuidParseError::WrongLength { found: 3 }))
        );
        assert_eq!(
            "ASNFZ4mrze_+3LqYdlQyEA".parse::<TopicId>(),
            Err(TopicIdParseError::Text(UuidParseError::InvalidCharacter { position: 11 }))
        );
        assert_eq!(
            "ASNFZ4mrze_-3LqYdlQyEB".parse::<TopicId>(),
            Err(TopicIdParseError::Text(UuidParseError::NonCanonical))
        );
    }

    #[test]
    fn zero_topic_id_from_the_wire_means_unknown() {
        assert_eq!(TopicId::from_wire([0; 16]), None);
        assert!(TopicId::from_wire([1; 16]).is_some());
        assert_eq!(TopicId::known(Some(TopicId([0; 16]))), None);
        assert_eq!("AAAAAAAAAAAAAAAAAAAAAA".parse::<TopicId>(), Err(TopicIdParseError::Zero));
        assert_eq!(TopicId::parse_wire("AAAAAAAAAAAAAAAAAAAAAA"), Ok(None));
        assert_eq!(TopicId::parse_wire("AQEBAQEBAQEBAQEBAQEBAQ"), Ok(Some(TopicId([1; 16]))));
    }

    #[test]
    fn minus_one_from_the_wire_means_unknown() {
        assert_eq!(Offset::from_wire(-1), None);
        assert_eq!(Offset::from_wire(0), Some(Offset(0)));
        assert_eq!(LeaderEpoch::from_wire(-1), None);
        assert_eq!(LeaderEpoch::from_wire(0), Some(LeaderEpoch(0)));
        assert_eq!(Stored::from_wire(-1, Some(3), Some([1; 16]), Some(5)), None);
        assert_eq!(
            Stored::from_wire(7, Some(-1), Some([0; 16]), Some(-1)),
            Some(Stored::at(7)),
            "unknown epoch, id and time are None"
        );
        assert_eq!(Stored::from_wire(-2, None, None, None), Some(Stored::at(-2)), "kept, reported invalid");
        let odd =
            Stored { leader_epoch: Some(LeaderEpoch(-1)), topic_id: Some(TopicId([0; 16])), ..Stored::at(1) };
        assert_eq!(odd.normalized(), Stored::at(1));
    }

    #[test]
    fn records_until_never_negative_or_overflowing() {
        assert_eq!(Offset(5).records_until(Offset(3)), 0);
        assert_eq!(Offset(3).records_until(Offset(5)), 2);
        assert_eq!(Offset(0).records_until(Offset(i64::MAX)), i64::MAX as u64);
        assert_eq!(Offset(i64::MAX).saturating_add(u64::MAX), Offset(i64::MAX));
    }

    #[test]
    fn log_view_with_start_above_end_is_invalid() {
        assert!(LogView::new(10, 5).validate().is_err());
        assert!(LogView::new(-1, 5).validate().is_err());
        assert!(LogView::new(5, 5).validate().is_ok());
    }
}
