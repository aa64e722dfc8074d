//! The sans-IO codec: bytes in, typed messages out, and back. No sockets, no clock.

pub(crate) mod api;
mod apis;
pub(crate) mod broker_ids;
pub mod consumer_protocol;
pub(crate) mod decoder;
pub(crate) mod encoder;
pub(crate) mod error;
pub(crate) mod error_code;
pub mod frame;
pub(crate) mod header;
#[cfg(feature = "json")]
pub mod json;
pub(crate) mod message_macro;
pub mod messages;
pub mod names;
pub mod records;
pub mod registry;
pub mod request_frame;
pub mod schema;
pub mod scram;
pub(crate) mod tagged;
pub(crate) mod throttle;

pub use api::{ApiKey, ApiSpec, Body, Request, VersionRange};
// The one list of implemented APIs, also here (it is defined at the crate root).
pub use crate::for_each_api;
pub use broker_ids::BrokerIds;
pub use decoder::{DecodeResult, Decoder};
pub use encoder::{EncodeResult, Encoder};
pub use error::{DecodeError, DecodeErrorKind, EncodeError};
pub use error_code::{ErrorCode, Recovery};
pub use header::{RequestHeader, ResponseHeader};
pub use kafka_vocab::{Uuid, UuidParseError};
pub use tagged::TaggedFields;
pub use throttle::Throttled;
