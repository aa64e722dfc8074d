//! Lines of a byte stream as [`Bytes`] that share large read buffers: reading a line neither
//! allocates nor copies (a line cut by the end of a buffer is copied once, joined to its rest).
//! Any bytes are accepted; nothing is decoded.
//!
//! The input is read on a thread of its own, so the thread splitting lines (`kwire produce`'s
//! appending thread) never waits in `read` nor copies the input out of the kernel: that copy was
//! a tenth of `kwire produce`'s CPU time in a profile of a 1 KB load.
//!
//! Each line keeps its buffer alive until it is dropped, so a caller that holds lines (a
//! producer's batches) holds at most its lines' bytes plus one buffer per batch of them.

use std::io::{self, Read};
use std::sync::mpsc::{sync_channel, Receiver};

use bytes::{Buf, Bytes, BytesMut};

/// Bytes asked of the input per read.
const READ_SIZE: usize = 256 << 10;

/// Buffers the read-ahead thread may have read and the line splitter not yet taken: 1 MiB.
const READ_AHEAD: usize = 4;

/// Reads a stream in buffers of up to [`READ_SIZE`] bytes, each a new [`Bytes`].
struct Chunks<R> {
    input: R,
    buf: BytesMut,
}

impl<R: Read> Chunks<R> {
    fn new(input: R) -> Self {
        Self { input, buf: BytesMut::new() }
    }

    /// The next bytes of the input; empty at its end.
    fn next(&mut self) -> io::Result<Bytes> {
        // `buf` is empty here: the last chunk was split off it, and its room is reused once
        // no line holds that chunk any more.
        self.buf.reserve(READ_SIZE);
        self.buf.resize(READ_SIZE, 0);
        let read = loop {
            match self.input.read(&mut self.buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                other => break other,
            }
        };
        let read = read.inspect_err(|_| self.buf.clear())?;
        self.buf.truncate(read);
        Ok(self.buf.split().freeze())
    }
}

/// Splits a byte stream into lines; see the module documentation.
pub struct LineReader {
    /// Buffers from the reading thread, [`READ_AHEAD`] ahead at most; it stops after the
    /// empty buffer of the end of the input, or after an error.
    chunks: Receiver<io::Result<Bytes>>,
    /// The unsplit rest of the last buffer read.
    rest: Bytes,
    /// The start of a line cut by the end of a buffer.
    cut: BytesMut,
    eof: bool,
}

impl LineReader {
    /// Lines of `input`, read ahead by a thread of its own (named `kwire-input`). The thread
    /// ends at the end of the input, after a read error, or — once the reader is dropped — when
    /// the read it is in returns (on a quiet pipe, not before the process ends).
    pub fn read_ahead<R: Read + Send + 'static>(input: R) -> io::Result<Self> {
        let (sender, chunks) = sync_channel(READ_AHEAD);
        let mut input = Chunks::new(input);
        std::thread::Builder::new().name("kwire-input".into()).spawn(move || loop {
            let chunk = input.next();
            let last = !matches!(&chunk, Ok(bytes) if !bytes.is_empty());
            // A send fails once the reader is dropped: nobody wants the rest.
            if sender.send(chunk).is_err() || last {
                return;
            }
        })?;
        Ok(Self { chunks, rest: Bytes::new(), cut: BytesMut::new(), eof: false })
    }

    /// The next line without its `\n` and without a `\r` just before it (the last line may
    /// lack the `\n`); `None` at the end of the input.
    pub fn next_line(&mut self) -> io::Result<Option<Bytes>> {
        loop {
            if let Some(line) = self.buffered_line() {
                return Ok(Some(line));
            }
            if !self.rest.is_empty() {
                self.cut.extend_from_slice(&self.rest);
                self.rest.advance(self.rest.len());
            }
            if self.eof {
                let last = self.cut.split().freeze();
                return Ok((!last.is_empty()).then(|| without_cr(last)));
            }
            self.rest = self
                .chunks
                .recv()
                .unwrap_or_else(|_| Err(io::Error::other("the thread reading the input stopped")))?;
            self.eof = self.rest.is_empty();
        }
    }

    /// The next line, if its `\n` is in what was read already: never waits for the input.
    /// `None` when the next line needs more of it (or the input ended without a last `\n`).
    pub fn buffered_line(&mut self) -> Option<Bytes> {
        let at = memchr::memchr(b'\n', &self.rest)?;
        let line = self.rest.split_to(at + 1);
        if self.cut.is_empty() {
            return Some(without_line_end(line));
        }
        self.cut.extend_from_slice(&line);
        Some(without_line_end(self.cut.split().freeze()))
    }
}

/// A line with its `\n`, without the `\n` and a `\r` just before it.
fn without_line_end(line: Bytes) -> Bytes {
    let mut line = line;
    line.truncate(line.len() - 1);
    without_cr(line)
}

/// `line` without a last `\r`.
fn without_cr(mut line: Bytes) -> Bytes {
    if line.last() == Some(&b'\r') {
        line.truncate(line.len() - 1);
    }
    line
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

    /// Every line of `input`, read `step` bytes at a time.
    fn lines(input: &[u8], step: usize) -> Vec<Vec<u8>> {
        let mut reader = LineReader::read_ahead(Trickle(input.to_vec(), step)).unwrap();
        let mut out = Vec::new();
        while let Some(line) = reader.next_line().unwrap() {
            out.push(line.to_vec());
        }
        out
    }

    #[test]
    fn lines_split_across_reads_come_out_whole_with_crlf_and_a_last_line_without_newline() {
        let input = b"one\r\ntwo\n\nthr\xffee\r\nlast\r";
        let want: Vec<Vec<u8>> =
            vec![b"one".to_vec(), b"two".to_vec(), Vec::new(), b"thr\xffee".to_vec(), b"last".to_vec()];
        for step in [1, 2, 3, 7, 64] {
            assert_eq!(lines(input, step), want, "reads of {step} bytes");
        }
    }

    #[test]
    fn buffered_lines_come_from_what_was_read_and_never_wait() {
        let mut reader = LineReader::read_ahead(Trickle(b"a\nb\nc\r\nd".to_vec(), 4)).unwrap();
        assert_eq!(reader.buffered_line(), None, "nothing read yet");
        assert_eq!(reader.next_line().unwrap().as_deref(), Some(&b"a"[..]));
        assert_eq!(reader.buffered_line().as_deref(), Some(&b"b"[..]));
        assert_eq!(reader.buffered_line(), None, "the first read's lines are used up");
        assert_eq!(reader.next_line().unwrap().as_deref(), Some(&b"c"[..]), "joined across reads");
        assert_eq!(reader.buffered_line(), None, "the last line has no newline");
        assert_eq!(reader.next_line().unwrap().as_deref(), Some(&b"d"[..]));
        assert_eq!(reader.next_line().unwrap(), None);
    }

    #[test]
    fn empty_input_has_no_lines_and_a_lone_newline_is_one_empty_line() {
        assert!(lines(b"", 4).is_empty());
        assert_eq!(lines(b"\n", 4), vec![Vec::<u8>::new()]);
    }

    #[test]
    fn a_line_longer_than_one_read_buffer_is_kept_whole() {
        let mut input = vec![b'x'; READ_SIZE * 2 + 17];
        input.push(b'\n');
        input.extend_from_slice(b"next");
        let got = lines(&input, READ_SIZE);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].len(), READ_SIZE * 2 + 17);
        assert_eq!(got[1], b"next");
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
        assert_eq!(reader.next_line().unwrap().unwrap(), "a");
        assert_eq!(reader.next_line().unwrap_err().to_string(), "disk gone");
        // The thread stops after the error; asking again says so rather than waiting forever.
        assert_eq!(reader.next_line().unwrap_err().to_string(), "the thread reading the input stopped");
    }
}
