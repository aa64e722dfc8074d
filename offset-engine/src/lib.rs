#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

pub mod anomaly;
pub mod commit;
pub mod formats;
pub mod health;
pub mod lag;
pub mod model;
pub mod plan;
pub mod policy;
pub mod rate;
pub mod reset;
pub mod split;
pub mod time_lag;

pub use anomaly::{Anomaly, AnomalyKind};
pub use commit::{commits_for, merge_commit, merge_commits, Commit, CommitDecision, CommitRejection};
pub use formats::{CsvError, JsonError, SparkOffset};
pub use health::{evaluate as evaluate_health, Health, HealthConfig, HealthFacts};
pub use lag::{lag, lag_of, stored_lag, Lag};
pub use model::{
    InvalidInput, Isolation, LeaderEpoch, LogState, LogView, Offset, Stored, StoredOffset, TopicId,
    TopicIdParseError, TopicPartition,
};
pub use plan::{
    plan, plan_into, FromReason, Outcome, PartitionInput, Plan, PlanEntry, PlanRequest, PlannedRange,
    SkipReason, UntilReason,
};
pub use policy::{OutOfRangePolicy, StartPolicy, TimeError, TimeLookup};
pub use rate::{
    BatchCap, BatchCapSource, BatchObservation, Limits, PidConfig, PidState, RateCarry, RateError,
    TimeBudget, NOT_WAITING,
};
pub use reset::{plan_reset, ResetEntry, ResetError, ResetInput, ResetReason, ResetTarget, ResetTo};
pub use split::{plan_ranges, split_range, split_ranges, Split, SplitError, TopicRange, MAX_PIECES};
pub use time_lag::{
    catch_up, estimate_time_lag, time_lag_of_record, CatchUp, Sample, TimeLag, TimeLagUnknown,
};
