//! Lines of a byte stream, read in large buffers by a thread of its own and handed out a
//! buffer of whole lines at a time ([`LineChunk`]): splitting lines neither allocates nor
//! copies, and a line is a slice of its buffer. Any bytes are accepted; nothing is decoded.
//!
//! The thread reading means the thread splitting lines (`kwire produce`'s appending thread)
//! never waits in `read` nor copies the input out of the kernel: that copy was a tenth of
//! `kwire produce`'s CPU time in a profile of a 1 KB load. A buffer goes back to the reading
//! thread when its chunk is dropped and is read into again as it is: no buffer is zeroed or
//! allocated after the first few.

use std::io::{self, Read};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender};

/// Bytes asked of the input per read, and the size of a buffer (a longer line grows its own).
const READ_SIZE: usize = 256 << 10;

/// Chunks the reading thread may have read and the line splitter not yet taken: 1 MiB.
const READ_AHEAD: usize = 4;

/// Reads whole lines into buffers handed back by the chunks made of them.
struct ChunkReader<R> {
    input: R,
    /// Buffers whose chunks were dropped, ready to be read into again.
    returned: Receiver<Vec<u8>>,
    /// Where a chunk sends its buffer back.
    give_back: Sender<Vec<u8>>,
    /// The start of a line cut by the end of the last read, to begin the next chunk with.
    cut: Vec<u8>,
}

impl<R: Read> ChunkReader<R> {
    /// The next whole lines of the input (the last line may lack its `\n`); `None` at its end.
    fn next(&mut self) -> io::Result<Option<LineChunk>> {
        // Buffers keep their length (all of it initialized): reading into one needs no zeroing.
        let mut buf = self.returned.try_recv().unwrap_or_default();
        let wanted = self.cut.len() + READ_SIZE;
        if buf.len() < wanted {
            buf.resize(wanted.max(READ_SIZE), 0);
        }
        buf[..self.cut.len()].copy_from_slice(&self.cut);
        let mut filled = self.cut.len();
        self.cut.clear();
        loop {
            if filled == buf.len() {
                // A line longer than the buffer: room for the rest of it.
                buf.resize(buf.len() * 2, 0);
            }
            let read = match self.input.read(&mut buf[filled..]) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
                Ok(read) => read,
            };
            if read == 0 {
                // The end: what is left is the last line, without its `\n`.
                return Ok((filled > 0).then(|| self.chunk(buf, filled)));
            }
            let new = filled..filled + read;
            filled = new.end;
            if let Some(at) = memchr::memrchr(b'\n', &buf[new.clone()]) {
                let end = new.start + at + 1;
                self.cut.extend_from_slice(&buf[end..filled]);
                return Ok(Some(self.chunk(buf, end)));
            }
        }
    }

    fn chunk(&self, buf: Vec<u8>, len: usize) -> LineChunk {
        LineChunk { buf, len, give_back: self.give_back.clone() }
    }
}

/// Whole lines of the input: the first `len` bytes of `buf`. Dropping it hands the buffer
/// back to the reading thread.
#[derive(Debug)]
pub struct LineChunk {
    buf: Vec<u8>,
    len: usize,
    give_back: Sender<Vec<u8>>,
}

impl LineChunk {
    /// Its lines in order, each without its `\n` and without a `\r` just before it (the last
    /// line of the input may lack the `\n`).
    pub fn lines(&self) -> impl Iterator<Item = &[u8]> {
        let mut rest = &self.buf[..self.len];
        std::iter::from_fn(move || {
            if rest.is_empty() {
                return None;
            }
            let (line, after) = match memchr::memchr(b'\n', rest) {
                Some(at) => (&rest[..at], &rest[at + 1..]),
                None => (rest, &rest[rest.len()..]),
            };
            rest = after;
            Some(line.strip_suffix(b"\r").unwrap_or(line))
        })
    }
}

impl Drop for LineChunk {
    fn drop(&mut self) {
        // The reading thread may have stopped (end of input): then the buffer is just freed.
        let _ = self.give_back.send(std::mem::take(&mut self.buf));
    }
}

/// Splits a byte stream into chunks of whole lines; see the module documentation.
pub struct LineReader {
    /// Chunks from the reading thread, [`READ_AHEAD`] ahead at most; it stops after `None`
    /// (the end of the input) or an error.
    chunks: Receiver<io::Result<Option<LineChunk>>>,
    ended: bool,
}

impl LineReader {
    /// Lines of `input`, read ahead by a thread of its own (named `kwire-input`). The thread
    /// ends at the end of the input, after a read error, or — once the reader is dropped — when
    /// the read it is in returns (on a quiet pipe, not before the process ends).
    pub fn read_ahead<R: Read + Send + 'static>(input: R) -> io::Result<Self> {
        let (sender, chunks) = sync_channel(READ_AHEAD);
        let (give_back, returned) = channel();
        let mut reader = ChunkReader { input, returned, give_back, cut: Vec::new() };
        std::thread::Builder::new().name("kwire-input".into()).spawn(move || loop {
            let chunk = reader.next();
            let last = !matches!(&chunk, Ok(Some(_)));
            // A send fails once the reader is dropped: nobody wants the rest.
            if sender.send(chunk).is_err() || last {
                return;
            }
        })?;
        Ok(Self { chunks, ended: false })
    }

    /// The next lines read: whatever whole lines the input has given since the last call,
    /// waiting only when it has given none (a slow pipe's line comes out as soon as its `\n`
    /// does). `None` at the end of the input.
    pub fn next_chunk(&mut self) -> io::Result<Option<LineChunk>> {
        if self.ended {
            return Ok(None);
        }
        let chunk = self
            .chunks
            .recv()
            .unwrap_or_else(|_| Err(io::Error::other("the thread reading the input stopped")))?;
        self.ended = chunk.is_none();
        Ok(chunk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands out its bytes a few at a time, as a pipe may.
    struct Trickle(Vec<u8>, usize);

    impl Read for Trickle {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.1.min(self.0.len()).min(out.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0.drain(..n);
            Ok(n)
        }
    }

    /// Every line of `input`, read `step` bytes at a time, and how many chunks held them.
    fn lines(input: &[u8], step: usize) -> (Vec<Vec<u8>>, usize) {
        let mut reader = LineReader::read_ahead(Trickle(input.to_vec(), step)).unwrap();
        let (mut out, mut chunks) = (Vec::new(), 0);
        while let Some(chunk) = reader.next_chunk().unwrap() {
            chunks += 1;
            out.extend(chunk.lines().map(<[u8]>::to_vec));
        }
        (out, chunks)
    }

    #[test]
    fn lines_split_across_reads_come_out_whole_with_crlf_and_a_last_line_without_newline() {
        let input = b"one\r\ntwo\n\nthr\xffee\r\nlast\r";
        let want: Vec<Vec<u8>> =
            vec![b"one".to_vec(), b"two".to_vec(), Vec::new(), b"thr\xffee".to_vec(), b"last".to_vec()];
        for step in [1, 2, 3, 7, 64] {
            assert_eq!(lines(input, step).0, want, "reads of {step} bytes");
        }
    }

    #[test]
    fn a_chunk_holds_the_whole_lines_of_one_read_and_never_waits_for_more() {
        // Reads of 4 bytes: "a\nb\n" | "c\r\nd" | "" — the second read's "d" waits for the end.
        let mut reader = LineReader::read_ahead(Trickle(b"a\nb\nc\r\nd".to_vec(), 4)).unwrap();
        let chunk = |reader: &mut LineReader| {
            reader.next_chunk().unwrap().map(|c| c.lines().map(<[u8]>::to_vec).collect::<Vec<_>>())
        };
        assert_eq!(chunk(&mut reader), Some(vec![b"a".to_vec(), b"b".to_vec()]));
        assert_eq!(chunk(&mut reader), Some(vec![b"c".to_vec()]));
        assert_eq!(chunk(&mut reader), Some(vec![b"d".to_vec()]), "the last line has no newline");
        assert_eq!(chunk(&mut reader), None);
        assert_eq!(chunk(&mut reader), None, "and stays ended");
    }

    #[test]
    fn empty_input_has_no_lines_and_a_lone_newline_is_one_empty_line() {
        assert_eq!(lines(b"", 4), (Vec::new(), 0));
        assert_eq!(lines(b"\n", 4).0, vec![Vec::<u8>::new()]);
    }

    #[test]
    fn a_line_longer_than_one_read_buffer_is_kept_whole() {
        let mut input = vec![b'x'; READ_SIZE * 2 + 17];
        input.push(b'\n');
        input.extend_from_slice(b"next");
        let (got, _) = lines(&input, READ_SIZE);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].len(), READ_SIZE * 2 + 17);
        assert_eq!(got[1], b"next");
    }

    #[test]
    fn buffers_are_reused_without_their_old_bytes_showing_through() {
        // Long lines first, then short ones read into the same (not zeroed) buffers.
        let mut input = Vec::new();
        for i in 0..3000 {
            let len = if i < 1500 { 1000 } else { i % 7 };
            input.extend(std::iter::repeat_n(b'a' + (i % 26) as u8, len));
            input.push(b'\n');
        }
        let want: Vec<Vec<u8>> = input.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
        let (got, chunks) = lines(&input, 100_000);
        assert_eq!(got, want[..want.len() - 1]);
        assert!(chunks > READ_AHEAD + 2, "more chunks ({chunks}) than buffers in use at once");
    }

    #[test]
    fn a_read_error_is_returned_and_the_lines_before_it_are_kept() {
        struct Failing(bool);
        impl Read for Failing {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                if std::mem::replace(&mut self.0, true) {
                    return Err(io::Error::other("disk gone"));
                }
                out[..4].copy_from_slice(b"a\nbc");
                Ok(4)
            }
        }
        let mut reader = LineReader::read_ahead(Failing(false)).unwrap();
        let first = reader.next_chunk().unwrap().unwrap();
        assert_eq!(first.lines().collect::<Vec<_>>(), [b"a"]);
        assert_eq!(reader.next_chunk().unwrap_err().to_string(), "disk gone");
        // The thread stops after the error; asking again says so rather than waiting forever.
        assert_eq!(reader.next_chunk().unwrap_err().to_string(), "the thread reading the input stopped");
    }
}
