//! Name resolution, as behaviour: each test is a small repository written as one fixture
//! string, with the edges its references must produce annotated in place.
//!
//! A fixture holds several files, each introduced by a header line `//- /path/to/file`
//! (relative to the repository root). Non-code files (`package.json`, `pyproject.toml`,
//! `go.mod`, …) are written as they are. In a source file, a comment line (`#` in Python,
//! `//` elsewhere) whose text starts with `^` is an annotation about the previous
//! non-annotation line: the caret's column points at a reference there (its name token),
//! and the text after the caret says what that reference must produce:
//!
//! ```text
//!     f()
//! #   ^ calls: a.py::f (import)
//! #   ^ !calls: typing.py::cast
//!     obj.missing()
//! #       ^ frontier: missing (call)
//! ```
//!
//! - `KIND: LABEL (q, …)`: an edge of `KIND` (as the graph dump names it: `calls`,
//!   `references`, `uses-type`, `implements`, `implements(extends)` or `extends`,
//!   `imports`) whose site covers the caret and whose target's label is `LABEL`. Other
//!   edges of that kind at the site, and a frontier entry of the same role there, fail the
//!   check unless annotated too. Qualifiers: a resolution (`precise`, `import`, `scope`,
//!   `qualified`, `unique-name`), a provenance (`tree-sitter`, `scip`), `confidence=N`,
//!   `from=LABEL` (the source node).
//! - `frontier: NAME (q, …)`: an unresolved reference of that name at the site, and no
//!   edge of its role's kind there. Qualifiers: a role (`call`, `type-use`, …),
//!   `candidates=N`, `from=LABEL`.
//! - `!KIND: LABEL` / `!frontier: NAME`: no such edge / entry at the site.
//!
//! Columns are bytes: indent annotated code with spaces, not tabs. Annotation lines are
//! removed before the file is written, so the graph's lines are those of the code without
//! them. The build is the real pipeline, in process (`build::pipeline::build`); the checks
//! read the committed graph through the reader and compare labels, names and code names,
//! never raw node ids (only `facts_of` touches ids). A failure prints the fixture, the
//! expectation, what the graph has at the caret and the dump lines of that source line.
//! `RESOLVE_FIXTURE_DUMP=1` prints every fixture's dump.

#[path = "common/fixture.rs"]
mod fixture;

use fixture::trim_indent;

use std::fmt::Write as _;
use std::path::Path;

use atlas::build::pipeline::{self, BuildOptions};
use atlas::build::store::Store;
use atlas::graph::codes::{EdgeKind, EdgeSubkind, Provenance, Resolution};
use atlas::graph::reader::Graph;
use atlas::syntax::facts::RefRole;

// ---------------------------------------------------------------------------------------
// The fixture format.

struct FixtureFile {
    path: String,
    text: String,
}

#[derive(Debug, Clone)]
enum Expect {
    Edge {
        kind: String,
        target: String,
        qualifiers: Vec<String>,
    },
    Frontier {
        name: String,
        qualifiers: Vec<String>,
    },
}

#[derive(Debug, Clone)]
struct Annotation {
    path: String,
    /// 0-based line and byte column in the written file.
    line: usize,
    column: usize,
    /// Byte offset of the caret in the written file.
    offset: u32,
    negated: bool,
    expect: Expect,
    /// The annotation as written, for messages.
    written: String,
}

/// The line-comment prefix of a source file, or `None` for files written as they are.
fn comment_prefix(path: &str) -> Option<&'static str> {
    let ext = path.rsplit_once('.').map_or("", |(_, e)| e);
    match ext {
        "py" | "pyi" => Some("#"),
        "ts" | "tsx" | "js" | "jsx" | "mjs" | "cjs" | "go" | "rs" | "java" => Some("//"),
        _ => None,
    }
}

fn parse_fixture(fixture: &str) -> (Vec<FixtureFile>, Vec<Annotation>) {
    let files = fixture::split_files(fixture);
    let mut written = Vec::new();
    let mut annotations = Vec::new();
    for (path, lines) in files {
        let prefix = comment_prefix(&path);
        let mut text = String::new();
        // (line index, byte offset of its start, its length) of the last real line.
        let mut last: Option<(usize, usize, usize)> = None;
        let mut line_count = 0usize;
        for line in &lines {
            let annotation = prefix.and_then(|p| {
                let rest = line.trim_start().strip_prefix(p)?;
                rest.trim_start().starts_with('^').then_some(())?;
                Some(line.find('^').expect("a caret"))
            });
            match annotation {
                Some(column) => {
                    let (line_index, start, len) = last.unwrap_or_else(|| {
                        panic!("{path}: annotation before any code line: {line:?}")
                    });
                    assert!(
                        column < len,
                        "{path}:{}: the caret of {line:?} is past the end of the line it \
                         annotates",
                        line_index + 1
                    );
                    let body = line[column..].trim_start_matches('^').trim();
                    let (negated, expect) = parse_expectation(body).unwrap_or_else(|e| {
                        panic!("{path}:{}: bad annotation {line:?}: {e}", line_index + 1)
                    });
                    annotations.push(Annotation {
                        path: path.clone(),
                        line: line_index,
                        column,
                        offset: (start + column) as u32,
                        negated,
                        expect,
                        written: body.to_string(),
                    });
                }
                None => {
                    last = Some((line_count, text.len(), line.len()));
                    text.push_str(line);
                    text.push('\n');
                    line_count += 1;
                }
            }
        }
        written.push(FixtureFile { path, text });
    }
    (written, annotations)
}

/// `KIND: TARGET (q, …)`, `frontier: NAME (q, …)`, either negated with a leading `!`.
fn parse_expectation(text: &str) -> Result<(bool, Expect), String> {
    let (negated, text) = match text.strip_prefix('!') {
        Some(rest) => (true, rest.trim_start()),
        None => (false, text),
    };
    let (kind, rest) = text
        .split_once(':')
        .ok_or("expected `KIND: TARGET` or `frontier: NAME`")?;
    // Kinds hold no `:`, so the first one ends the kind even when the label has `::`.
    let kind = kind.trim();
    let rest = rest.trim();
    let (target, qualifiers) = match rest.strip_suffix(')') {
        Some(inner) => {
            let open = inner.rfind('(').ok_or("unbalanced `)`")?;
            let qualifiers = inner[open + 1..]
                .split(',')
                .map(|q| q.trim().to_string())
                .filter(|q| !q.is_empty())
                .collect();
            (inner[..open].trim().to_string(), qualifiers)
        }
        None => (rest.to_string(), Vec::new()),
    };
    if target.is_empty() {
        return Err("empty target".into());
    }
    let expect = if kind == "frontier" {
        for q in &qualifiers {
            let known = RefRole::ALL.iter().any(|r| r.as_str() == q)
                || q.starts_with("candidates=")
                || q.starts_with("from=");
            if !known {
                return Err(format!("unknown frontier qualifier `{q}`"));
            }
        }
        Expect::Frontier {
            name: target,
            qualifiers,
        }
    } else {
        let kind = match kind {
            "contains" => return Err("`contains` edges have no site".into()),
            "extends" => "implements(extends)".to_string(),
            k if EdgeKind::from_str_name(k).is_some() || k == "implements(extends)" => {
                k.to_string()
            }
            other => return Err(format!("unknown edge kind `{other}`")),
        };
        for q in &qualifiers {
            let known = Resolution::ALL.iter().any(|r| r.as_str() == q)
                || Provenance::ALL.iter().any(|p| p.as_str() == q)
                || q.starts_with("confidence=")
                || q.starts_with("from=");
            if !known {
                return Err(format!("unknown edge qualifier `{q}`"));
            }
        }
        Expect::Edge {
            kind,
            target,
            qualifiers,
        }
    };
    Ok((negated, expect))
}

// ---------------------------------------------------------------------------------------
// What the committed graph says, as strings.

/// A non-containment edge with a site.
#[derive(Debug)]
struct EdgeFact {
    kind: String,
    from: String,
    to: String,
    provenance: &'static str,
    resolution: &'static str,
    confidence: u8,
    file: String,
    start: u32,
    end: u32,
}

#[derive(Debug)]
struct FrontierFact {
    name: String,
    role: &'static str,
    from: String,
    candidates: u32,
    file: String,
    start: u32,
    end: u32,
}

/// The edge kind a reference role produces when it resolves.
fn kind_of_role(role: &str) -> &'static str {
    match role {
        "call" => "calls",
        "type-use" => "uses-type",
        "import" => "imports",
        "inherit" => "implements(extends)",
        "implement" => "implements",
        _ => "references",
    }
}

/// The only place that touches node ids: everything after it compares strings.
fn facts_of(graph: &Graph) -> (Vec<EdgeFact>, Vec<FrontierFact>) {
    let mut edges = Vec::new();
    for id in graph.nodes() {
        for edge in graph.out_edges(id) {
            let kind = EdgeKind::from_code(edge.kind).expect("a known edge kind");
            if kind == EdgeKind::Contains {
                continue;
            }
            let site_file = edge.site_file();
            if site_file.is_none() {
                continue;
            }
            let extends = EdgeSubkind::from_code(edge.subkind) == Some(EdgeSubkind::Extends);
            edges.push(EdgeFact {
                kind: if extends {
                    format!("{}(extends)", kind.as_str())
                } else {
                    kind.as_str().to_string()
                },
                from: graph.label(id),
                to: graph.label(edge.node()),
                provenance: Provenance::from_code(edge.provenance).map_or("?", Provenance::as_str),
                resolution: Resolution::from_code(edge.resolution).map_or("?", Resolution::as_str),
                confidence: edge.confidence,
                file: graph.file_path(site_file).to_string(),
                start: edge.site.start_byte.to_native(),
                end: edge.site.end_byte.to_native(),
            });
        }
    }
    let frontier = graph
        .frontier_entries()
        .map(|(_, entry)| FrontierFact {
            name: graph.str(entry.name()).to_string(),
            role: RefRole::from_code(entry.role).map_or("?", RefRole::as_str),
            from: graph.label(entry.from()),
            candidates: entry.candidates.to_native(),
            file: graph.file_path(entry.file()).to_string(),
            start: entry.site.start_byte.to_native(),
            end: entry.site.end_byte.to_native(),
        })
        .collect();
    (edges, frontier)
}

fn covers(start: u32, end: u32, offset: u32) -> bool {
    start <= offset && (offset < end || start == end && offset == start)
}

impl EdgeFact {
    fn describe(&self) -> String {
        format!(
            "edge {} {} -> {} @{}[{}..{}] [{} {} {}]",
            self.kind,
            self.from,
            self.to,
            self.file,
            self.start,
            self.end,
            self.provenance,
            self.resolution,
            self.confidence
        )
    }

    fn has(&self, qualifier: &str) -> bool {
        if let Some(n) = qualifier.strip_prefix("confidence=") {
            return n.parse() == Ok(self.confidence);
        }
        if let Some(from) = qualifier.strip_prefix("from=") {
            return self.from == from;
        }
        self.resolution == qualifier || self.provenance == qualifier
    }
}

impl FrontierFact {
    fn describe(&self) -> String {
        format!(
            "frontier {} {} @{}[{}..{}] from {} candidates={}",
            self.name, self.role, self.file, self.start, self.end, self.from, self.candidates
        )
    }

    fn has(&self, qualifier: &str) -> bool {
        if let Some(n) = qualifier.strip_prefix("candidates=") {
            return n.parse() == Ok(self.candidates);
        }
        if let Some(from) = qualifier.strip_prefix("from=") {
            return self.from == from;
        }
        self.role == qualifier
    }
}

// ---------------------------------------------------------------------------------------
// The check.

/// Writes the fixture into a temporary repository, builds it in process, and checks every
/// annotation against the committed graph. Panics with every failed annotation at once.
#[track_caller]
fn check(fixture: &str) {
    let (files, annotations) = parse_fixture(fixture);
    assert!(
        !annotations.is_empty(),
        "a fixture without annotations checks nothing"
    );
    let temp = tempfile::tempdir().unwrap();
    let repo = temp.path().join("repo");
    let graph_dir = temp.path().join("graph");
    for file in &files {
        let path = repo.join(&file.path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &file.text).unwrap();
    }
    let graph = build(&repo, &graph_dir, fixture);
    let dump = atlas::graph::dump::dump(&graph);
    if std::env::var_os("RESOLVE_FIXTURE_DUMP").is_some() {
        eprintln!("--- dump\n{dump}");
    }
    let (edges, frontier) = facts_of(&graph);

    let mut failures = String::new();
    for a in &annotations {
        if let Err(why) = check_one(a, &annotations, &edges, &frontier) {
            let _ = writeln!(
                failures,
                "\n{}:{}:{}: `{}` failed: {why}",
                a.path,
                a.line + 1,
                a.column + 1,
                a.written
            );
            let source_line = files
                .iter()
                .find(|f| f.path == a.path)
                .and_then(|f| f.text.lines().nth(a.line))
                .unwrap_or("");
            let _ = writeln!(failures, "    | {source_line}");
            let _ = writeln!(failures, "    | {}^", " ".repeat(a.column));
            let here: Vec<String> = edges
                .iter()
                .filter(|e| e.file == a.path && covers(e.start, e.end, a.offset))
                .map(EdgeFact::describe)
                .chain(
                    frontier
                        .iter()
                        .filter(|f| f.file == a.path && covers(f.start, f.end, a.offset))
                        .map(FrontierFact::describe),
                )
                .collect();
            let _ = writeln!(failures, "  at the caret (byte {}):", a.offset);
            if here.is_empty() {
                let _ = writeln!(failures, "    (no edge and no frontier entry)");
            }
            for line in here {
                let _ = writeln!(failures, "    {line}");
            }
            let site = format!("@{}:{} ", a.path, a.line + 1);
            let site_end = format!("@{}:{}", a.path, a.line + 1);
            let lines: Vec<&str> = dump
                .lines()
                .filter(|l| l.contains(&site) || l.ends_with(&site_end))
                .collect();
            let _ = writeln!(failures, "  dump lines of {}:{}:", a.path, a.line + 1);
            if lines.is_empty() {
                let _ = writeln!(failures, "    (none)");
            }
            for line in lines {
                let _ = writeln!(failures, "    {line}");
            }
        }
    }
    if !failures.is_empty() {
        panic!(
            "resolution fixture failed\n--- fixture\n{}\n--- failures{failures}\n--- edges and \
             frontier of the dump\n{}",
            trim_indent(fixture),
            dump.lines()
                .filter(|l| l.starts_with("edge ") || l.starts_with("frontier "))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

fn build(repo: &Path, graph_dir: &Path, fixture: &str) -> Graph {
    let options = BuildOptions::new(repo, graph_dir);
    if let Err(e) = pipeline::build(&options) {
        panic!("build failed: {e}\n--- fixture\n{}", trim_indent(fixture));
    }
    let (_, graph) = Store::new(graph_dir)
        .open_current()
        .unwrap_or_else(|e| panic!("the built graph does not open: {e}"));
    graph
}

fn check_one(
    a: &Annotation,
    all: &[Annotation],
    edges: &[EdgeFact],
    frontier: &[FrontierFact],
) -> Result<(), String> {
    let at_site = |file: &str, start: u32, end: u32| file == a.path && covers(start, end, a.offset);
    match &a.expect {
        Expect::Edge {
            kind,
            target,
            qualifiers,
        } => {
            let of_kind: Vec<&EdgeFact> = edges
                .iter()
                .filter(|e| &e.kind == kind && at_site(&e.file, e.start, e.end))
                .collect();
            let matching: Vec<&&EdgeFact> = of_kind
                .iter()
                .filter(|e| &e.to == target && qualifiers.iter().all(|q| e.has(q)))
                .collect();
            if a.negated {
                return match matching.first() {
                    Some(e) => Err(format!("the graph has {}", e.describe())),
                    None => Ok(()),
                };
            }
            if matching.is_empty() {
                return Err(match of_kind.iter().find(|e| &e.to == target) {
                    Some(e) => format!(
                        "the edge exists but not with {qualifiers:?}: {}",
                        e.describe()
                    ),
                    None => format!("no `{kind}` edge to `{target}` at the caret"),
                });
            }
            // Every other target of that kind at the site must be annotated too.
            for e in &of_kind {
                let expected = all.iter().any(|other| {
                    !other.negated
                        && other.path == a.path
                        && covers(e.start, e.end, other.offset)
                        && matches!(&other.expect, Expect::Edge { kind: k, target: t, .. }
                            if k == kind && *t == e.to)
                });
                if !expected {
                    return Err(format!(
                        "an unannotated edge at the same site: {}",
                        e.describe()
                    ));
                }
            }
            if let Some(f) = frontier
                .iter()
                .find(|f| kind_of_role(f.role) == kind && at_site(&f.file, f.start, f.end))
            {
                return Err(format!("the site is also frontier: {}", f.describe()));
            }
            Ok(())
        }
        Expect::Frontier { name, qualifiers } => {
            let matching: Vec<&FrontierFact> = frontier
                .iter()
                .filter(|f| {
                    &f.name == name
                        && at_site(&f.file, f.start, f.end)
                        && qualifiers.iter().all(|q| f.has(q))
                })
                .collect();
            if a.negated {
                return match matching.first() {
                    Some(f) => Err(format!("the graph has {}", f.describe())),
                    None => Ok(()),
                };
            }
            let Some(entry) = matching.first() else {
                return Err(format!(
                    "no frontier entry `{name}` with {qualifiers:?} at the caret"
                ));
            };
            let kind = kind_of_role(entry.role);
            if let Some(e) = edges
                .iter()
                .find(|e| e.kind == kind && at_site(&e.file, e.start, e.end))
            {
                return Err(format!("the reference also resolved: {}", e.describe()));
            }
            Ok(())
        }
    }
}

// ---------------------------------------------------------------------------------------
// The helper itself.

#[test]
fn annotations_map_carets_to_the_previous_code_line_and_are_removed() {
    let (files, annotations) = parse_fixture(
        r#"
        //- /a.py
        def f():
            return 1
        //- /b.py
        from a import f

        def main():
            total = f()
        #           ^ calls: a.py::f (import, confidence=95)
        #   ^ !frontier: total
            return total
        //- /package.json
        {"name": "x"}
        "#,
    );
    assert_eq!(files.len(), 3);
    assert_eq!(files[0].path, "a.py");
    assert_eq!(
        files[1].text,
        "from a import f\n\ndef main():\n    total = f()\n    return total\n"
    );
    assert_eq!(files[2].text, "{\"name\": \"x\"}\n");
    assert_eq!(annotations.len(), 2);
    let call = &annotations[0];
    assert_eq!((call.line, call.column), (3, 12));
    let text = &files[1].text;
    assert_eq!(&text[call.offset as usize..call.offset as usize + 1], "f");
    assert!(!call.negated);
    assert!(
        matches!(&call.expect, Expect::Edge { kind, target, qualifiers }
        if kind == "calls" && target == "a.py::f" && qualifiers == &["import", "confidence=95"])
    );
    assert!(annotations[1].negated);
    assert!(matches!(&annotations[1].expect, Expect::Frontier { name, .. } if name == "total"));
}

#[test]
#[should_panic(expected = "no `calls` edge to `a.py::g` at the caret")]
fn a_wrong_target_fails() {
    check(
        r#"
        //- /a.py
        def f():
            return 1

        def g():
            return 2
        //- /b.py
        from a import f

        def main():
            return f()
        #          ^ calls: a.py::g
        "#,
    );
}

#[test]
#[should_panic(expected = "no frontier entry `f`")]
fn a_resolved_reference_is_not_frontier() {
    check(
        r#"
        //- /a.py
        def f():
            return 1
        //- /b.py
        from a import f

        def main():
            return f()
        #          ^ frontier: f
        "#,
    );
}

#[test]
#[should_panic(expected = "the graph has edge calls b.py::main -> a.py::f")]
fn an_absence_fails_when_the_edge_is_there() {
    check(
        r#"
        //- /a.py
        def f():
            return 1
        //- /b.py
        from a import f

        def main():
            return f()
        #          ^ !calls: a.py::f
        "#,
    );
}

#[test]
#[should_panic(expected = "no `calls` edge to `a.py::f` at the caret")]
fn an_edge_elsewhere_in_the_file_does_not_satisfy_an_annotation() {
    // `f` is called on line 4; the annotation points at `g` on line 5.
    check(
        r#"
        //- /a.py
        def f():
            return 1

        def g():
            return 2
        //- /b.py
        from a import f, g

        def main():
            f()
            return g()
        #          ^ calls: a.py::f
        "#,
    );
}

// ---------------------------------------------------------------------------------------
// Basics: one reference of each common shape, in several languages.

#[test]
fn python_from_import_call_resolves_through_the_import() {
    check(
        r#"
        //- /a.py
        def f():
            return 1
        //- /b.py
        from a import f
        #             ^ imports: a.py::f (import)

        def main():
            return f()
        #          ^ calls: a.py::f (import, confidence=95, from=b.py::main)
        "#,
    );
}

#[test]
fn python_self_calls_reach_the_enclosing_class_and_its_bases() {
    check(
        r#"
        //- /cart.py
        class Base:
            def helper(self):
                return 1

        class Cart(Base):
        #          ^ extends: cart.py::Base (scope)
            def total(self):
                return self.helper()
        #                   ^ calls: cart.py::Base.helper (scope, from=cart.py::Cart.total)

            def add(self, item):
                return self.total()
        #                   ^ calls: cart.py::Cart.total (scope, confidence=85)

            def missing_on_self(self):
                return self.nowhere()
        #                   ^ frontier: nowhere (call, candidates=0)
        "#,
    );
}

#[test]
fn go_calls_within_a_package_cross_files_and_structs_implement_interfaces() {
    check(
        r#"
        //- /go.mod
        module example.com/shop
        //- /store/store.go
        package store

        type Store interface {
            Get(key string) string
        }

        func Lookup(s Store, key string) string {
            return normalize(s.Get(key))
        //         ^ calls: store/util.go::normalize (scope, confidence=85)
        //                     ^ calls: store/store.go::Store.Get (scope)
        }
        //- /store/util.go
        package store

        func normalize(v string) string {
            return v
        }
        //- /store/memory.go
        package store

        type Memory struct {
        //   ^ implements: store/store.go::Store (scope, confidence=70)
            data map[string]string
        }

        func (m *Memory) Get(key string) string {
            return m.data[key]
        }
        "#,
    );
}

#[test]
fn rust_crate_paths_modules_and_same_file_calls() {
    check(
        r#"
        //- /crates/core/src/lib.rs
        mod util;
        use crate::util::helper;

        pub fn run() -> u32 {
            helper() + util::other() + local()
        //  ^ calls: crates/core/src/util.rs::helper (import)
        //                   ^ calls: crates/core/src/util.rs::other (qualified)
        //                             ^ calls: crates/core/src/lib.rs::local (scope)
        }

        fn local() -> u32 {
            1
        }
        //- /crates/core/src/util.rs
        pub fn helper() -> u32 {
            1
        }

        pub fn other() -> u32 {
            2
        }

        pub struct Counter;

        impl Counter {
            pub fn bump(&self) -> u32 {
                self.get() + 1
        //           ^ calls: crates/core/src/util.rs::Counter::get (scope)
            }

            fn get(&self) -> u32 {
                0
            }
        }
        "#,
    );
}

/// A unique-name guess in Rust needs a definition the file could see. A name imported
/// from the standard library is never the repository's, even beside an unresolved
/// wildcard; `#[cfg(test)]` code is seen only from test code; an integration test's
/// definitions only from its own crate. The items of an inline module are in scope
/// inside it, before the file's imports.
#[test]
fn rust_unique_name_guesses_see_only_what_the_file_could() {
    check(
        r#"
        //- /crates/search/src/lib.rs
        use std::fs::File;
        use std::collections::HashMap;
        use other_crate::*;

        pub fn open(path: &str) -> File {
        //                         ^ frontier: File (type-use)
            shared(path)
        //  ^ calls: crates/flags/src/defs.rs::shared (unique-name, confidence=50)
        }

        pub fn fixture() -> u32 {
            fixture_value()
        //  ^ calls: crates/flags/src/parse/tests/values.rs::fixture_value (unique-name, confidence=50)
        }

        pub fn table() -> HashMap<u32, u32> {
        //                ^ frontier: HashMap (type-use)
            helper();
        //  ^ frontier: helper (call)
            HashMap::new()
        }

        pub fn later() -> Duration {
        //                ^ !uses-type: tests/json.rs::Duration
            Duration
        }

        #[cfg(test)]
        mod tests {
            use super::*;

            fn symlink() -> u32 {
                use std::os::unix::fs::symlink;
                symlink()
            }

            #[test]
            fn links() {
                symlink();
        //      ^ calls: crates/search/src/lib.rs::tests::symlink (scope)
                helper();
        //      ^ calls: crates/flags/src/defs.rs::helper (unique-name, confidence=50)
            }
        }
        //- /crates/flags/src/defs.rs
        pub struct File;
        pub struct HashMap;

        pub fn shared(path: &str) -> u32 {
            1
        }

        #[cfg(test)]
        pub fn helper() -> u32 {
            2
        }
        //- /crates/flags/src/parse/tests/values.rs
        pub fn fixture_value() -> u32 {
            3
        }
        //- /tests/json.rs
        pub struct Duration;

        fn check() -> Duration {
        //            ^ uses-type: tests/json.rs::Duration (scope)
            Duration
        }
        "#,
    );
}

/// A crate's own `macro_rules!` are in scope without a `use` (`#[macro_use] mod macros;`
/// is not extracted): a bare call of a name one of them defines is theirs, except a name
/// of the standard library's macros defined in another file, or a name the file imports.
#[test]
fn rust_a_crates_own_macros_are_in_scope_without_a_use() {
    check(
        r#"
        //- /Cargo.toml
        [package]
        name = "rt"
        version = "0.1.0"
        edition = "2021"
        //- /src/lib.rs
        #[macro_use]
        mod macros;
        mod user;
        //- /src/macros.rs
        macro_rules! check {
            ($e:expr) => {
                $e
            };
        }

        macro_rules! writeln {
            ($($t:tt)*) => {};
        }

        macro_rules! ready {
            () => {};
        }
        //- /src/user.rs
        use std::future::ready;

        fn run() -> u32 {
            check!(1)
        //  ^ calls: src/macros.rs::check (unique-name)
        }

        fn standard(out: &mut String) {
            writeln!(out, "x");
        //  ^ !calls: src/macros.rs::writeln
        }

        fn imported() {
            ready(());
        //  ^ !calls: src/macros.rs::ready
        }
        "#,
    );
}

/// `super` inside an inline module (`#[cfg(test)] mod tests { use super::*; }`) leaves
/// that module, not the file: it names the file's own items, and only the `super`s left
/// over climb the module tree.
#[test]
fn rust_super_inside_an_inline_module_stays_in_its_file() {
    check(
        r#"
        //- /Cargo.toml
        [package]
        name = "rt"
        version = "0.1.0"
        edition = "2021"
        //- /src/lib.rs
        pub mod a;

        pub fn f() -> u32 {
            0
        }
        //- /src/a.rs
        pub fn f() -> u32 {
            1
        }

        #[cfg(test)]
        mod tests {
            use super::f;
        //             ^ imports: src/a.rs::f (import)

            fn t() -> u32 {
                super::f() + super::super::f()
        //             ^ calls: src/a.rs::f (qualified)
        //                                 ^ calls: src/lib.rs::f (qualified)
            }

            mod deeper {
                use super::super::f;
        //                        ^ imports: src/a.rs::f (import)
            }
        }
        "#,
    );
}

/// A package's `tests/` (likewise `benches/`, `examples/`) is one directory of crate
/// roots and their modules: `tests/common/mod.rs` is `common` to `tests/api.rs`'s `mod
/// common;`, and a test crate rooted at `tests/tests.rs` (`[[test]] path`) names its
/// sibling modules `crate::util`.
#[test]
fn rust_test_crates_name_their_modules_by_path() {
    check(
        r#"
        //- /Cargo.toml
        [package]
        name = "rt"
        version = "0.1.0"
        edition = "2021"

        [[test]]
        name = "integration"
        path = "tests/tests.rs"
        //- /src/lib.rs
        pub fn lib_fn() {}
        //- /tests/tests.rs
        mod util;
        mod misc;
        //- /tests/util.rs
        pub fn helper() -> u32 {
            1
        }
        //- /tests/misc.rs
        use crate::util::helper;
        //                ^ imports: tests/util.rs::helper (import)

        fn uses_it() -> u32 {
            helper()
        //  ^ calls: tests/util.rs::helper (import)
        }
        //- /tests/common/mod.rs
        pub fn setup() -> u32 {
            2
        }
        //- /tests/api.rs
        mod common;

        fn api() -> u32 {
            common::setup()
        //          ^ calls: tests/common/mod.rs::setup (qualified)
        }
        "#,
    );
}

/// Items a crate writes inside item-level macro calls (tokio gates modules with
/// `cfg_rt! { … }`) are definitions like any other, and so are the `use`s there. A
/// module declared `mod task;` is its file when a path goes on through a `use` of it,
/// and a `use` beside a module of the same name (`mod spawn; pub use spawn::spawn;`)
/// brings the function: the two live in different namespaces.
#[test]
fn rust_items_inside_macro_calls_and_modules_imported_by_name() {
    check(
        r#"
        //- /Cargo.toml
        [package]
        name = "rt"
        version = "0.1.0"
        edition = "2021"
        //- /src/lib.rs
        macro_rules! cfg_rt {
            ($($item:item)*) => { $($item)* };
        }

        pub mod task;
        cfg_rt! {
            pub use task::spawn;
        }
        //- /src/task/mod.rs
        cfg_rt! {
            mod spawn;
            pub use spawn::spawn;
        }
        //- /src/task/spawn.rs
        cfg_rt! {
            pub fn spawn() -> u32 {
                inner()
        //      ^ calls: src/task/spawn.rs::inner (scope)
            }
        }

        fn inner() -> u32 {
            1
        }
        //- /tests/it.rs
        use rt::task;

        fn via_crate_root() -> u32 {
            rt::spawn()
        //      ^ calls: src/task/spawn.rs::spawn (qualified)
        }

        fn via_module() -> u32 {
            task::spawn()
        //        ^ calls: src/task/spawn.rs::spawn (import)
        }
        "#,
    );
}
/// A path into another crate of the repository is read by the name its `Cargo.toml`
/// gives the crate (`grep-searcher` is `grep_searcher`, a `[lib] name` wins): `use`,
/// qualified paths through the crate root's re-exports and inline modules, a facade
/// crate's re-exported crates (`pub extern crate a as b;`, `pub use a as b;`), an
/// integration test naming its own library, and a 2015-edition crate's `use` paths from
/// its root (a manifest without `edition`) all bind what the compiler binds, where a
/// name defined in two crates left a unique-name guess nothing to bind. A name imported
/// from a crate the manifests take from a registry (a dependency) is never guessed to be
/// one of its definitions; any other unknown first segment still allows the guess, and
/// so does a name imported as a module (`use a::b` also names a function `b` a macro
/// re-exports). A crate root's `*` brings the macros the crate exports. A
/// package's `main.rs` is not its library; a 2021 package's `use` paths do not start at
/// its root.
#[test]
fn rust_paths_into_another_crate_follow_its_manifest_name() {
    check(
        r#"
        //- /Cargo.toml
        [workspace]
        members = ["crates/*"]
        //- /crates/searcher/Cargo.toml
        [package]
        name = "grep-searcher"
        version = "0.1.0"
        edition = "2021"
        //- /crates/searcher/src/lib.rs
        pub use crate::searcher::Searcher;

        mod searcher;

        pub mod sinks {
            pub fn utf8() -> u32 {
                1
            }
        }
        //- /crates/searcher/src/searcher.rs
        pub struct Searcher;

        impl Searcher {
            pub fn new() -> Searcher {
                Searcher
            }
        }
        //- /crates/searcher/src/macros.rs
        #[macro_export]
        macro_rules! assert_found {
            ($e:expr) => {
                $e
            };
        }
        //- /crates/searcher/tests/glob.rs
        use grep_searcher::*;

        fn found() -> u32 {
            assert_found!(1)
        //  ^ calls: crates/searcher/src/macros.rs::assert_found (import)
        }
        //- /crates/searcher/tests/it.rs
        use grep_searcher::Searcher;
        //                 ^ imports: crates/searcher/src/searcher.rs::Searcher (import)

        fn integration() -> Searcher {
        //                  ^ uses-type: crates/searcher/src/searcher.rs::Searcher (import)
            Searcher::new()
        //            ^ calls: crates/searcher/src/searcher.rs::Searcher::new (import)
        }
        //- /crates/json/Cargo.toml
        [package]
        name = "serde-json-fork"
        edition = "2021"
        [lib]
        name = "json"
        //- /crates/json/src/lib.rs
        pub fn to_string() -> u32 {
            2
        }

        pub struct Searcher;

        pub struct Serialize;

        pub fn only_here() -> u32 {
            4
        }

        mod join;
        cfg_if::cfg_if! {
            if #[cfg(unix)] {
                pub use join::join;
            }
        }

        macro_rules! assert_found {
            ($e:expr) => {
                0
            };
        }
        //- /crates/json/src/join.rs
        pub fn join() -> u32 {
            8
        }
        //- /crates/modern/Cargo.toml
        [package]
        name = "modern"
        edition = "2021"
        //- /crates/modern/src/lib.rs
        mod util;
        mod nested;
        //- /crates/modern/src/util.rs
        pub fn to_string() -> u32 {
            5
        }
        //- /crates/modern/src/nested.rs
        use util::to_string;

        pub fn run() -> u32 {
            to_string()
        //  ^ frontier: to_string (call)
        }
        //- /crates/app/Cargo.toml
        [package]
        name = "app"
        edition = "2021"
        //- /crates/app/src/lib.rs
        pub fn run() -> u32 {
            6
        }
        //- /crates/app/src/main.rs
        fn run() -> u32 {
            7
        }

        fn main() {
            app::run();
        //       ^ calls: crates/app/src/lib.rs::run (qualified)
            run();
        //  ^ calls: crates/app/src/main.rs::run (scope)
        }
        //- /crates/old/Cargo.toml
        [package]
        name = "old-style"
        //- /crates/old/src/lib.rs
        mod util;
        mod nested;
        //- /crates/old/src/util.rs
        pub fn to_string() -> u32 {
            3
        }
        //- /crates/old/src/nested.rs
        use util::to_string;

        pub fn run() -> u32 {
            to_string()
        //  ^ calls: crates/old/src/util.rs::to_string (import)
        }
        //- /crates/grep/Cargo.toml
        [package]
        name = "grep"
        edition = "2021"
        //- /crates/grep/src/lib.rs
        pub extern crate grep_searcher as searcher;
        pub use json as encoding;
        //- /crates/printer/Cargo.toml
        [package]
        name = "grep-printer"
        edition = "2021"

        [dependencies]
        grep-searcher = { path = "../searcher" }
        serde = "1"
        //- /crates/printer/src/lib.rs
        use grep_searcher::Searcher;
        use serde::Serialize;
        use generated::only_here;

        pub fn unknown() -> u32 {
            only_here() + json::join::join() + join()
        //  ^ calls: crates/json/src/lib.rs::only_here (unique-name, confidence=50)
        //                                     ^ calls: crates/json/src/join.rs::join (unique-name, confidence=50)
        }
        use grep::searcher::Searcher as Facade;
        //                  ^ imports: crates/searcher/src/searcher.rs::Searcher (import)
        use json::join;

        pub fn through_the_facade(searcher: &Facade) -> u32 {
        //                                   ^ uses-type: crates/searcher/src/searcher.rs::Searcher (import)
            grep::encoding::to_string()
        //                  ^ calls: crates/json/src/lib.rs::to_string (qualified)
        }

        pub fn print(searcher: &Searcher) -> u32 {
        //                      ^ uses-type: crates/searcher/src/searcher.rs::Searcher (import)
            grep_searcher::sinks::utf8() + json::to_string()
        //                        ^ calls: crates/searcher/src/lib.rs::sinks::utf8 (qualified)
        //                                       ^ calls: crates/json/src/lib.rs::to_string (qualified)
        }

        pub fn fresh() -> grep_searcher::Searcher {
        //                               ^ uses-type: crates/searcher/src/searcher.rs::Searcher (qualified)
            grep_searcher::Searcher::new()
        //                           ^ calls: crates/searcher/src/searcher.rs::Searcher::new (qualified)
        }

        pub fn encode(value: &Serialize) -> u32 {
        //                    ^ frontier: Serialize (type-use)
        //                    ^ !uses-type: crates/json/src/lib.rs::Serialize
            0
        }
        "#,
    );
}

#[test]
fn java_same_package_and_imported_classes() {
    check(
        r#"
        //- /src/main/java/com/acme/Cart.java
        package com.acme;

        public class Cart {
            public int total() {
                return Prices.sum(1, 2);
        //                    ^ calls: src/main/java/com/acme/Prices.java::Prices.sum (scope)
            }
        }
        //- /src/main/java/com/acme/Prices.java
        package com.acme;

        public class Prices {
            public static int sum(int a, int b) {
                return a + b;
            }
        }
        //- /src/main/java/com/acme/app/App.java
        package com.acme.app;

        import com.acme.Cart;

        public class App {
            public int run() {
                Cart cart = new Cart();
        //      ^ uses-type: src/main/java/com/acme/Cart.java::Cart (import)
                return cart.total();
        //                  ^ calls: src/main/java/com/acme/Cart.java::Cart.total (scope)
            }
        }
        "#,
    );
}

// ---------------------------------------------------------------------------------------
// Source roots: Python module names (docs/ARCHITECTURE.md, section `src/resolve.rs`: "Python module
// names come from source roots (the nearest non-package ancestor), so a local `typing.py`
// never captures `import typing`"; docs/QUALITY.md: "`import typing` no longer binds a
// local `typing.py`").

#[test]
fn a_local_typing_module_in_a_package_never_captures_import_typing() {
    // `src/pkg/typing.py` is the module `pkg.typing` (its source root is `src/`, the
    // nearest directory that is not a package), never `typing`.
    check(
        r#"
        //- /src/pkg/__init__.py
        //- /src/pkg/typing.py
        def cast(kind, value):
            return value

        class Alias:
            pass
        //- /src/pkg/app.py
        import typing
        #      ^ !imports: src/pkg/typing.py
        from typing import cast
        #                  ^ !imports: src/pkg/typing.py::cast
        from pkg.typing import Alias
        #                      ^ imports: src/pkg/typing.py::Alias (import)
        from . import typing as local_typing
        #             ^ imports: src/pkg/typing.py (import)

        def run(value: Alias):
            typing.cast(int, value)
        #          ^ frontier: cast (call)
        #          ^ !calls: src/pkg/typing.py::cast
            return local_typing.cast(int, value)
        #                       ^ calls: src/pkg/typing.py::cast (import)
        "#,
    );
}

/// Known gap, pinned so that it stays bounded (and so that a fix shows here): the import
/// `from typing import cast` is rightly not bound to a local `pkg/typing.py`, but an
/// imported name whose module is not in the graph may still fall back to a unique global
/// name, so the call binds `pkg/typing.py::cast` — as a marked guess (unique-name,
/// confidence 50), never as an import.
#[test]
fn a_stdlib_typing_name_reaches_a_local_typing_module_only_as_a_marked_guess() {
    check(
        r#"
        //- /src/pkg/__init__.py
        //- /src/pkg/typing.py
        def cast(kind, value):
            return value
        //- /src/pkg/app.py
        from typing import cast
        #                  ^ !imports: src/pkg/typing.py::cast

        def run(value):
            return cast(int, value)
        #          ^ calls: src/pkg/typing.py::cast (unique-name, confidence=50)
        "#,
    );
}

#[test]
fn a_src_layout_package_is_imported_by_its_name_from_its_source_root() {
    check(
        r#"
        //- /pyproject.toml
        [project]
        name = "acme"
        //- /src/acme/__init__.py
        //- /src/acme/core.py
        def checkout():
            return 1
        //- /tests/test_core.py
        from acme.core import checkout
        #                     ^ imports: src/acme/core.py::checkout (import)
        from acme import core
        import acme.core

        def test_checkout():
            checkout()
        #   ^ calls: src/acme/core.py::checkout (import, confidence=95)
            core.checkout()
        #        ^ calls: src/acme/core.py::checkout (import)
            acme.core.checkout()
        #             ^ calls: src/acme/core.py::checkout (import)
        "#,
    );
}

// ---------------------------------------------------------------------------------------
// Re-exports: `export … from` and `export *` barrels (docs/ARCHITECTURE.md: "re-exports
// (`__init__` imports, `export … from`, `export *`) … are followed").

#[test]
fn typescript_calls_through_export_from_reach_the_original_definition() {
    check(
        r#"
        //- /src/math/add.ts
        export function add(a: number, b: number): number {
          return a + b;
        }
        //- /src/math/index.ts
        export { add, add as plus } from "./add";
        //- /src/main.ts
        import { add, plus } from "./math";
        //       ^ imports: src/math/add.ts::add (import)
        //            ^ imports: src/math/add.ts::add (import)

        export function main(): number {
          return add(1, plus(2, 3));
        //       ^ calls: src/math/add.ts::add (import, confidence=95)
        //              ^ calls: src/math/add.ts::add (import, confidence=95)
        }
        "#,
    );
}

#[test]
fn typescript_export_star_barrels_are_followed_through_two_levels() {
    check(
        r#"
        //- /src/math/mul.ts
        export function mul(a: number, b: number): number {
          return a * b;
        }
        //- /src/math/sub.ts
        export function sub(a: number, b: number): number {
          return a - b;
        }
        //- /src/math/index.ts
        export * from "./mul";
        export * from "./sub.js";
        //- /src/lib.ts
        export * from "./math";
        //- /src/main.ts
        import { mul } from "./math";
        import { sub as minus } from "./lib";
        import * as lib from "./lib";

        export function main(): number {
          return mul(2, minus(3, lib.mul(4, 5)));
        //       ^ calls: src/math/mul.ts::mul (import)
        //              ^ calls: src/math/sub.ts::sub (import)
        //                           ^ calls: src/math/mul.ts::mul (import)
        }
        "#,
    );
}

#[test]
fn python_package_init_re_exports_are_followed() {
    check(
        r#"
        //- /shop/__init__.py
        from .cart import Cart
        //- /shop/cart.py
        class Cart:
            def total(self):
                return 0
        //- /main.py
        from shop import Cart

        def run():
            cart = Cart()
        #          ^ calls: shop/cart.py::Cart (import)
            return cart.total()
        #               ^ calls: shop/cart.py::Cart.total (scope)
        "#,
    );
}

// ---------------------------------------------------------------------------------------
// Workspace packages: a bare specifier naming a package of the repository
// (docs/ARCHITECTURE.md: "workspace packages (bare specifiers) are followed").

#[test]
fn a_bare_specifier_resolves_into_the_workspace_package() {
    // A second `slugify` elsewhere makes a unique-name guess impossible: only the
    // workspace rule can reach `strings.ts`.
    check(
        r#"
        //- /package.json
        {"name": "monorepo", "private": true, "workspaces": ["packages/*"]}
        //- /packages/utils/package.json
        {"name": "@acme/utils", "main": "src/index.ts"}
        //- /packages/utils/src/index.ts
        export * from "./strings";
        //- /packages/utils/src/strings.ts
        export function slugify(text: string): string {
          return text.toLowerCase();
        }
        //- /packages/utils/src/deep/format.ts
        export function pad(text: string): string {
          return text;
        }
        //- /packages/legacy/src/slug.ts
        export function slugify(text: string): string {
          return text;
        }
        //- /packages/app/package.json
        {"name": "@acme/app", "dependencies": {"@acme/utils": "*"}}
        //- /packages/app/src/main.ts
        import { slugify } from "@acme/utils";
        //       ^ imports: packages/utils/src/strings.ts::slugify (import)
        import { pad } from "@acme/utils/deep/format";

        export function title(text: string): string {
          return pad(slugify(text));
        //       ^ calls: packages/utils/src/deep/format.ts::pad (import)
        //           ^ calls: packages/utils/src/strings.ts::slugify (import, confidence=95)
        }
        "#,
    );
}

/// Known gap, pinned so that it stays bounded (and so that a fix shows here): workspace
/// packages are found by their directory's name, not the `name` in their package.json, so
/// `@acme/strings` in `packages/string-utils/` is not followed; the call binds only as a
/// marked guess (unique-name, confidence 50).
#[test]
fn a_workspace_package_named_only_in_its_package_json_binds_only_as_a_marked_guess() {
    check(
        r#"
        //- /package.json
        {"name": "monorepo", "private": true, "workspaces": ["packages/*"]}
        //- /packages/string-utils/package.json
        {"name": "@acme/strings"}
        //- /packages/string-utils/src/index.ts
        export function shout(text: string): string {
          return text.toUpperCase();
        }
        //- /packages/app/src/main.ts
        import { shout } from "@acme/strings";
        //       ^ !imports: packages/string-utils/src/index.ts::shout

        export function title(text: string): string {
          return shout(text);
        //       ^ calls: packages/string-utils/src/index.ts::shout (unique-name, confidence=50)
        }
        "#,
    );
}

#[test]
fn a_go_import_path_resolves_to_the_package_directory_of_the_module() {
    check(
        r#"
        //- /go.mod
        module example.com/shop
        //- /internal/price/price.go
        package price

        func Total(xs []int) int {
            return len(xs)
        }
        //- /cmd/shop/main.go
        package main

        import "example.com/shop/internal/price"

        func main() {
            price.Total(nil)
        //        ^ calls: internal/price/price.go::Total (import)
        }
        "#,
    );
}

#[test]
fn a_go_import_path_takes_the_longest_directory_it_ends_with() {
    // `price` and `internal/price` both end the import path at a `/`; the longer one is
    // the package. (`go_package` looks suffixes up longest first.)
    check(
        r#"
        //- /go.mod
        module example.com/shop
        //- /price/price.go
        package price

        func Total(xs []int) int {
            return 0
        }
        //- /internal/price/price.go
        package price

        func Total(xs []int) int {
            return len(xs)
        }
        //- /cmd/shop/main.go
        package main

        import "example.com/shop/internal/price"

        func main() {
            price.Total(nil)
        //        ^ calls: internal/price/price.go::Total (import)
        }
        "#,
    );
}

// ---------------------------------------------------------------------------------------
// Known receivers are decisive (docs/ARCHITECTURE.md: "a receiver that is a known local or
// an import is decisive — an unknown member on it is frontier, never a guess").

#[test]
fn python_unknown_member_on_a_known_receiver_is_frontier_not_a_guess() {
    // `Ledger.missing` is the only `missing` in the graph, in the caller's own file: a
    // receiver of unknown type does bind it by unique name (the last call), a receiver
    // whose type is known never does.
    check(
        r#"
        //- /shop.py
        class Cart:
            def total(self):
                return 0

        class Ledger:
            def missing(self):
                return 0

        def checkout(annotated: Cart):
            cart = Cart()
            cart.total()
        #        ^ calls: shop.py::Cart.total (scope, confidence=80)
            cart.missing()
        #        ^ frontier: missing (call, candidates=1, from=shop.py::checkout)
        #        ^ !calls: shop.py::Ledger.missing
            annotated.missing()
        #             ^ frontier: missing (call)
            helper().missing()
        #            ^ calls: shop.py::Ledger.missing (unique-name, confidence=45)
        "#,
    );
}

#[test]
fn typescript_unknown_member_on_an_instance_or_an_imported_module_is_frontier() {
    check(
        r#"
        //- /src/cart.ts
        export class Cart {
          total(): number {
            return 0;
          }
        }
        //- /src/ledger.ts
        export class Ledger {
          missing(): number {
            return 0;
          }
        }
        export function nothing(): void {}
        //- /src/main.ts
        import * as cart from "./cart";
        import { Cart } from "./cart";
        import { Ledger } from "./ledger";

        export function run(ledger: Ledger): number {
          const c = new Cart();
          c.missing();
        //  ^ frontier: missing (call, candidates=1)
          cart.nothing();
        //     ^ frontier: nothing (call)
          ledger.missing();
        //       ^ calls: src/ledger.ts::Ledger.missing (scope)
          return c.total();
        //         ^ calls: src/cart.ts::Cart.total (scope)
        }
        "#,
    );
}
