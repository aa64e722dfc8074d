//! Tagged fields (KIP-482): kept raw so a round trip through kwire loses nothing.

use bytes::Bytes;

/// A struct's tagged-field section: `(tag, payload)` pairs in strictly ascending tag order.
/// Tags that a message models are taken out when decoding and put back when encoding; the
/// rest stay here untouched.
///
/// Almost every section on the wire is empty, and every struct of every message carries one,
/// so the empty set is a null pointer: one word in the struct, nothing to allocate or free
/// (a 10,000-partition response decodes measurably faster than with an inline `Vec`).
#[derive(Clone, Default)]
pub struct TaggedFields(Option<Box<TagList>>);

/// The non-empty pairs. A struct of its own so that the drop code of an empty set stays a
/// null check that the compiler inlines: with a `Box<Vec<..>>`, dropping a vector of
/// 10,000 partitions made 10,000 calls to an out-of-line drop.
#[derive(Clone)]
struct TagList(Vec<(u32, Bytes)>);

impl Drop for TagList {
    #[inline(never)]
    fn drop(&mut self) {
        self.0.clear();
    }
}

impl TaggedFields {
    /// The pairs, which must be in strictly ascending tag order (the decoder guarantees it;
    /// the encoder writes them as given).
    pub fn new(fields: Vec<(u32, Bytes)>) -> Self {
        if fields.is_empty() {
            Self(None)
        } else {
            Self(Some(Box::new(TagList(fields))))
        }
    }

    /// Whether there are no tagged fields.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// How many tagged fields there are.
    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    /// The pairs, in ascending tag order.
    #[inline]
    pub fn as_slice(&self) -> &[(u32, Bytes)] {
        self.0.as_deref().map_or(&[], |list| list.0.as_slice())
    }

    /// The `(tag, payload)` pairs, in ascending tag order.
    pub fn iter(&self) -> std::slice::Iter<'_, (u32, Bytes)> {
        self.as_slice().iter()
    }

    /// Removes and returns the payload of `tag`.
    pub fn take(&mut self, tag: u32) -> Option<Bytes> {
        let fields = &mut self.0.as_mut()?.0;
        let i = fields.iter().position(|(t, _)| *t == tag)?;
        let (_, payload) = fields.remove(i);
        if fields.is_empty() {
            self.0 = None;
        }
        Some(payload)
    }

    /// Inserts a payload, keeping tags ascending (replaces an existing one with that tag).
    pub fn put(&mut self, tag: u32, payload: Bytes) {
        let fields = &mut self.0.get_or_insert_with(|| Box::new(TagList(Vec::new()))).0;
        match fields.binary_search_by_key(&tag, |(t, _)| *t) {
            Ok(i) => fields[i].1 = payload,
            Err(i) => fields.insert(i, (tag, payload)),
        }
    }
}

impl From<Vec<(u32, Bytes)>> for TaggedFields {
    fn from(fields: Vec<(u32, Bytes)>) -> Self {
        Self::new(fields)
    }
}

impl<'a> IntoIterator for &'a TaggedFields {
    type Item = &'a (u32, Bytes);
    type IntoIter = std::slice::Iter<'a, (u32, Bytes)>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl PartialEq for TaggedFields {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for TaggedFields {}

impl std::fmt::Debug for TaggedFields {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("TaggedFields").field(&self.as_slice()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_empty_set_is_one_word() {
        assert_eq!(std::mem::size_of::<TaggedFields>(), std::mem::size_of::<usize>());
    }

    #[test]
    fn taking_the_last_tag_leaves_a_set_equal_to_the_empty_one() {
        let mut tags = TaggedFields::new(vec![(3, Bytes::from_static(b"x"))]);
        assert_eq!(tags.take(4), None);
        assert_eq!(tags.take(3), Some(Bytes::from_static(b"x")));
        assert!(tags.is_empty());
        assert_eq!(tags, TaggedFields::default());
    }

    #[test]
    fn put_keeps_tags_ascending_and_replaces() {
        let mut tags = TaggedFields::default();
        tags.put(5, Bytes::from_static(b"a"));
        tags.put(1, Bytes::from_static(b"b"));
        tags.put(5, Bytes::from_static(b"c"));
        let tags: Vec<u32> = tags.iter().map(|(t, _)| *t).collect();
        assert_eq!(tags, [1, 5]);
    }
}
