//! No import circle between the client's files (issue 34): a file that takes a name from
//! another is above it, and nothing below takes from it again, so each file can be read (and
//! changed) knowing only the files it imports.
//!
//! Read from the source text: every `crate::…`, `super::…` and `self::…` path (in `use` trees
//! and inline) is resolved to the file that defines the module it names; a name `lib.rs`
//! re-exports (`pub use x::{A, B}`) resolves to the file it comes from, since `lib.rs` is the
//! crate's index, not a layer. `mod` lines are not imports. Comments, strings and `#[cfg(test)]`
//! modules are left out (a test may reach anywhere).
//!
//! A method is an arrow no path shows: `impl Client { fn authenticate … }` in `sasl.rs` is used
//! by the file that calls `.authenticate(`, with no `use` of `sasl.rs`. So a file that adds
//! methods to a type defined in another file is taken from by each file that names the type
//! and calls one of those methods (only for method names defined once in the crate).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path, `["metadata"]` for `src/metadata.rs`, `[]` for `src/lib.rs`.
type ModulePath = Vec<String>;

/// Every `.rs` file under `src`, by its module path.
fn modules(src: &Path) -> BTreeMap<ModulePath, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("src is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).expect("under src");
            let mut parts: Vec<String> =
                rel.iter().map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned()).collect();
            if matches!(parts.last().map(String::as_str), Some("lib" | "mod")) {
                parts.pop();
            }
            out.insert(parts, path);
        }
    }
    out
}

/// The text with comments, string and char literals blanked, and `#[cfg(test)]` items cut.
fn code_of(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < bytes.len() && !(bytes[i] == b'*' && bytes[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
            b'r' if matches!(bytes.get(i + 1), Some(b'"' | b'#'))
                && !ident_byte(bytes, i.wrapping_sub(1)) =>
            {
                // A raw string: r"…", r#"…"#.
                let mut j = i + 1;
                let mut hashes = 0;
                while bytes.get(j) == Some(&b'#') {
                    hashes += 1;
                    j += 1;
                }
                if bytes.get(j) != Some(&b'"') {
                    out.push('r');
                    i += 1;
                    continue;
                }
                j += 1;
                let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
                while j < bytes.len() && !bytes[j..].starts_with(&close) {
                    j += 1;
                }
                i = j + close.len();
                out.push_str("\"\"");
            }
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("\"\"");
            }
            b'\'' if is_char_literal(bytes, i) => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'\'' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("' '");
            }
            b => {
                out.push(b as char);
                i += 1;
            }
        }
    }
    cut_test_modules(&out)
}

fn ident_byte(bytes: &[u8], i: usize) -> bool {
    bytes.get(i).is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
}

/// `'x'` or `'\n'`, not a lifetime `'a`.
fn is_char_literal(bytes: &[u8], i: usize) -> bool {
    match bytes.get(i + 1) {
        Some(b'\\') => true,
        Some(_) => bytes.get(i + 2) == Some(&b'\'') || (bytes[i + 1] >= 0x80),
        None => false,
    }
}

/// Cuts every item that follows `#[cfg(test)]` (a `mod … { … }` or a single item).
fn cut_test_modules(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        // The item ends at its matching close brace, or at `;` if it has no body.
        let mut depth = 0usize;
        let mut end = after.len();
        for (k, c) in after.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = k + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = k + 1;
                    break;
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// Every path the code names from `crate`, `super` or `self`, made absolute from `here`, as
/// the segments after the crate root (`["error", "ClientError"]`); `use` trees expanded.
fn paths_named(code: &str, here: &[String]) -> Vec<Vec<String>> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts_path =
            !ident_byte(bytes, i.wrapping_sub(1)) && bytes.get(i.wrapping_sub(1)) != Some(&b':');
        let head = ["crate::", "super::", "self::"].into_iter().find(|h| code[i..].starts_with(h));
        match head {
            Some(h) if starts_path => {
                let base: Vec<String> = match h {
                    "crate::" => Vec::new(),
                    "super::" => here[..here.len().saturating_sub(1)].to_vec(),
                    _ => here.to_vec(),
                };
                let (trees, used) = parse_tree(&code[i + h.len()..]);
                for t in trees {
                    out.push(resolve_supers(base.iter().cloned().chain(t).collect()));
                }
                i += h.len() + used.max(1);
            }
            _ => i += 1,
        }
    }
    out
}

/// `super::super::x` inside a path: each `super` drops the segment before it.
fn resolve_supers(segments: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in segments {
        if s == "super" {
            out.pop();
        } else if s != "self" {
            out.push(s);
        }
    }
    out
}

/// A path or `use` tree at the start of `s` (after a `crate::`): every leaf path, and how
/// many bytes it took.
fn parse_tree(s: &str) -> (Vec<Vec<String>>, usize) {
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut prefix: Vec<String> = Vec::new();
    loop {
        while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        if bytes.get(i) == Some(&b'{') {
            // A group: comma-separated subtrees to the matching `}`.
            i += 1;
            let mut leaves = Vec::new();
            loop {
                while bytes.get(i).is_some_and(|b| b.is_ascii_whitespace() || *b == b',') {
                    i += 1;
                }
                if i >= bytes.len() || bytes[i] == b'}' {
                    i += 1;
                    break;
                }
                let (sub, used) = parse_tree(&s[i..]);
                for leaf in sub {
                    leaves.push(prefix.iter().cloned().chain(leaf).collect());
                }
                i += used.max(1);
            }
            return (leaves, i);
        }
        let start = i;
        while ident_byte(bytes, i) || bytes.get(i) == Some(&b'*') {
            i += 1;
        }
        if i == start {
            return (vec![prefix], i);
        }
        prefix.push(s[start..i].to_owned());
        if s[i..].starts_with("::") {
            i += 2;
        } else {
            return (vec![prefix], i);
        }
    }
}

/// `lib.rs`'s re-exports: a name at the crate root to the module path it comes from.
fn root_reexports(lib_code: &str) -> BTreeMap<String, ModulePath> {
    let mut out = BTreeMap::new();
    for stmt in lib_code.split(';') {
        let stmt = stmt.trim();
        let Some(tree) = stmt.strip_prefix("pub use ") else { continue };
        let tree = tree.trim_start_matches("self::");
        if tree.starts_with("crate::") || !tree.starts_with(|c: char| c.is_ascii_lowercase()) {
            continue;
        }
        let (leaves, _) = parse_tree(tree);
        for leaf in leaves {
            if let Some((name, module)) = leaf.split_last() {
                out.insert(name.clone(), module.to_vec());
            }
        }
    }
    out
}

/// The file a path names: the longest prefix of it that is a module with a file; a name
/// re-exported by `lib.rs` goes to where it comes from.
fn file_of(
    path: &[String],
    modules: &BTreeMap<ModulePath, PathBuf>,
    reexports: &BTreeMap<String, ModulePath>,
) -> Option<ModulePath> {
    if let Some(first) = path.first() {
        if !modules.contains_key(&vec![first.clone()]) {
            if let Some(module) = reexports.get(first) {
                let mut full = module.clone();
                full.extend(path[1..].iter().cloned());
                return file_of(&full, modules, &BTreeMap::new());
            }
        }
    }
    (1..=path.len()).rev().map(|n| path[..n].to_vec()).find(|p| modules.contains_key(p))
}

/// The identifier at the start of `s`, if any.
fn ident_at(s: &str) -> &str {
    let end = s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(s.len());
    &s[..end]
}

/// Every `fn name` in `code`.
fn fns_defined(code: &str) -> Vec<String> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    for (at, _) in code.match_indices("fn ") {
        if !ident_byte(bytes, at.wrapping_sub(1)) {
            let name = ident_at(&code[at + 3..]);
            if !name.is_empty() {
                out.push(name.to_owned());
            }
        }
    }
    out
}

/// The types `code` defines (`struct`, `enum`, `union`, `type`, `trait`).
fn types_defined(code: &str) -> Vec<String> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    for kw in ["struct ", "enum ", "union ", "type ", "trait "] {
        for (at, _) in code.match_indices(kw) {
            if !ident_byte(bytes, at.wrapping_sub(1)) {
                let name = ident_at(&code[at + kw.len()..]);
                if !name.is_empty() {
                    out.push(name.to_owned());
                }
            }
        }
    }
    out
}

/// The inherent `impl T { … }` blocks of `code` (not `impl Trait for T`, not `-> impl Trait`):
/// the type's name and the names of the methods the block defines.
fn inherent_impls(code: &str) -> Vec<(String, Vec<String>)> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    for (at, _) in code.match_indices("impl") {
        if ident_byte(bytes, at.wrapping_sub(1)) || ident_byte(bytes, at + 4) {
            continue;
        }
        // An item starts here: after the start, a `}`, `;`, `{` or an attribute's `]`.
        let before = code[..at].trim_end();
        if !(before.is_empty() || before.ends_with(['}', ';', '{', ']'])) {
            continue;
        }
        let Some(open) = code[at..].find(['{', ';']).map(|k| at + k) else { continue };
        if bytes[open] != b'{' {
            continue;
        }
        let mut header = code[at + 4..open].trim();
        if header.starts_with('<') {
            // impl<'a, T> …: skip the generics.
            let mut depth = 0usize;
            let mut end = header.len();
            for (k, c) in header.char_indices() {
                match c {
                    '<' => depth += 1,
                    '>' => {
                        depth -= 1;
                        if depth == 0 {
                            end = k + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            header = header[end..].trim();
        }
        if header.split_whitespace().any(|w| w == "for") {
            continue; // a trait impl: its methods are the trait's
        }
        let path = header.split(['<', ' ']).next().unwrap_or("");
        let name = path.rsplit("::").next().unwrap_or("").to_owned();
        if name.is_empty() {
            continue;
        }
        let mut depth = 0usize;
        let mut close = code.len();
        for (k, c) in code[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = open + k;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.push((name, fns_defined(&code[open..close])));
    }
    out
}

/// Whether `code` calls `method` (`.method(`, `::method(`, either with a turbofish).
fn calls(code: &str, method: &str) -> bool {
    let bytes = code.as_bytes();
    code.match_indices(method).any(|(at, _)| {
        let after = &code[at + method.len()..];
        let called = after.starts_with('(') || after.starts_with("::<");
        let on_something = at > 0 && (bytes[at - 1] == b'.' || code[..at].ends_with("::"));
        called && on_something && !ident_byte(bytes, at + method.len())
    })
}

/// Whether `code` names `ident` as a whole identifier.
fn names(code: &str, ident: &str) -> bool {
    let bytes = code.as_bytes();
    code.match_indices(ident)
        .any(|(at, _)| !ident_byte(bytes, at.wrapping_sub(1)) && !ident_byte(bytes, at + ident.len()))
}

/// The arrows no path shows: a file that adds methods to a type defined in another file
/// (`impl Client { fn authenticate … }` in `sasl.rs`) is used by every file that names the
/// type and calls one of them. Counted only for methods whose name is defined once in the
/// crate, so that a call can only be to that one.
fn method_arrows(
    code: &BTreeMap<ModulePath, String>,
) -> BTreeMap<ModulePath, BTreeMap<ModulePath, BTreeSet<String>>> {
    let mut defined_in: BTreeMap<String, BTreeSet<ModulePath>> = BTreeMap::new();
    let mut fn_count: BTreeMap<String, usize> = BTreeMap::new();
    for (module, text) in code {
        for t in types_defined(text) {
            defined_in.entry(t).or_default().insert(module.clone());
        }
        for f in fns_defined(text) {
            *fn_count.entry(f).or_default() += 1;
        }
    }
    let mut edges: BTreeMap<ModulePath, BTreeMap<ModulePath, BTreeSet<String>>> = BTreeMap::new();
    for (adder, text) in code {
        for (ty, methods) in inherent_impls(text) {
            let Some(homes) = defined_in.get(&ty) else { continue };
            if homes.len() != 1 || homes.contains(adder) {
                continue; // not the crate's type, or defined here: an ordinary impl
            }
            for method in methods.iter().filter(|m| fn_count.get(*m) == Some(&1)) {
                for (caller, caller_text) in code {
                    if caller == adder || caller.is_empty() {
                        continue;
                    }
                    if (homes.contains(caller) || names(caller_text, &ty)) && calls(caller_text, method) {
                        edges
                            .entry(caller.clone())
                            .or_default()
                            .entry(adder.clone())
                            .or_default()
                            .insert(format!("{ty}::{method}"));
                    }
                }
            }
        }
    }
    edges
}

/// The import graph: file → (file it takes from → the names taken).
fn graph(src: &Path) -> BTreeMap<ModulePath, BTreeMap<ModulePath, BTreeSet<String>>> {
    let modules = modules(src);
    let code: BTreeMap<ModulePath, String> = modules
        .iter()
        .map(|(m, p)| (m.clone(), code_of(&std::fs::read_to_string(p).expect("a source file"))))
        .collect();
    let reexports = root_reexports(code.get(&Vec::new()).map_or("", String::as_str));
    let mut edges: BTreeMap<ModulePath, BTreeMap<ModulePath, BTreeSet<String>>> = BTreeMap::new();
    for (module, text) in &code {
        if module.is_empty() {
            continue; // lib.rs: the index (mod lines and re-exports), not a layer
        }
        for path in paths_named(text, module) {
            let Some(target) = file_of(&path, &modules, &reexports) else { continue };
            if &target == module || target.is_empty() {
                continue;
            }
            let name = path.last().cloned().unwrap_or_default();
            edges.entry(module.clone()).or_default().entry(target).or_default().insert(name);
        }
    }
    for (from, targets) in method_arrows(&code) {
        for (to, names) in targets {
            edges.entry(from.clone()).or_default().entry(to).or_default().extend(names);
        }
    }
    edges
}

/// The circles: strongly connected sets of two or more files (Tarjan).
fn circles(edges: &BTreeMap<ModulePath, BTreeMap<ModulePath, BTreeSet<String>>>) -> Vec<Vec<ModulePath>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<ModulePath, BTreeMap<ModulePath, BTreeSet<String>>>,
        index: BTreeMap<ModulePath, usize>,
        low: BTreeMap<ModulePath, usize>,
        stack: Vec<ModulePath>,
        on_stack: BTreeSet<ModulePath>,
        found: Vec<Vec<ModulePath>>,
    }
    fn visit(w: &mut Walk<'_>, v: &ModulePath) {
        let n = w.index.len();
        w.index.insert(v.clone(), n);
        w.low.insert(v.clone(), n);
        w.stack.push(v.clone());
        w.on_stack.insert(v.clone());
        let targets: Vec<ModulePath> =
            w.edges.get(v).map(|t| t.keys().cloned().collect()).unwrap_or_default();
        for t in targets {
            if !w.index.contains_key(&t) {
                visit(w, &t);
                let low = w.low[v].min(w.low[&t]);
                w.low.insert(v.clone(), low);
            } else if w.on_stack.contains(&t) {
                let low = w.low[v].min(w.index[&t]);
                w.low.insert(v.clone(), low);
            }
        }
        if w.low[v] == w.index[v] {
            let mut set = Vec::new();
            while let Some(top) = w.stack.pop() {
                w.on_stack.remove(&top);
                let done = &top == v;
                set.push(top);
                if done {
                    break;
                }
            }
            if set.len() > 1 {
                set.sort();
                w.found.push(set);
            }
        }
    }
    let mut w = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    let nodes: Vec<ModulePath> = edges.keys().cloned().collect();
    for v in &nodes {
        if !w.index.contains_key(v) {
            visit(&mut w, v);
        }
    }
    w.found
}

fn describe(
    circle: &[ModulePath],
    edges: &BTreeMap<ModulePath, BTreeMap<ModulePath, BTreeSet<String>>>,
) -> String {
    let name = |m: &ModulePath| m.join("/") + ".rs";
    let mut lines = vec![format!("circle of {} files:", circle.len())];
    for from in circle {
        for (to, names) in edges.get(from).into_iter().flatten() {
            if circle.contains(to) {
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                lines.push(format!("  {} -> {}: {}", name(from), name(to), names.join(", ")));
            }
        }
    }
    lines.join("\n")
}

#[test]
fn no_file_of_the_client_imports_from_a_file_that_imports_from_it_again() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let edges = graph(&src);
    assert!(edges.len() > 20, "the import graph was not read: {} files with imports", edges.len());
    let found = circles(&edges);
    let text: Vec<String> = found.iter().map(|c| describe(c, &edges)).collect();
    assert!(found.is_empty(), "import circles in kafka-client/src:\n{}", text.join("\n"));
}

#[test]
fn the_reader_sees_use_trees_inline_paths_super_and_reexports_and_finds_a_circle() {
    let dir = std::env::temp_dir().join(format!("kwire-import-circles-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("net")).unwrap();
    let write = |p: &str, t: &str| std::fs::write(src.join(p), t).unwrap();
    write("lib.rs", "mod a;\nmod net;\npub use a::{Alpha, alpha};\n");
    write("a.rs", "use crate::net::{conn::{Conn, Other}, *};\n// use crate::b::Comment;\nfn f() { let _ = \"crate::b::Str\"; }\n");
    write("net/mod.rs", "pub mod conn;\n");
    write(
        "net/conn.rs",
        "fn g() -> super::super::Alpha { crate::c::h() }\n#[cfg(test)]\nmod tests { use crate::a::Test; }\n",
    );
    write("c.rs", "pub fn h() {}\n");
    let edges = graph(&src);
    let m = |s: &str| s.split('/').map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(edges[&m("a")].keys().cloned().collect::<Vec<_>>(), [m("net"), m("net/conn")], "{edges:?}");
    assert_eq!(edges[&m("a")][&m("net/conn")], BTreeSet::from(["Conn".to_owned(), "Other".to_owned()]));
    // `super::super::Alpha` is lib.rs's re-export of a::Alpha; the test module is left out.
    assert_eq!(edges[&m("net/conn")].keys().cloned().collect::<Vec<_>>(), [m("a"), m("c")], "{edges:?}");
    let found = circles(&edges);
    assert_eq!(found, [vec![m("a"), m("net/conn")]], "{edges:?}");
    assert!(describe(&found[0], &edges).contains("net/conn.rs -> a.rs: Alpha"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_reader_sees_a_call_to_a_method_another_file_adds_to_a_type() {
    let dir = std::env::temp_dir().join(format!("kwire-import-methods-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(&src).unwrap();
    let write = |p: &str, t: &str| std::fs::write(src.join(p), t).unwrap();
    write("lib.rs", "mod d;\nmod e;\nmod f;\nmod g;\npub use d::Pool;\n");
    // d defines Pool and calls login, which e adds to it: d -> e, and e -> d through its path.
    write(
        "d.rs",
        "pub struct Pool;\nimpl Pool {\n    fn open(&self) { self.login(); self.size(); }\n}\n\
         impl std::fmt::Display for Pool {\n    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { Ok(()) }\n}\n",
    );
    write(
        "e.rs",
        "use crate::d::Pool;\nimpl Pool {\n    pub(crate) fn login(&self) {}\n}\n\
         fn helper() -> impl Fn() { || {} }\n",
    );
    // f adds `size`, a name also defined elsewhere (g): a call to it is not taken as f's.
    write("f.rs", "impl crate::Pool {\n    pub(crate) fn size(&self) -> usize { 0 }\n}\n");
    // g calls a `login` but never names Pool: not an arrow to e.
    write("g.rs", "fn size() {}\nfn h(x: &X) { x.login(); }\n");
    let edges = graph(&src);
    let m = |s: &str| vec![s.to_owned()];
    assert_eq!(edges[&m("d")].keys().cloned().collect::<Vec<_>>(), [m("e")], "{edges:?}");
    assert_eq!(edges[&m("d")][&m("e")], BTreeSet::from(["Pool::login".to_owned()]));
    assert!(!edges.contains_key(&m("g")), "{edges:?}");
    let found = circles(&edges);
    assert_eq!(found, [vec![m("d"), m("e")]], "{edges:?}");
    assert!(describe(&found[0], &edges).contains("d.rs -> e.rs: Pool::login"));
    std::fs::remove_dir_all(&dir).unwrap();
}
