//! A large offset file as another tool (or an attacker) might write it, shared by the file
//! store's tests, its benchmark and the CLI's tests (each includes this file with `#[path]`).

use std::fmt::Write as _;

/// A compact kwire offset document for group `g` with `n` entries, 1,000 partitions per topic
/// (`topic-0` …), no topic ids or epochs: about 54 bytes an entry.
pub fn compact_document(n: usize) -> String {
    let mut s = String::from(r#"{"format":"kwire-offsets","version":1,"group":"g","offsets":["#);
    for i in 0..n {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(s, r#"{{"topic":"topic-{}","partition":{},"offset":{i}}}"#, i / 1000, i % 1000);
    }
    s.push_str("]}\n");
    s
}
