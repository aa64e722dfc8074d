//! The crate docs' index of what a `Client` can do (issue 34) is complete and current: every
//! `pub fn` of every `impl Client {` block under `src/` is linked there as `Client::name`, and
//! every `Client::name` linked there is such a method.

use std::collections::BTreeSet;
use std::path::Path;

/// The public methods of `impl Client {` blocks in `text` (a block ends at the first `}` in
/// column 0; methods are at four spaces).
fn client_methods(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line.starts_with("impl Client {") {
            inside = true;
        } else if line.starts_with('}') {
            inside = false;
        } else if inside {
            let rest = line.strip_prefix("    pub fn ").or_else(|| line.strip_prefix("    pub async fn "));
            if let Some(rest) = rest {
                let name: String =
                    rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                out.push(name);
            }
        }
    }
    out
}

fn sources(dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(std::fs::read_to_string(&path).expect("a source file"));
        }
    }
}

#[test]
fn every_public_client_method_is_in_the_crate_docs_index_and_nothing_else() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut texts = Vec::new();
    sources(&src, &mut texts);
    let methods: BTreeSet<String> = texts.iter().flat_map(|t| client_methods(t)).collect();
    assert!(methods.len() > 30, "too few methods found: the reader of impl blocks is broken: {methods:?}");

    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let index: BTreeSet<String> = lib
        .lines()
        .filter(|l| l.starts_with("//! |"))
        .flat_map(|l| {
            l.split("[`Client::").skip(1).map(|rest| rest.split('`').next().unwrap_or("").to_owned())
        })
        .collect();
    let missing: Vec<&String> = methods.difference(&index).collect();
    let gone: Vec<&String> = index.difference(&methods).collect();
    assert!(missing.is_empty(), "public Client methods missing from lib.rs's index: {missing:?}");
    assert!(gone.is_empty(), "lib.rs's index lists methods Client does not have: {gone:?}");
}
