//! Pure, IO-free Kafka offset reconciliation: stored offsets and log ranges in; safe
//! `[from, until)` ranges, named anomalies with their numbers, lag, commits and resets out.
//!
//! No IO, no clock, no randomness: time (milliseconds since the Unix epoch) and all state are
//! arguments, and every decision is in the output.

pub mod anomaly;
pub mod formats;
pub mod lag;
pub mod model;
pub mod plan;
pub mod policy;
pub mod rate;

pub use anomaly::{Anomaly, AnomalyKind};
pub use lag::{lag, lag_of, Lag};
pub use model::{
    InvalidInput, Isolation, LeaderEpoch, LogState, LogView, Offset, Partition, Stored, TopicId,
    TopicIdParseError, TopicPartition,
};
pub use plan::{
    plan, FromReason, Outcome, PartitionInput, Plan, PlanEntry, PlanRequest, PlannedRange, SkipReason,
    UntilReason,
};
pub use policy::{OutOfRangePolicy, StartPolicy, TimeError, TimeLookup};
pub use rate::{
    BatchCap, BatchCapSource, BatchObservation, Limits, PidConfig, PidState, RateCarry, RateError, TimeBudget,
};
