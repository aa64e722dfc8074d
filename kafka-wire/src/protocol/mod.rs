//! The sans-IO codec: bytes in, typed messages out, and back. No sockets, no clock.

pub mod api;
mod apis;
pub mod broker_ids;
pub mod decoder;
pub mod encoder;
pub mod error;
pub mod error_code;
pub mod frame;
pub mod header;
#[cfg(feature = "json")]
pub mod json;
pub mod messages;
pub mod names;
pub mod records;
pub mod registry;
pub mod tagged;
pub mod throttle;
pub mod uuid;

pub use api::{ApiKey, ApiSpec, Body, Request, VersionRange};
// The one list of implemented APIs, also here (it is defined at the crate root).
pub use crate::for_each_api;
pub use broker_ids::BrokerIds;
pub use decoder::{DecodeResult, Decoder};
pub use encoder::{EncodeResult, Encoder};
pub use error::{DecodeError, DecodeErrorKind, EncodeError};
pub use error_code::{ErrorCode, Recovery};
pub use tagged::TaggedFields;
pub use throttle::Throttled;
pub use uuid::Uuid;
