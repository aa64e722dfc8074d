//! One partition's stored position, the same in every store: the shared vocabulary's
//! [`StoredOffset`], re-exported where store implementors look for it.

pub use kafka_vocab::StoredOffset;
