//! Output helpers: aligned text tables and JSON documents.

use std::fmt::Write as _;
use std::io::Write as _;

/// A text table whose columns are padded to their widest cell.
#[derive(Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Self {
        Self { header: header.into_iter().map(Into::into).collect(), rows: Vec::new() }
    }

    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    pub fn render(&self) -> String {
        let columns = self.header.len();
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate().take(columns) {
                widths[i] = widths[i].max(cell.chars().count());
            }
        }
        let mut out = String::new();
        for row in std::iter::once(&self.header).chain(&self.rows) {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate().take(columns) {
                if i + 1 == columns {
                    line.push_str(cell);
                } else {
                    let _ = write!(line, "{cell:<width$}  ", width = widths[i]);
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// Writes `text` to stdout. A closed pipe (`kwire ... | head`) is not an error worth a panic:
/// the reader has what it wanted, so write errors are ignored.
pub fn emit(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// `print!` to stdout through [`emit`].
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::emit(&format!($($arg)*)) };
}

/// `println!` to stdout through [`emit`].
macro_rules! outln {
    ($($arg:tt)*) => { $crate::output::emit(&format!("{}\n", format_args!($($arg)*))) };
}

pub(crate) use {out, outln};

/// A one-line progress report on stderr for long operations, shown only when stderr is a
/// terminal (never in scripts or logs); each message replaces the previous one.
#[derive(Debug)]
pub struct Progress {
    enabled: bool,
}

impl Progress {
    pub fn new() -> Self {
        use std::io::IsTerminal as _;
        Self { enabled: std::io::stderr().is_terminal() }
    }

    pub fn say(&self, message: &str) {
        if self.enabled {
            eprint!("\r\x1b[2K{message}");
        }
    }

    /// Clears the line.
    pub fn done(&self) {
        if self.enabled {
            eprint!("\r\x1b[2K");
        }
    }
}

impl Drop for Progress {
    /// A command that fails mid-way leaves no half line in front of its error message.
    fn drop(&mut self) {
        self.done();
    }
}

/// Prints a JSON document on stdout.
pub fn print_json(value: &serde_json::Value) {
    let text = serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    emit(&(text + "\n"));
}

/// Lists a set of node ids as `1,2,3`.
pub fn ids(list: &[i32]) -> String {
    list.iter().map(i32::to_string).collect::<Vec<_>>().join(",")
}

/// Formats bytes as lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_to_the_widest_cell() {
        let mut t = Table::new(["a", "bb"]);
        t.row(["long", "x"]);
        assert_eq!(t.render(), "a     bb\nlong  x\n");
    }
}
