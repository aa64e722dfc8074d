//! A partition's list of broker ids (replicas, in-sync replicas, offline replicas).

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

/// Lists of up to this many ids are stored in the struct itself. Replication factors above 5
/// are rare, and 5 ids and a length fit in the 24 bytes a boxed slice and the tag take anyway.
const INLINE: usize = 5;

/// How many bytes [`BrokerIds::from_be_window`] reads and [`BrokerIds::to_be_window`] writes.
pub(crate) const WINDOW: usize = 4 * INLINE;

/// An immutable list of broker ids, read as a `&[i32]` (it derefs to one).
///
/// A Metadata response carries two or three of these per partition, so a 10,000-partition
/// response would otherwise make 20,000 small allocations, most of its decode time: up to
/// five ids are kept inline (the type is 24 bytes, three words), longer lists on the heap.
/// Build one from a `Vec<i32>`, an array, a slice or an iterator.
#[derive(Clone)]
pub struct BrokerIds(Repr);

#[derive(Clone)]
enum Repr {
    Inline { len: u8, ids: [i32; INLINE] },
    Heap(Box<[i32]>),
}

impl BrokerIds {
    /// An empty list (no allocation).
    pub const fn new() -> Self {
        Self(Repr::Inline { len: 0, ids: [0; INLINE] })
    }

    /// The broker ids, in wire order.
    pub fn as_slice(&self) -> &[i32] {
        match &self.0 {
            Repr::Inline { len, ids } => &ids[..usize::from(*len)],
            Repr::Heap(ids) => ids,
        }
    }

    /// Decodes the big-endian `i32`s in `raw` (a multiple of 4 bytes long).
    pub(crate) fn from_be_bytes(raw: &[u8]) -> Self {
        let ids = raw.chunks_exact(4).map(|c| i32::from_be_bytes([c[0], c[1], c[2], c[3]]));
        if raw.len() <= 4 * INLINE {
            let mut inline = [0; INLINE];
            for (slot, id) in inline.iter_mut().zip(ids) {
                *slot = id;
            }
            Self(Repr::Inline { len: (raw.len() / 4) as u8, ids: inline })
        } else {
            Self(Repr::Heap(ids.collect()))
        }
    }

    /// Decodes the first `len` (at most 5) big-endian `i32`s of `window`, whose bytes past
    /// them belong to whatever follows on the wire. Reading a fixed-size window lets the
    /// compiler decode every slot without a loop; the slots past `len` are never read.
    #[inline(always)]
    #[allow(clippy::inline_always)] // see `Decoder::broker_ids`
    pub(crate) fn from_be_window(window: &[u8; WINDOW], len: usize) -> Self {
        debug_assert!(len <= INLINE);
        let ids = std::array::from_fn(|i| {
            i32::from_be_bytes([window[4 * i], window[4 * i + 1], window[4 * i + 2], window[4 * i + 3]])
        });
        Self(Repr::Inline { len: len as u8, ids })
    }

    /// For a list stored inline: every inline slot as big-endian bytes (those past the
    /// list's length are meaningless) and the length. A fixed-size block the encoder appends
    /// whole and then trims, without a loop or a variable-length copy.
    #[inline]
    pub(crate) fn to_be_window(&self) -> Option<([u8; WINDOW], usize)> {
        match &self.0 {
            Repr::Inline { len, ids } => {
                let mut window = [0u8; WINDOW];
                for (out, id) in window.chunks_exact_mut(4).zip(ids) {
                    out.copy_from_slice(&id.to_be_bytes());
                }
                Some((window, usize::from(*len)))
            }
            Repr::Heap(_) => None,
        }
    }
}

impl Default for BrokerIds {
    fn default() -> Self {
        Self::new()
    }
}

impl Deref for BrokerIds {
    type Target = [i32];

    fn deref(&self) -> &[i32] {
        self.as_slice()
    }
}

impl AsRef<[i32]> for BrokerIds {
    fn as_ref(&self) -> &[i32] {
        self.as_slice()
    }
}

impl Borrow<[i32]> for BrokerIds {
    fn borrow(&self) -> &[i32] {
        self.as_slice()
    }
}

impl From<&[i32]> for BrokerIds {
    fn from(ids: &[i32]) -> Self {
        if ids.len() <= INLINE {
            let mut inline = [0; INLINE];
            inline[..ids.len()].copy_from_slice(ids);
            Self(Repr::Inline { len: ids.len() as u8, ids: inline })
        } else {
            Self(Repr::Heap(ids.into()))
        }
    }
}

impl<const N: usize> From<[i32; N]> for BrokerIds {
    fn from(ids: [i32; N]) -> Self {
        Self::from(&ids[..])
    }
}

impl From<Vec<i32>> for BrokerIds {
    fn from(ids: Vec<i32>) -> Self {
        if ids.len() <= INLINE {
            Self::from(&ids[..])
        } else {
            Self(Repr::Heap(ids.into_boxed_slice()))
        }
    }
}

impl From<BrokerIds> for Vec<i32> {
    fn from(ids: BrokerIds) -> Self {
        match ids.0 {
            Repr::Inline { .. } => ids.as_slice().to_vec(),
            Repr::Heap(ids) => ids.into_vec(),
        }
    }
}

impl FromIterator<i32> for BrokerIds {
    fn from_iter<I: IntoIterator<Item = i32>>(iter: I) -> Self {
        Self::from(iter.into_iter().collect::<Vec<_>>())
    }
}

impl<'a> IntoIterator for &'a BrokerIds {
    type Item = &'a i32;
    type IntoIter = std::slice::Iter<'a, i32>;

    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

impl PartialEq for BrokerIds {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for BrokerIds {}

impl PartialEq<[i32]> for BrokerIds {
    fn eq(&self, other: &[i32]) -> bool {
        self.as_slice() == other
    }
}

impl<const N: usize> PartialEq<[i32; N]> for BrokerIds {
    fn eq(&self, other: &[i32; N]) -> bool {
        self.as_slice() == other
    }
}

impl PartialEq<Vec<i32>> for BrokerIds {
    fn eq(&self, other: &Vec<i32>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Hash for BrokerIds {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state);
    }
}

/// Printed as the list it is, `[1, 2, 3]`, whichever way it is stored.
impl fmt::Debug for BrokerIds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_slice().fmt(f)
    }
}

#[cfg(feature = "json")]
impl serde::Serialize for BrokerIds {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.as_slice().serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn it_takes_three_words_even_as_an_option() {
        assert_eq!(std::mem::size_of::<BrokerIds>(), 3 * std::mem::size_of::<usize>());
        assert_eq!(std::mem::size_of::<Option<BrokerIds>>(), std::mem::size_of::<BrokerIds>());
    }

    #[test]
    fn short_and_long_lists_read_back_the_same_way() {
        for n in 0..=12 {
            let ids: Vec<i32> = (0..n).map(|i| i * 7 - 3).collect();
            let raw: Vec<u8> = ids.iter().flat_map(|i| i.to_be_bytes()).collect();
            assert_eq!(BrokerIds::from_be_bytes(&raw), ids);
            assert_eq!(BrokerIds::from(ids.clone()), ids);
            assert_eq!(BrokerIds::from(&ids[..]).as_slice(), &ids[..]);
            assert_eq!(ids.iter().copied().collect::<BrokerIds>(), ids);
            assert_eq!(Vec::from(BrokerIds::from(ids.clone())), ids);
            assert_eq!(format!("{:?}", BrokerIds::from(ids.clone())), format!("{ids:?}"));
        }
    }

    proptest! {
        #[test]
        fn equality_and_hash_follow_the_ids_not_the_storage(ids in proptest::collection::vec(any::<i32>(), 0..10)) {
            use std::collections::hash_map::DefaultHasher;
            let hash = |v: &BrokerIds| { let mut h = DefaultHasher::new(); v.hash(&mut h); h.finish() };
            let inline_or_heap = BrokerIds::from(&ids[..]);
            let from_vec = BrokerIds::from(ids.clone());
            prop_assert_eq!(&inline_or_heap, &from_vec);
            prop_assert_eq!(hash(&inline_or_heap), hash(&from_vec));
            prop_assert_eq!(inline_or_heap.len(), ids.len());
        }
    }
}
