//! `split_frame` fed in arbitrary chunks must cut the same frames, and fail at the same point,
//! as a plain reading of the whole stream. Byte 0 picks the frame cap (bit 7: Kafka's 100 MiB
//! default, else 0-127 bytes), byte 1 the chunk sizes, the rest is the stream.
#![no_main]

use bytes::{Bytes, BytesMut};
use kafka_wire::protocol::frame::{split_frame, DEFAULT_MAX_FRAME};
use kafka_wire::protocol::DecodeErrorKind;
use libfuzzer_sys::fuzz_target;

/// The stream read in one go: its frames, then either an error or the bytes left over.
fn reference(stream: &[u8], max: usize) -> (Vec<&[u8]>, Result<usize, DecodeErrorKind>) {
    let mut frames = Vec::new();
    let mut rest = stream;
    loop {
        let Some((size, body)) = rest.split_first_chunk::<4>() else { return (frames, Ok(rest.len())) };
        let size = i32::from_be_bytes(*size);
        if size < 0 {
            return (frames, Err(DecodeErrorKind::NegativeLength(i64::from(size))));
        }
        let size = size as usize;
        if size > max {
            return (frames, Err(DecodeErrorKind::FrameTooLarge { size, max }));
        }
        let Some((frame, after)) = body.split_at_checked(size) else { return (frames, Ok(rest.len())) };
        frames.push(frame);
        rest = after;
    }
}

fuzz_target!(|data: &[u8]| {
    let [cap, chunking, stream @ ..] = data else { return };
    let max = if cap & 0x80 != 0 { DEFAULT_MAX_FRAME } else { usize::from(*cap) };
    let (want_frames, want_end) = reference(stream, max);

    let mut buf = BytesMut::new();
    let mut got: Vec<Bytes> = Vec::new();
    let mut got_end = None;
    let mut at = 0;
    let mut i = 0u32;
    'feed: while at < stream.len() {
        // Chunks of 1-8 bytes, their sizes cycling through `chunking`'s bits.
        let n = 1 + usize::from(chunking.rotate_right(i) & 7);
        i += 1;
        let end = (at + n).min(stream.len());
        buf.extend_from_slice(&stream[at..end]);
        at = end;
        loop {
            match split_frame(&mut buf, max) {
                Ok(Some(frame)) => got.push(frame),
                Ok(None) => break,
                Err(e) => {
                    got_end = Some(Err(e.kind));
                    break 'feed;
                }
            }
        }
    }
    let got_end = got_end.unwrap_or(Ok(buf.len()));
    assert_eq!(got.len(), want_frames.len(), "frame count");
    for (g, w) in got.iter().zip(&want_frames) {
        assert_eq!(g.as_ref(), *w);
    }
    assert_eq!(got_end, want_end);
});
