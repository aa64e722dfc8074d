//! The exporter's own cost: how many requests of each API its client has sent, counted from the
//! client's trace hook (every request frame, retries and connection setup included).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use kafka_client::{Direction, TraceEvent, TraceHook};

/// Requests sent so far, by API name; shared with the hook that counts them.
#[derive(Debug, Clone, Default)]
pub struct RequestCounts(Arc<Mutex<BTreeMap<String, u64>>>);

impl RequestCounts {
    /// The hook to give the client: counts each request frame under its API's name.
    pub fn hook(&self) -> TraceHook {
        let counts = self.0.clone();
        Arc::new(move |event: &TraceEvent<'_>| {
            if event.direction == Direction::Request {
                let mut counts = counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                *counts.entry(event.api.to_string()).or_default() += 1;
            }
        })
    }

    /// The counts now.
    pub fn now(&self) -> BTreeMap<String, u64> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// What was sent since `before` (a [`now`](Self::now) taken earlier), APIs with none left out.
    pub fn since(&self, before: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
        self.now()
            .into_iter()
            .map(|(api, n)| {
                let sent = n.saturating_sub(before.get(&api).copied().unwrap_or(0));
                (api, sent)
            })
            .filter(|(_, n)| *n > 0)
            .collect()
    }
}
