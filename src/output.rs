//! Output helpers: aligned text tables and JSON documents, and the one place that makes text
//! from brokers, files and arguments safe for a terminal ([`escape`]).

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::Write as _;

/// Characters a terminal acts on instead of showing: C0 and C1 controls and DEL (cursor moves,
/// colours, title changes via ESC and CSI) and the Unicode bidirectional overrides that make
/// text display in another order than it is.
pub fn acts_on_terminal(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Whether `bytes` is ASCII with no control character (C0 or DEL) other than tab: text a
/// terminal shows as it is. Checked 32 bytes at a time without a branch per byte, so the
/// compiler vectorises it (a 1 KB value is a few dozen instructions, not a thousand branches).
// `|` not `||`: no branch per byte, which is what lets the loop vectorise.
#[allow(clippy::needless_bitwise_bool)]
pub fn is_printable_ascii(bytes: &[u8]) -> bool {
    let unsafe_byte = |b: u8| (b < 0x20 && b != b'\t') | (b >= 0x7f);
    let mut chunks = bytes.chunks_exact(32);
    for chunk in &mut chunks {
        if chunk.iter().fold(false, |found, &b| found | unsafe_byte(b)) {
            return false;
        }
    }
    !chunks.remainder().iter().any(|&b| unsafe_byte(b))
}

fn escape_where(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    // ASCII acts on a terminal only through C0 and DEL: a byte scan says so without decoding.
    let clean = if is_printable_ascii(text.as_bytes()) {
        // Tab is the one control character that check lets through.
        keep('\t') || memchr::memchr(b'\t', text.as_bytes()).is_none()
    } else if text.is_ascii() {
        !text.bytes().any(|b| (b < 0x20 || b == 0x7f) && !keep(char::from(b)))
    } else {
        !text.chars().any(|c| acts_on_terminal(c) && !keep(c))
    };
    if clean {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if !acts_on_terminal(c) || keep(c) => out.push(c),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => {
                let _ = write!(out, "{}", c.escape_unicode());
            }
        }
    }
    Cow::Owned(out)
}

/// `text` with every character a terminal would act on written as an escape (`\n`, `\t`,
/// `\u{1b}`, `\u{202e}`): for one value (a name, a cell) or one line (an error message).
pub fn escape(text: &str) -> Cow<'_, str> {
    escape_where(text, |_| false)
}

/// [`escape`] for text that is meant to span lines and columns: newlines and tabs are kept.
pub fn escape_text(text: &str) -> Cow<'_, str> {
    escape_where(text, |c| c == '\n' || c == '\t')
}

/// JSON text with the characters a terminal acts on and that JSON leaves raw (DEL, C1, the
/// bidirectional overrides) written as `\uXXXX` escapes. They can only occur inside strings,
/// where the escape means the same character, so the document's value is unchanged.
pub fn json_safe(json: &str) -> Cow<'_, str> {
    // Below U+0020 only JSON's own whitespace can occur raw (a serializer escapes the rest).
    let unsafe_in_json = |c: char| acts_on_terminal(c) && c >= ' ';
    // In ASCII that is only DEL.
    let clean = if json.is_ascii() {
        memchr::memchr(0x7f, json.as_bytes()).is_none()
    } else {
        !json.chars().any(unsafe_in_json)
    };
    if clean {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 8);
    for c in json.chars() {
        if unsafe_in_json(c) {
            // All such characters are in the Basic Multilingual Plane: one `\uXXXX` each.
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A text table whose columns are padded to their widest cell.
#[derive(Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Row>,
}

/// A row's cells, and the note that takes the place of the columns after them (a note is not
/// counted in any column's width).
#[derive(Debug, Default)]
struct Row {
    cells: Vec<String>,
    note: Option<String>,
}

fn escaped(c: String) -> String {
    match escape(&c) {
        Cow::Borrowed(_) => c,
        Cow::Owned(escaped) => escaped,
    }
}

impl Table {
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Self {
        Self {
            header: header.into_iter().map(|h| escape(&h.into()).into_owned()).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row; each cell is [`escape`]d, so a name cannot break the table or the terminal.
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(Row { cells: cells.into_iter().map(|c| escaped(c.into())).collect(), note: None });
    }

    /// Adds a row of the first columns' `cells` followed by `note` in place of the other
    /// columns (e.g. why a partition has no numbers); [`escape`]d like any cell.
    pub fn row_with_note<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>, note: &str) {
        self.rows.push(Row {
            cells: cells.into_iter().map(|c| escaped(c.into())).collect(),
            note: Some(escaped(note.to_owned())),
        });
    }

    pub fn render(&self) -> String {
        let columns = self.header.len();
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, cell) in row.cells.iter().enumerate().take(columns) {
                widths[i] = widths[i].max(cell.chars().count());
            }
        }
        let mut out = String::new();
        let header = (self.header.as_slice(), None);
        for (cells, note) in
            std::iter::once(header).chain(self.rows.iter().map(|r| (&r.cells[..], r.note.as_deref())))
        {
            let mut line = String::new();
            for (i, cell) in cells.iter().enumerate().take(columns) {
                if i + 1 == columns && note.is_none() {
                    line.push_str(cell);
                } else {
                    let _ = write!(line, "{cell:<width$}  ", width = widths[i]);
                }
            }
            line.push_str(note.unwrap_or_default());
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

/// `print!` to stdout through [`emit`], [`escape_text`]ed.
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::emit(&$crate::output::escape_text(&format!($($arg)*))) };
}

/// `println!` of one line to stdout through [`emit`], [`escape`]d whole: a name holding a
/// newline cannot start a line of its own (a forged row). Multi-line text goes through [`out!`].
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::output::emit(&($crate::output::escape(&format!($($arg)*)).into_owned() + "\n"))
    };
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
            eprint!("\r\x1b[2K{}", escape(message));
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
    emit(&(json_safe(&text).into_owned() + "\n"));
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
    fn control_characters_in_a_name_are_escaped_never_raw() {
        assert_eq!(escape("plain-topic.1"), "plain-topic.1");
        assert!(matches!(escape("plain"), Cow::Borrowed(_)));
        assert_eq!(escape("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(escape("line\nbreak\ttab\r"), "line\\nbreak\\ttab\\r");
        assert_eq!(escape("x\u{9b}31m\u{7f}"), "x\\u{9b}31m\\u{7f}");
        assert_eq!(escape("evil\u{202e}gpj.exe"), "evil\\u{202e}gpj.exe");
        assert_eq!(escape_text("a\tb\nc\u{1b}"), "a\tb\nc\\u{1b}");
        // A tab alone (no other control character) is escaped too, and kept by escape_text.
        assert_eq!(escape("a\tb"), "a\\tb");
        assert!(matches!(escape_text("a\tb"), Cow::Borrowed("a\tb")));
    }

    #[test]
    fn printable_ascii_is_found_unsafe_by_any_one_byte_wherever_it_sits() {
        // 32-byte chunks and a remainder: an unsafe byte at each edge of both.
        let text = vec![b'x'; 70];
        assert!(is_printable_ascii(&text));
        assert!(is_printable_ascii(b"a\tb"));
        assert!(is_printable_ascii(b""));
        for at in [0, 31, 32, 63, 64, 69] {
            for bad in [0x00, b'\n', 0x1b, 0x1f, 0x7f, 0x80, 0xc2, 0xff] {
                let mut t = text.clone();
                t[at] = bad;
                assert!(!is_printable_ascii(&t), "byte {bad:#x} at {at}");
            }
        }
    }

    #[test]
    fn json_keeps_its_value_while_terminal_controls_become_escapes() {
        let value = serde_json::json!({"topic": "t\u{9b}\u{7f}\u{202e}\u{1b}\n", "n": [1, 2]});
        let text = serde_json::to_string_pretty(&value).unwrap();
        let safe = json_safe(&text);
        assert!(!safe.chars().any(|c| acts_on_terminal(c) && c != '\n'), "{safe}");
        assert_eq!(safe.lines().count(), text.lines().count(), "the layout is kept: {safe}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&safe).unwrap(), value);
    }

    #[test]
    fn a_table_cell_cannot_break_the_table() {
        let mut t = Table::new(["a", "b"]);
        t.row(["x\ny", "\u{1b}[31m"]);
        assert_eq!(t.render(), "a     b\nx\\ny  \\u{1b}[31m\n");
    }

    #[test]
    fn columns_align_to_the_widest_cell() {
        let mut t = Table::new(["a", "bb"]);
        t.row(["long", "x"]);
        assert_eq!(t.render(), "a     bb\nlong  x\n");
    }

    #[test]
    fn a_note_row_keeps_the_columns_of_the_other_rows() {
        let mut t = Table::new(["topic", "p", "offset"]);
        t.row(["a", "0", "7"]);
        t.row_with_note(["forbidden", "-"], "not authorized (TOPIC_AUTHORIZATION_FAILED)\n");
        assert_eq!(
            t.render(),
            "topic      p  offset\na          0  7\nforbidden  -  not authorized (TOPIC_AUTHORIZATION_FAILED)\\n\n"
        );
    }
}
