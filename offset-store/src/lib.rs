#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod batch;
mod error;
mod offset_store;
mod read_back;
mod spec;
mod stored;

pub use batch::validate_batch;
pub use error::{RefusedPartition, StoreError};
pub use offset_store::{BoxError, OffsetStore, StoreFuture};
pub use read_back::{check_read_back, topics_of};
pub use spec::StoreSpec;
pub use stored::StoredOffset;
