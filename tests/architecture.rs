//! The pipeline's direction, checked by the build (issue 12): `src/` is laid out in stages,
//! and a stage imports only from itself, the stages before it and the foundations.
//!
//! | rank | stage | what it holds |
//! |---|---|---|
//! | 0 | foundations: `error`, `isolate`, `source`, `config` | used by every stage |
//! | 1 | `syntax` | languages, facts, extraction |
//! | 2 | `graph` | on-disk codes, the graph file, its reader |
//! | 3 | `build` | inventory, SCIP, resolution, compilation, the store, the pipeline, sessions |
//! | 4 | `query` | intent, profiles, context, search, expand, tokens |
//! | 5 | `cli` | the command-line surface, eval, observability |
//!
//! Modules directly under a stage (`build::store`, `query::search`) must not import each
//! other in a cycle. Every `crate::…` path in code counts (uses and inline paths alike),
//! comments and string literals do not.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const FOUNDATIONS: &[&str] = &["error", "isolate", "source", "config", "code_enum"];
const STAGES: &[&str] = &["syntax", "graph", "build", "query", "cli"];

fn rank(first: &str) -> Option<usize> {
    if FOUNDATIONS.contains(&first) {
        return Some(0);
    }
    STAGES.iter().position(|s| *s == first).map(|i| i + 1)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a source file: `src/query/context/mod.rs` → `query::context`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    parts
}

/// The code of a Rust file without comments, string and character literals.
fn code_only(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let rest = &text[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            i += rest.find("*/").map_or(rest.len(), |e| e + 2);
        } else if let Some(raw) = rest.strip_prefix("r#\"") {
            i += 3 + raw.find("\"#").map_or(raw.len(), |e| e + 2);
            out.push_str("\"\"");
        } else if bytes[i] == b'"' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            i = j + 1;
            out.push_str("\"\"");
        } else if bytes[i] == b'\''
            && (rest[1..].starts_with("\\") || rest[1..].chars().nth(1) == Some('\''))
        {
            // A character literal (not a lifetime).
            let end = rest[1..].find('\'').map_or(1, |e| e + 2);
            i += end;
            out.push_str("' '");
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// Every `crate::a::b…` path of `code`, groups expanded (`crate::{a::x, b}` → `a::x`, `b`).
fn crate_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(found) = code[at..].find("crate::") {
        let start = at + found;
        at = start + "crate::".len();
        let before = code[..start].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        paths_at(code, at, Vec::new(), &mut out);
    }
    out
}

fn ident_at(code: &str, at: usize) -> (String, usize) {
    let ident: String = code[at..]
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    let end = at + ident.len();
    (ident, end)
}

fn paths_at(code: &str, mut at: usize, mut prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    loop {
        let rest = code[at..].trim_start();
        at = code.len() - rest.len();
        if rest.starts_with('{') {
            // A group: each comma-separated item continues the prefix.
            let mut depth = 0;
            let mut item_start = at + 1;
            let mut imports_itself = false;
            for (offset, c) in code[at..].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' | ',' if depth == 1 => {
                        let item = code[item_start..at + offset].trim();
                        if item == "self" {
                            imports_itself = true;
                        } else if !item.is_empty() {
                            paths_at(code, item_start, prefix.clone(), out);
                        }
                        item_start = at + offset + 1;
                        if c == '}' {
                            break;
                        }
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if imports_itself && !prefix.is_empty() {
                out.push(prefix);
            }
            return;
        }
        let (ident, end) = ident_at(code, at);
        if ident.is_empty() {
            if !prefix.is_empty() {
                out.push(prefix);
            }
            return;
        }
        prefix.push(ident);
        at = end;
        if code[at..].starts_with("::") {
            at += 2;
        } else {
            out.push(prefix);
            return;
        }
    }
}

/// The unit of the cycle check: `stage::module` (or the stage itself, or a foundation).
fn unit(path: &[String]) -> String {
    match path {
        [first, ..] if FOUNDATIONS.contains(&first.as_str()) => first.clone(),
        [first, second, ..] if second.chars().next().is_some_and(char::is_lowercase) => {
            format!("{first}::{second}")
        }
        [first, ..] => first.clone(),
        [] => String::new(),
    }
}

struct Import {
    file: String,
    from: Vec<String>,
    to: Vec<String>,
}

fn imports() -> Vec<Import> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let relative = file.strip_prefix(&src).unwrap();
        if relative == Path::new("main.rs") || relative.starts_with("bin") {
            continue;
        }
        let from = module_of(&src, &file);
        let code = code_only(&std::fs::read_to_string(&file).unwrap());
        for to in crate_paths(&code) {
            out.push(Import {
                file: relative.display().to_string(),
                from: from.clone(),
                to,
            });
        }
    }
    out
}

#[test]
fn every_import_runs_with_the_pipeline() {
    let imports = imports();
    assert!(imports.len() > 100, "the scan found too few imports");
    let mut backward = Vec::new();
    for import in &imports {
        let Some(first) = import.from.first() else {
            continue; // lib.rs declares the stages
        };
        let from = rank(first).unwrap_or_else(|| panic!("{} is in no stage", import.file));
        let to = rank(&import.to[0]).unwrap_or_else(|| {
            panic!(
                "{}: crate::{} is in no stage",
                import.file,
                import.to.join("::")
            )
        });
        if to > from {
            backward.push(format!(
                "{} ({}) imports crate::{} ({})",
                import.file,
                first,
                import.to.join("::"),
                import.to[0]
            ));
        }
    }
    backward.sort();
    backward.dedup();
    assert!(
        backward.is_empty(),
        "{} import(s) run against the stage order:\n{}",
        backward.len(),
        backward.join("\n")
    );
}

#[test]
fn modules_of_a_stage_import_each_other_without_cycles() {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for import in imports() {
        let (from, to) = (unit(&import.from), unit(&import.to));
        if from.is_empty() || to.is_empty() || from == to {
            continue;
        }
        // A stage's own root (its `mod.rs`) declares its modules; only code counts.
        if !from.contains("::") && import.from.len() == 1 && to.starts_with(&format!("{from}::")) {
            continue;
        }
        edges.entry(from).or_default().insert(to);
    }
    // Depth-first search for a back edge.
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(node.to_string(), 1);
        stack.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            match state.get(next.as_str()) {
                Some(1) => {
                    let at = stack.iter().position(|n| n == next).unwrap();
                    let mut cycle = stack[at..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(cycle) = visit(next, edges, state, stack) {
                        return Some(cycle);
                    }
                }
            }
        }
        stack.pop();
        state.insert(node.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in edges.keys() {
        if !state.contains_key(node.as_str())
            && let Some(cycle) = visit(node, &edges, &mut state, &mut Vec::new())
        {
            panic!("import cycle: {}", cycle.join(" → "));
        }
    }
}

#[test]
fn the_scanner_reads_groups_and_ignores_comments_and_strings() {
    let code = code_only(
        "use crate::a::{b::C, d, self};\n// crate::commented::Out\nlet s = \"crate::quoted\";\nlet x = crate::e::f(1);\n",
    );
    let paths: Vec<String> = crate_paths(&code)
        .into_iter()
        .map(|p| p.join("::"))
        .collect();
    assert_eq!(paths, ["a::b::C", "a::d", "a", "e::f"]);
    assert_eq!(
        unit(&["query".into(), "search".into(), "Hit".into()]),
        "query::search"
    );
    assert_eq!(unit(&["graph".into(), "Graph".into()]), "graph");
    assert_eq!(unit(&["error".into(), "Result".into()]), "error");
}

#[test]
fn the_library_never_reads_the_environment() {
    // The configuration is read once, at the edge (`cli::app`), and passed down.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut reads = Vec::new();
    for file in files {
        let relative = file.strip_prefix(&src).unwrap().display().to_string();
        // The edge, and the build script (`link.rs`, run by Cargo: its input is Cargo's
        // environment).
        if relative == "cli/app.rs"
            || relative == "main.rs"
            || relative == "link.rs"
            || relative.starts_with("bin/")
        {
            continue;
        }
        let code = code_only(&std::fs::read_to_string(&file).unwrap());
        for (n, line) in code.lines().enumerate() {
            if line.contains("env::var") || line.contains("env::vars") {
                reads.push(format!("{relative}:{}", n + 1));
            }
        }
    }
    assert!(
        reads.is_empty(),
        "environment read in the library: {reads:?}"
    );
}

#[test]
fn the_environment_table_in_the_docs_is_the_configuration() {
    // docs/CLI.md lists each variable of `config::VARIABLES` once, as
    // `| `NAME=values` | doc |`, in the same order.
    let docs =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/CLI.md")).unwrap();
    let section = docs
        .split("## Environment")
        .nth(1)
        .expect("docs/CLI.md has an Environment section");
    let rows: Vec<(String, String)> = section
        .lines()
        .skip_while(|l| !l.starts_with("| `"))
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').splitn(2, " | ").collect();
            let unescape = |cell: &str| cell.trim().replace("\\|", "|");
            (
                unescape(cells[0]).trim_matches('`').to_string(),
                unescape(cells.get(1).unwrap_or(&"")),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = atlas::config::VARIABLES
        .iter()
        .map(|v| (format!("{}={}", v.name, v.values), v.doc.to_string()))
        .collect();
    assert_eq!(rows, expected);
}

/// One module convention: a module with parts is `folder/mod.rs`; no `name.rs` stands
/// beside a `name/` folder.
#[test]
fn every_module_with_parts_is_a_folder_with_mod_rs() {
    fn walk(dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                let has_rust = std::fs::read_dir(&path)
                    .unwrap()
                    .any(|e| e.unwrap().path().extension().is_some_and(|x| x == "rs"));
                if has_rust && path.with_extension("rs").is_file() {
                    out.push(path.with_extension("rs").display().to_string());
                }
                if has_rust && !path.join("mod.rs").is_file() && path.file_name().unwrap() != "bin"
                {
                    out.push(format!("{} (no mod.rs)", path.display()));
                }
                walk(&path, out);
            }
        }
    }
    let mut offenders = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut offenders,
    );
    assert!(
        offenders.is_empty(),
        "modules outside the convention: {offenders:#?}"
    );
}
