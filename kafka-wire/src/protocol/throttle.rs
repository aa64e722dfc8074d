//! Broker throttling (KIP-219): a response's `throttle_time_ms` says how long the broker wants
//! the client to hold back before its next request on that connection. Every response of the
//! API list ([`for_each_api!`](crate::for_each_api)) implements [`Throttled`] from its
//! `throttle_time_ms` field, so the client can honour it for any call; a new API gets it with
//! no edit here (an API whose response has no such field is named below).

#[allow(clippy::wildcard_imports)] // every message type, as the list names them
use super::messages::*;

/// A response that may ask the client to hold back.
pub trait Throttled {
    /// Milliseconds the broker asked the client to wait before its next request; 0 when none.
    fn throttle_time_ms(&self) -> i32;
}

/// A response's `throttle_time_ms` field: `i32`, or `Option<i32>` where early versions lack it.
/// Absent or negative means no wait.
trait ThrottleField {
    fn wait_ms(&self) -> i32;
}

impl ThrottleField for i32 {
    fn wait_ms(&self) -> i32 {
        (*self).max(0)
    }
}

impl ThrottleField for Option<i32> {
    fn wait_ms(&self) -> i32 {
        self.unwrap_or(0).max(0)
    }
}

/// `Throttled` for one response type: its `throttle_time_ms` field, whichever type it has.
macro_rules! throttled {
    // Neither SASL response has a throttle field: authentication is not quota-managed.
    (SaslHandshakeResponse) => {
        never_throttled!(SaslHandshakeResponse);
    };
    (SaslAuthenticateResponse) => {
        never_throttled!(SaslAuthenticateResponse);
    };
    ($resp:ident) => {
        impl Throttled for $resp {
            fn throttle_time_ms(&self) -> i32 {
                self.throttle_time_ms.wait_ms()
            }
        }
    };
}

macro_rules! never_throttled {
    ($resp:ident) => {
        impl Throttled for $resp {
            fn throttle_time_ms(&self) -> i32 {
                0
            }
        }
    };
}

macro_rules! every_response {
    ($(($key:literal, $name:ident, $req:ident, $resp:ident)),* $(,)?) => {
        $(throttled!($resp);)*
    };
}

crate::for_each_api!(every_response);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_or_negative_throttle_times_mean_no_wait() {
        let mut r = MetadataResponse::default();
        assert_eq!(r.throttle_time_ms(), 0);
        r.throttle_time_ms = Some(250);
        assert_eq!(r.throttle_time_ms(), 250);
        r.throttle_time_ms = Some(-5);
        assert_eq!(r.throttle_time_ms(), 0);
        let plain = |ms| DeleteRecordsResponse { throttle_time_ms: ms, ..DeleteRecordsResponse::default() };
        assert_eq!(plain(-1).throttle_time_ms(), 0);
        assert_eq!(plain(30).throttle_time_ms(), 30);
        assert_eq!(SaslHandshakeResponse::default().throttle_time_ms(), 0);
    }
}
