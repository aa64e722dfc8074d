//! Lines of a byte stream as [`Bytes`] that share large read buffers: reading a line neither
//! allocates nor copies (a line cut by the end of a buffer is moved once, into the next one).
//! Any bytes are accepted; nothing is decoded.
//!
//! Each line keeps its buffer alive until it is dropped, so a caller that holds lines (a
//! producer's batches) holds at most its lines' bytes plus one buffer per batch of them.

use std::io::{self, Read};

use bytes::{Bytes, BytesMut};

/// Bytes asked of the input per read.
const READ_SIZE: usize = 256 << 10;

/// Splits a byte stream into lines; see the module documentation.
pub struct LineReader<R> {
    input: R,
    buf: BytesMut,
    /// Bytes at the front of `buf` known to hold no `\n`.
    scanned: usize,
    eof: bool,
}

impl<R: Read> LineReader<R> {
    pub fn new(input: R) -> Self {
        Self { input, buf: BytesMut::new(), scanned: 0, eof: false }
    }

    /// The next line without its `\n` and without a `\r` just before it (the last line may
    /// lack the `\n`); `None` at the end of the input.
    pub fn next_line(&mut self) -> io::Result<Option<Bytes>> {
        loop {
            if let Some(at) = memchr::memchr(b'\n', &self.buf[self.scanned..]) {
                let end = self.scanned + at;
                let line = self.buf.split_to(end + 1);
                self.scanned = 0;
                return Ok(Some(without_line_end(&line.freeze(), end)));
            }
            self.scanned = self.buf.len();
            if self.eof {
                if self.buf.is_empty() {
                    return Ok(None);
                }
                let len = self.buf.len();
                self.scanned = 0;
                return Ok(Some(without_line_end(&self.buf.split().freeze(), len)));
            }
            self.fill()?;
        }
    }

    /// Reads once more into the buffer (a new one when the lines handed out share the old
    /// one); notes the end of the input.
    fn fill(&mut self) -> io::Result<()> {
        let start = self.buf.len();
        self.buf.reserve(READ_SIZE);
        self.buf.resize(start + READ_SIZE, 0);
        let read = loop {
            match self.input.read(&mut self.buf[start..]) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                other => break other,
            }
        };
        let read = read.inspect_err(|_| self.buf.truncate(start))?;
        self.buf.truncate(start + read);
        self.eof = read == 0;
        Ok(())
    }
}

/// `line[..end]`, without a last `\r`.
fn without_line_end(line: &Bytes, end: usize) -> Bytes {
    let end = if end > 0 && line[end - 1] == b'\r' { end - 1 } else { end };
    line.slice(..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands out its bytes a few at a time, as a pipe may.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.1.min(self.0.len()).min(out.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn lines(input: &[u8], step: usize) -> Vec<Vec<u8>> {
        let mut reader = LineReader::new(Trickle(input, step));
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
        let mut reader = LineReader::new(Failing(false));
        assert_eq!(reader.next_line().unwrap().unwrap(), "a");
        assert_eq!(reader.next_line().unwrap_err().to_string(), "disk gone");
    }
}
