//! Tagged fields (KIP-482): kept raw so a round trip through kwire loses nothing.

use bytes::Bytes;

/// A struct's tagged-field section: `(tag, payload)` pairs in strictly ascending tag order.
/// Tags that a message models are taken out when decoding and put back when encoding; the
/// rest stay here untouched.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaggedFields(pub Vec<(u32, Bytes)>);

impl TaggedFields {
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Removes and returns the payload of `tag`.
    pub fn take(&mut self, tag: u32) -> Option<Bytes> {
        let i = self.0.iter().position(|(t, _)| *t == tag)?;
        Some(self.0.remove(i).1)
    }

    /// Inserts a payload, keeping tags ascending (replaces an existing one with that tag).
    pub fn put(&mut self, tag: u32, payload: Bytes) {
        match self.0.binary_search_by_key(&tag, |(t, _)| *t) {
            Ok(i) => self.0[i].1 = payload,
            Err(i) => self.0.insert(i, (tag, payload)),
        }
    }
}
