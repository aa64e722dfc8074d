//! [`StreamReassembler`]: one direction of a TCP connection back into a byte stream, from
//! segments in any order, repeated or overlapping.

/// A piece of the reassembled stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunk<'a> {
    /// The next bytes of the stream.
    Data(&'a [u8]),
    /// This many bytes of the stream were never captured; the next chunk follows them.
    Gap(u64),
}

/// Default cap on bytes held waiting for a missing segment (per direction).
pub const DEFAULT_MAX_PENDING: usize = 4 * 1024 * 1024;
/// Cap on the number of segments held waiting.
const MAX_PENDING_SEGMENTS: usize = 4096;

/// Orders the segments of one direction of a connection (sequence numbers wrap).
///
/// Contract: bytes come out once each, in sequence order. A segment before the next expected
/// byte is a retransmission (its new tail, if any, is used; overlapping bytes are taken from
/// the first copy seen). A segment after it waits until the hole is filled; when more than the
/// cap waits, or at [`finish`](Self::finish), the hole is given up as a [`Chunk::Gap`].
/// Without a SYN the stream starts at the first segment with data
/// ([`started_mid_stream`](Self::started_mid_stream)).
#[derive(Debug)]
pub struct StreamReassembler {
    next: Option<u32>,
    pending: Vec<(u32, Vec<u8>)>,
    pending_bytes: usize,
    max_pending: usize,
    mid_stream: bool,
}

impl Default for StreamReassembler {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_PENDING)
    }
}

impl StreamReassembler {
    /// A reassembler that holds at most `max_pending` bytes waiting for a hole to fill.
    pub fn new(max_pending: usize) -> Self {
        Self { next: None, pending: Vec::new(), pending_bytes: 0, max_pending, mid_stream: false }
    }

    /// True when no SYN was seen before the first data: the stream may start inside a frame.
    pub fn started_mid_stream(&self) -> bool {
        self.mid_stream
    }

    /// Takes one segment; calls `out` with whatever it makes deliverable.
    pub fn segment(&mut self, seq: u32, syn: bool, payload: &[u8], out: &mut impl FnMut(Chunk<'_>)) {
        let data_seq = if syn { seq.wrapping_add(1) } else { seq };
        let next = match self.next {
            Some(next) => next,
            None if syn => {
                self.next = Some(data_seq);
                data_seq
            }
            None if payload.is_empty() => return,
            None => {
                self.mid_stream = true;
                self.next = Some(data_seq);
                data_seq
            }
        };
        if payload.is_empty() {
            return;
        }
        let ahead = data_seq.wrapping_sub(next) as i32;
        if ahead <= 0 {
            let already = ahead.unsigned_abs() as usize;
            if already >= payload.len() {
                return; // a retransmission of bytes delivered
            }
            let fresh = &payload[already..];
            self.next = Some(next.wrapping_add(fresh.len() as u32));
            out(Chunk::Data(fresh));
            self.drain(out);
        } else {
            if let Some(existing) = self.pending.iter_mut().find(|(s, _)| *s == data_seq) {
                if existing.1.len() >= payload.len() {
                    return;
                }
                self.pending_bytes -= existing.1.len();
                existing.1 = payload.to_vec();
            } else {
                self.pending.push((data_seq, payload.to_vec()));
            }
            self.pending_bytes += payload.len();
            while self.pending_bytes > self.max_pending || self.pending.len() > MAX_PENDING_SEGMENTS {
                self.skip_hole(out);
            }
        }
    }

    /// Gives up every hole: delivers what waits, with a [`Chunk::Gap`] for each hole. Call when
    /// the capture ends.
    pub fn finish(&mut self, out: &mut impl FnMut(Chunk<'_>)) {
        while !self.pending.is_empty() {
            self.skip_hole(out);
        }
    }

    /// Delivers waiting segments that now start at or before the next expected byte.
    fn drain(&mut self, out: &mut impl FnMut(Chunk<'_>)) {
        while let Some(next) = self.next {
            let Some(i) = self.pending.iter().position(|(s, _)| s.wrapping_sub(next) as i32 <= 0) else {
                return;
            };
            let (seq, data) = self.pending.swap_remove(i);
            self.pending_bytes -= data.len();
            let already = (next.wrapping_sub(seq) as i32).unsigned_abs() as usize;
            if already < data.len() {
                let fresh = &data[already..];
                self.next = Some(next.wrapping_add(fresh.len() as u32));
                out(Chunk::Data(fresh));
            }
        }
    }

    /// Jumps over the hole before the earliest waiting segment.
    fn skip_hole(&mut self, out: &mut impl FnMut(Chunk<'_>)) {
        let Some(next) = self.next else { return };
        let Some(earliest) = self.pending.iter().map(|(s, _)| s.wrapping_sub(next)).min() else { return };
        out(Chunk::Gap(u64::from(earliest)));
        self.next = Some(next.wrapping_add(earliest));
        self.drain(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, PartialEq, Eq)]
    enum Out {
        Data(Vec<u8>),
        Gap(u64),
    }

    fn collect(r: &mut StreamReassembler, segments: &[(u32, bool, &[u8])]) -> Vec<Out> {
        let mut out = Vec::new();
        let mut push = |c: Chunk<'_>| match c {
            Chunk::Data(d) => match out.last_mut() {
                Some(Out::Data(prev)) => prev.extend_from_slice(d),
                _ => out.push(Out::Data(d.to_vec())),
            },
            Chunk::Gap(n) => out.push(Out::Gap(n)),
        };
        for &(seq, syn, payload) in segments {
            r.segment(seq, syn, payload, &mut push);
        }
        r.finish(&mut push);
        out
    }

    #[test]
    fn out_of_order_retransmitted_and_overlapping_segments_give_the_stream_once() {
        let mut r = StreamReassembler::default();
        let out = collect(
            &mut r,
            &[
                (99, true, b""),
                (106, false, b"ghij"),
                (100, false, b"abc"),
                (100, false, b"abc"),
                (102, false, b"cdefg"),
                (110, false, b"k"),
            ],
        );
        assert_eq!(out, vec![Out::Data(b"abcdefghijk".to_vec())]);
        assert!(!r.started_mid_stream());
    }

    #[test]
    fn sequence_numbers_wrap() {
        let mut r = StreamReassembler::default();
        let out = collect(&mut r, &[(u32::MAX - 1, true, b""), (1, false, b"cd"), (u32::MAX, false, b"ab")]);
        assert_eq!(out, vec![Out::Data(b"abcd".to_vec())]);
    }

    #[test]
    fn a_hole_never_filled_becomes_a_gap_at_the_end() {
        let mut r = StreamReassembler::default();
        let out = collect(&mut r, &[(5, false, b"ab"), (10, false, b"xy")]);
        assert_eq!(out, vec![Out::Data(b"ab".to_vec()), Out::Gap(3), Out::Data(b"xy".to_vec())]);
        assert!(r.started_mid_stream());
    }

    #[test]
    fn waiting_bytes_past_the_cap_give_up_the_hole() {
        let mut r = StreamReassembler::new(4);
        let mut out = Vec::new();
        r.segment(0, false, b"a", &mut |c| out.push(format!("{c:?}")));
        r.segment(5, false, b"bcd", &mut |c| out.push(format!("{c:?}")));
        assert_eq!(out.len(), 1);
        r.segment(20, false, b"ef", &mut |c| out.push(format!("{c:?}")));
        assert_eq!(out, vec!["Data([97])", "Gap(4)", "Data([98, 99, 100])"]);
        assert!(r.pending_bytes <= 4);
    }

    proptest! {
        /// Any split of a stream into segments, shuffled and partly repeated, reassembles to it.
        #[test]
        fn any_order_reassembles(data in proptest::collection::vec(any::<u8>(), 1..300),
                                 cuts in proptest::collection::vec(1usize..40, 1..30),
                                 order in proptest::collection::vec(any::<u32>(), 0..60),
                                 isn in any::<u32>()) {
            let mut segments = Vec::new();
            let mut at = 0;
            for cut in cuts.iter().cycle() {
                if at >= data.len() { break; }
                let end = (at + cut).min(data.len());
                segments.push((isn.wrapping_add(1).wrapping_add(at as u32), at, end));
                // an overlapping copy too
                let back = at.saturating_sub(cut / 2);
                segments.push((isn.wrapping_add(1).wrapping_add(back as u32), back, end));
                at = end;
            }
            for (i, o) in order.iter().enumerate() {
                let len = segments.len();
                segments.swap(i % len, *o as usize % len);
            }
            let mut r = StreamReassembler::default();
            let mut all: Vec<(u32, bool, &[u8])> = vec![(isn, true, &[])];
            all.extend(segments.iter().map(|&(s, a, e)| (s, false, &data[a..e])));
            let out = collect(&mut r, &all);
            prop_assert_eq!(out, vec![Out::Data(data.clone())]);
        }
    }
}
