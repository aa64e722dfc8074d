//! A request frame as it is written to a socket: the encoded bytes, with large shared byte
//! fields (a Produce request's record batches) held by reference where they belong instead of
//! copied in. Writing the segments one after another puts the same bytes on the wire as the
//! contiguous frame.

use bytes::Bytes;

/// Shared byte fields shorter than this are copied into the frame: a separate segment costs
/// a write of its own, more than copying a few kilobytes.
pub(crate) const SPLICE_MIN: usize = 4 * 1024;

/// A whole request frame (size prefix included) in segments: `head` with each spliced
/// [`Bytes`] inserted at its offset in `head`. Offsets are non-decreasing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestFrame {
    head: Vec<u8>,
    splices: Vec<(usize, Bytes)>,
}

impl RequestFrame {
    /// A frame whose bytes are all in `head`, and `splices` inserted at their offsets in it.
    pub(crate) fn new(head: Vec<u8>, splices: Vec<(usize, Bytes)>) -> Self {
        debug_assert!(splices.windows(2).all(|w| w[0].0 <= w[1].0));
        debug_assert!(splices.last().is_none_or(|(at, _)| *at <= head.len()));
        Self { head, splices }
    }

    /// The frame's length in bytes, size prefix included.
    pub fn len(&self) -> usize {
        self.head.len() + self.splices.iter().map(|(_, b)| b.len()).sum::<usize>()
    }

    /// Whether the frame has no bytes at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The frame's bytes in write order (empty segments left out).
    pub fn segments(&self) -> impl Iterator<Item = &[u8]> {
        let mut from = 0;
        let mut out = Vec::with_capacity(self.splices.len() * 2 + 1);
        for (at, spliced) in &self.splices {
            out.push(&self.head[from..*at]);
            out.push(&spliced[..]);
            from = *at;
        }
        out.push(&self.head[from..]);
        out.into_iter().filter(|s| !s.is_empty())
    }

    /// The frame as one buffer (a copy when anything is spliced): for traces and tests.
    pub fn to_vec(&self) -> Vec<u8> {
        if self.splices.is_empty() {
            return self.head.clone();
        }
        let mut out = Vec::with_capacity(self.len());
        for segment in self.segments() {
            out.extend_from_slice(segment);
        }
        out
    }
}

impl From<Vec<u8>> for RequestFrame {
    fn from(head: Vec<u8>) -> Self {
        Self { head, splices: Vec::new() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spliced_segments_read_as_the_contiguous_frame() {
        let frame = RequestFrame::new(
            b"abcdef".to_vec(),
            vec![
                (0, Bytes::from_static(b"<")),
                (3, Bytes::from_static(b"123")),
                (6, Bytes::from_static(b">")),
            ],
        );
        assert_eq!(frame.to_vec(), b"<abc123def>");
        assert_eq!(frame.len(), 11);
        let segments: Vec<&[u8]> = frame.segments().collect();
        assert_eq!(segments, vec![&b"<"[..], b"abc", b"123", b"def", b">"]);
    }

    #[test]
    fn frame_without_splices_is_its_head() {
        let frame = RequestFrame::from(b"xyz".to_vec());
        assert_eq!(frame.segments().collect::<Vec<_>>(), vec![&b"xyz"[..]]);
        assert_eq!(frame.to_vec(), b"xyz");
    }
}
