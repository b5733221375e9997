//! Resolution: from per-file facts to a symbol/edge graph (R-RES-1..3).
//!
//! Each reference is tried in the order the spec fixes: local scope and same file; names
//! brought in by imports (following the import to its target file); `self`/`this`
//! receivers to the enclosing type; qualified paths; a unique global name. Anything else
//! becomes an unresolved frontier entry with its number of candidate definitions: a
//! guessed edge is never emitted. Every edge carries provenance, resolution and confidence.
//!
//! Node numbering is deterministic: module (directory) nodes sorted by path, then for each
//! file in path order its file node followed by its definitions in source order.

use std::collections::BTreeMap;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::build::scip::ScipFacts;
use crate::syntax::extract::{collection_items, first_of_tuple};
use crate::syntax::facts::{FileFacts, Import, RefRole, Reference, Span, SymbolKind, Visibility};

pub mod merge_scip;
use crate::graph::codes::{EdgeKind, EdgeSubkind, Provenance, Resolution};
use crate::syntax::lang::Language;

/// Bumped whenever resolution output changes for the same facts; part of the fingerprint.
pub const RESOLVER_VERSION: u32 = 4;

/// One inventoried file as resolution sees it.
pub struct SourceUnit<'a> {
    pub path: &'a str,
    pub language: Option<Language>,
    pub facts: Option<&'a FileFacts>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedNode {
    pub kind: SymbolKind,
    pub name: String,
    pub qualified: String,
    pub file: Option<u32>,
    pub span: Span,
    pub signature: Span,
    pub doc: Option<Span>,
    pub parent: Option<u32>,
    pub visibility: Visibility,
    pub in_test_scope: bool,
    /// A callable that only declares what overrides define (`facts::Definition`).
    pub declares_only: bool,
    /// The SCIP symbol string, when a SCIP index defines this symbol.
    pub scip_symbol: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Site {
    pub file: u32,
    pub span: SpanKey,
}

/// `Span` with an ordering, for sorting and dedup of sites.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SpanKey {
    pub start_byte: u32,
    pub end_byte: u32,
    pub start_line: u32,
    pub end_line: u32,
}

impl From<Span> for SpanKey {
    fn from(s: Span) -> Self {
        SpanKey {
            start_byte: s.start_byte,
            end_byte: s.end_byte,
            start_line: s.start_line,
            end_line: s.end_line,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResolvedEdge {
    pub from: u32,
    pub to: u32,
    pub kind: EdgeKind,
    pub subkind: EdgeSubkind,
    pub provenance: Provenance,
    pub resolution: Resolution,
    pub confidence: u8,
    pub site: Option<Site>,
    /// `facts::site` bits of the call at `site` (0 for other edges).
    pub flags: u8,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontierEntry {
    pub name: String,
    pub role: RefRole,
    pub from: u32,
    pub file: u32,
    pub site: Span,
    /// Definitions in the graph that share the name (0: external or unknown).
    pub candidates: u32,
}

#[derive(Debug, Default)]
pub struct Resolved {
    pub nodes: Vec<ResolvedNode>,
    /// Sorted and deduplicated.
    pub edges: Vec<ResolvedEdge>,
    pub frontier: Vec<FrontierEntry>,
    /// Node id of each file (index = file index).
    pub file_nodes: Vec<u32>,
    /// Module node id of each file.
    pub file_modules: Vec<u32>,
    /// What SCIP contributed, when an index was ingested.
    pub scip: Option<merge_scip::ScipMerge>,
    /// Unresolved references not kept in the frontier: type uses of names defined nowhere
    /// in the graph, and reads/writes (counted, not kept).
    pub external_references: u64,
}

#[derive(Clone, Debug)]
enum Target {
    Symbol(u32),
    Files(Vec<u32>),
}

#[derive(Default)]
struct FileResolution {
    edges: Vec<ResolvedEdge>,
    frontier: Vec<FrontierEntry>,
    external_references: u64,
}

/// A field's (declared type, initializer, file).
/// A field's binding and the file it is declared in.
type FieldType<'a> = (&'a crate::syntax::facts::TypeBinding, u32);

/// A file's type bindings by (scope definition, name).
/// A file's bindings by (scope, name), in source order: a name rebound or narrowed
/// (`if isinstance(x, T)`) takes the binding before its use.
type Locals<'a> = HashMap<(Option<u32>, &'a str), Vec<&'a crate::syntax::facts::TypeBinding>>;

/// The binding of `name` visible at byte `at` from `scope` outwards: the last one before
/// `at` in the innermost scope that binds the name, else that scope's first.
fn local_binding<'a>(
    locals: &Locals<'a>,
    facts: &FileFacts,
    mut scope: Option<u32>,
    name: &str,
    at: u32,
) -> Option<&'a crate::syntax::facts::TypeBinding> {
    loop {
        if let Some(list) = locals.get(&(scope, name)) {
            return list
                .iter()
                .rev()
                .find(|b| b.site.start_byte < at)
                .or(list.first())
                .copied();
        }
        scope = facts.defs.get(scope? as usize)?.parent;
    }
}

thread_local! {
    /// How deep typing a receiver has recursed (a value typed by a call whose receiver is
    /// typed by a call …): bounded, so that cycles end.
    static TYPING_DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Typing depth held while a receiver is typed; `None` beyond the bound.
struct DepthGuard;

impl DepthGuard {
    const MAX: u32 = 6;

    fn enter() -> Option<DepthGuard> {
        let depth = TYPING_DEPTH.get();
        if depth >= Self::MAX {
            return None;
        }
        TYPING_DEPTH.set(depth + 1);
        Some(DepthGuard)
    }
}

impl Drop for DepthGuard {
    fn drop(&mut self) {
        TYPING_DEPTH.set(TYPING_DEPTH.get().saturating_sub(1));
    }
}

/// A value's text without what does not change its type: `await`, `new`, a trailing `?`,
/// `.await`, `!`, `.unwrap()`, `.expect(…)`, `.clone()`.
fn strip_value_noise(text: &str) -> &str {
    let mut t = text.trim();
    loop {
        let before = t;
        for prefix in ["await ", "new ", "yield ", "&mut ", "&", "*"] {
            t = t.strip_prefix(prefix).unwrap_or(t).trim_start();
        }
        t = t.trim_end_matches(['?', '!', ';']).trim_end();
        for suffix in [".await", ".unwrap()", ".clone()", ".to_owned()"] {
            t = t.strip_suffix(suffix).unwrap_or(t);
        }
        if t.ends_with(')')
            && let Some(callee) = callee_of(t)
            && (callee.ends_with(".expect") || callee.ends_with(".unwrap_or_default"))
        {
            t = &callee[..callee.rfind('.').unwrap_or(callee.len())];
        }
        if t == before {
            return t;
        }
    }
}

/// Calls whose result holds the items of their argument.
const ITEM_PRESERVING: &[&str] = &[
    "list",
    "tuple",
    "sorted",
    "reversed",
    "set",
    "frozenset",
    "iter",
    "Array.from",
];

/// The alternatives of a conditional value, literals dropped: `a if c else b`, `a or b`,
/// `c ? a : b`, `a ?? b`, `a || b` (top level only); the value itself otherwise.
fn value_branches(text: &str) -> Vec<&str> {
    let literal = |t: &str| {
        matches!(
            t.trim(),
            "None" | "null" | "undefined" | "[]" | "{}" | "()" | "\"\"" | "''" | "0" | "false"
        )
    };
    let top_level = |needle: &str| -> Option<usize> {
        let mut depth = 0i32;
        let bytes = text.as_bytes();
        for (at, &b) in bytes.iter().enumerate() {
            match b {
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth -= 1,
                _ if depth == 0 && bytes[at..].starts_with(needle.as_bytes()) => return Some(at),
                _ => {}
            }
        }
        None
    };
    let mut parts: Vec<&str> = Vec::new();
    if let (Some(at_if), Some(at_else)) = (top_level(" if "), top_level(" else ")) {
        if at_if < at_else {
            parts.push(&text[..at_if]);
            parts.push(&text[at_else + 6..]);
        }
    } else if let (Some(at_q), Some(at_colon)) = (top_level(" ? "), top_level(" : ")) {
        if at_q < at_colon {
            parts.push(&text[at_q + 3..at_colon]);
            parts.push(&text[at_colon + 3..]);
        }
    } else {
        for op in [" or ", " ?? ", " || "] {
            if let Some(at) = top_level(op) {
                parts.push(&text[..at]);
                parts.push(&text[at + op.len()..]);
                break;
            }
        }
    }
    if parts.is_empty() {
        return vec![text];
    }
    parts
        .into_iter()
        .map(str::trim)
        .filter(|p| !literal(p))
        .collect()
}

/// The type a value is asserted or cast to: Go `x.(*T)`, TypeScript `x as T`, Python
/// `cast(T, x)`.
fn asserted_type(text: &str) -> Option<&str> {
    let t = text.trim();
    if let Some(inner) = t.strip_suffix(')')
        && let Some(open) = inner.rfind(".(")
        && !inner[open + 2..].contains(['(', ')'])
    {
        return Some(inner[open + 2..].trim().trim_start_matches('*'));
    }
    if let Some((_, ty)) = t.rsplit_once(" as ")
        && ty.trim() != "const"
        && !ty.contains(['(', ')', ' '])
    {
        return Some(ty.trim().trim_start_matches('*'));
    }
    let callee = callee_of(t)?;
    if callee == "cast" || callee == "typing.cast" || callee == "t.cast" {
        let args = arguments_of(t)?;
        let first = first_of_tuple(args).trim_matches(['"', '\'']);
        return (!first.is_empty()).then_some(first);
    }
    None
}

fn is_call_text(text: &str) -> bool {
    text.ends_with(')') && callee_of(text).is_some()
}

/// The argument list of a call expression's text, without its parentheses.
fn arguments_of(text: &str) -> Option<&str> {
    let inner = text.strip_suffix(')')?;
    let mut depth = 0i32;
    for (at, c) in inner.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' if depth == 0 => return Some(&inner[at + 1..]),
            '(' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The callee of a call expression's text: everything before its argument list (and
/// before a generic argument list: `f::<T>(x)`, `f<T>(x)`).
fn callee_of(text: &str) -> Option<&str> {
    let bytes = text.as_bytes();
    if bytes.last() != Some(&b')') {
        return None;
    }
    let mut depth = 0i32;
    for (at, &b) in bytes.iter().enumerate().rev() {
        match b {
            b')' => depth += 1,
            b'(' => {
                depth -= 1;
                if depth == 0 {
                    let mut callee = text[..at].trim_end();
                    if callee.ends_with('>')
                        && let Some(open) = callee.rfind('<')
                    {
                        callee = callee[..open].trim_end_matches("::");
                    }
                    return (!callee.is_empty()).then_some(callee);
                }
            }
            _ => {}
        }
    }
    None
}

/// What a file's imports bring into scope.
struct FileImports {
    bindings: HashMap<String, Target>,
    /// Files whose top-level names are all visible (`from m import *`, `use m::*`).
    wildcards: Vec<u32>,
    /// Names imported from modules that are not in the graph (or not found in it).
    unresolved: HashSet<String>,
    /// A wildcard import whose module is not in the graph.
    unresolved_wildcard: bool,
    /// (target node, import site) for `imports` edges.
    edges: Vec<(u32, Span)>,
}

struct Outcome {
    target: u32,
    resolution: Resolution,
    confidence: u8,
}

/// Resolves all files. `units` must be sorted by path.
pub fn resolve(units: &[SourceUnit], scip: Option<&ScipFacts>) -> Resolved {
    let mut resolver = Resolver::new(units);
    resolver.build_nodes();
    resolver.build_indexes();
    resolver.resolve_all();
    resolver.go_implementations();
    if let Some(scip) = scip {
        resolver.merge_scip(scip);
    }
    resolver.finish()
}

/// Heuristic (tree-sitter) edges compared with the precise edges of a SCIP index at the
/// same sites (R-RES-4).
pub fn evaluate_against_scip(units: &[SourceUnit], scip: &ScipFacts) -> merge_scip::EdgeEvaluation {
    let mut resolver = Resolver::new(units);
    resolver.build_nodes();
    resolver.build_indexes();
    resolver.resolve_all();
    resolver.evaluate(scip)
}

struct Resolver<'a> {
    units: &'a [SourceUnit<'a>],
    out: Resolved,
    /// First node id of each file's definitions (def i of file f is `def_base[f] + i`).
    def_base: Vec<u32>,
    by_name: HashMap<&'a str, Vec<u32>>,
    by_qualified: HashMap<&'a str, Vec<u32>>,
    /// (type member scope, member name) → member nodes.
    members: HashMap<(&'a str, &'a str), Vec<u32>>,
    /// (type member scope, field name) → (declared type, initializer, file): the types of
    /// `self.x` / `this.x` / fields.
    field_types: HashMap<(&'a str, &'a str), FieldType<'a>>,
    /// Each file's bindings by (scope, name), built on first use.
    locals: Vec<std::sync::OnceLock<Locals<'a>>>,
    /// (parent node, name) → nested definitions, for local-scope lookups.
    children: HashMap<(u32, &'a str), Vec<u32>>,
    /// Top-level definitions of each file by name.
    top_level: Vec<HashMap<&'a str, Vec<u32>>>,
    file_by_path: HashMap<&'a str, u32>,
    dir_files: HashMap<&'a str, Vec<u32>>,
    /// Package directory name → directories holding a `package.json` of that name.
    package_dirs: HashMap<&'a str, Vec<&'a str>>,
    dotted_full: HashMap<String, Vec<u32>>,
    dotted_suffix: HashMap<String, Vec<u32>>,
    packages: HashMap<&'a str, Vec<u32>>,
    rust_modules: HashMap<(String, String), u32>,
    bindings: Vec<HashMap<String, Target>>,
    wildcards: Vec<Vec<u32>>,
    /// Per file: names bound by imports that did not resolve, and whether a wildcard
    /// import did not resolve. Only such names may fall back to a unique global name.
    opaque_imports: Vec<(HashSet<String>, bool)>,
    edges: HashSet<ResolvedEdge>,
}

/// A directory holding an `__init__.py` (or `.pyi`).
fn is_python_package(files: &HashMap<&str, u32>, dir: &str) -> bool {
    files.contains_key(format!("{dir}/__init__.py").as_str())
        || files.contains_key(format!("{dir}/__init__.pyi").as_str())
}

fn dir_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

fn strip_ext(path: &str) -> &str {
    let name_start = path.rfind('/').map_or(0, |i| i + 1);
    match path[name_start..].find('.') {
        Some(i) => &path[..name_start + i],
        None => path,
    }
}

/// Rust: (crate root dir, module path) of a file.
fn rust_module_of(path: &str) -> (String, String) {
    let segments: Vec<&str> = path.split('/').collect();
    let Some(src) = segments.iter().rposition(|s| *s == "src") else {
        return (dir_of(path).to_string(), String::new());
    };
    let crate_root = segments[..=src].join("/");
    let mut module: Vec<&str> = segments[src + 1..].to_vec();
    if let Some(last) = module.pop() {
        let stem = strip_ext(last);
        if !matches!(stem, "lib" | "main" | "mod") {
            module.push(stem);
        }
    }
    (crate_root, module.join("::"))
}

impl<'a> Resolver<'a> {
    fn new(units: &'a [SourceUnit<'a>]) -> Self {
        Resolver {
            units,
            out: Resolved::default(),
            def_base: Vec::new(),
            by_name: HashMap::default(),
            by_qualified: HashMap::default(),
            members: HashMap::default(),
            field_types: HashMap::default(),
            locals: (0..units.len())
                .map(|_| std::sync::OnceLock::new())
                .collect(),
            children: HashMap::default(),
            top_level: Vec::new(),
            file_by_path: HashMap::default(),
            dir_files: HashMap::default(),
            package_dirs: HashMap::default(),
            dotted_full: HashMap::default(),
            dotted_suffix: HashMap::default(),
            packages: HashMap::default(),
            rust_modules: HashMap::default(),
            bindings: Vec::new(),
            wildcards: Vec::new(),
            opaque_imports: Vec::new(),
            edges: HashSet::default(),
        }
    }

    fn facts(&self, file: u32) -> Option<&'a FileFacts> {
        self.units[file as usize].facts
    }

    fn language(&self, file: u32) -> Option<Language> {
        self.units[file as usize].language
    }

    fn build_nodes(&mut self) {
        // Modules: every directory holding a file, plus the root.
        let mut dirs: BTreeMap<&str, u32> = BTreeMap::new();
        dirs.insert("", 0);
        for unit in self.units {
            let mut dir = dir_of(unit.path);
            loop {
                dirs.insert(dir, 0);
                if dir.is_empty() {
                    break;
                }
                dir = dir_of(dir);
            }
        }
        for (index, (dir, id)) in dirs.iter_mut().enumerate() {
            *id = index as u32;
            let name = if dir.is_empty() { "." } else { *dir };
            self.out.nodes.push(ResolvedNode {
                kind: SymbolKind::Module,
                name: crate::syntax::facts::last_segment(name).to_string(),
                qualified: name.to_string(),
                file: None,
                span: Span::default(),
                signature: Span::default(),
                doc: None,
                parent: None,
                visibility: Visibility::Public,
                in_test_scope: false,
                declares_only: false,
                scip_symbol: None,
            });
        }
        for (dir, &id) in &dirs {
            if !dir.is_empty() {
                let parent = dirs[dir_of(dir)];
                self.out.nodes[id as usize].parent = Some(parent);
                self.contains(parent, id);
            }
        }
        for (file, unit) in self.units.iter().enumerate() {
            let file = file as u32;
            let file_node = self.out.nodes.len() as u32;
            let module = dirs[dir_of(unit.path)];
            let name = unit.path.rsplit_once('/').map_or(unit.path, |(_, n)| n);
            self.out.nodes.push(ResolvedNode {
                kind: SymbolKind::File,
                name: name.to_string(),
                qualified: unit.path.to_string(),
                file: Some(file),
                span: Span::default(),
                signature: Span::default(),
                doc: None,
                parent: Some(module),
                visibility: Visibility::Public,
                in_test_scope: false,
                declares_only: false,
                scip_symbol: None,
            });
            self.out.file_nodes.push(file_node);
            self.out.file_modules.push(module);
            self.contains(module, file_node);
            let base = file_node + 1;
            self.def_base.push(base);
            if let Some(facts) = unit.facts {
                for (i, def) in facts.defs.iter().enumerate() {
                    let id = base + i as u32;
                    let parent = def.parent.map(|p| base + p).unwrap_or(file_node);
                    self.out.nodes.push(ResolvedNode {
                        kind: def.kind,
                        name: def.name.clone(),
                        qualified: def.qualified.clone(),
                        file: Some(file),
                        span: def.span,
                        signature: def.signature,
                        doc: def.doc,
                        parent: Some(parent),
                        visibility: def.visibility,
                        in_test_scope: def.in_test_scope,
                        declares_only: def.declares_only,
                        scip_symbol: None,
                    });
                    self.contains(parent, id);
                }
            }
        }
    }

    fn contains(&mut self, from: u32, to: u32) {
        self.edges.insert(ResolvedEdge {
            from,
            to,
            kind: EdgeKind::Contains,
            subkind: EdgeSubkind::None,
            provenance: Provenance::TreeSitter,
            resolution: Resolution::Scope,
            confidence: 100,
            site: None,
            flags: 0,
        });
    }

    fn build_indexes(&mut self) {
        let units = self.units;
        self.top_level = vec![HashMap::default(); units.len()];
        for (file, unit) in units.iter().enumerate() {
            self.file_by_path.insert(unit.path, file as u32);
            if unit.path == "package.json" || unit.path.ends_with("/package.json") {
                let dir = dir_of(unit.path);
                let name = dir.rsplit('/').next().unwrap_or(dir);
                self.package_dirs.entry(name).or_default().push(dir);
            }
        }
        for (file, unit) in units.iter().enumerate() {
            let f = file as u32;
            self.dir_files.entry(dir_of(unit.path)).or_default().push(f);
            let Some(language) = unit.language else {
                continue;
            };
            match language {
                Language::Python => {
                    // A module's name is its path from its source root: the nearest
                    // ancestor directory that is not a package (`src/flask/app.py` →
                    // `flask.app`). Arbitrary path suffixes are not module names — a
                    // local `typing.py` must not capture `import typing`.
                    let stem = strip_ext(unit.path);
                    let stem = stem.strip_suffix("/__init__").unwrap_or(stem);
                    let mut root = dir_of(unit.path);
                    while !root.is_empty() && is_python_package(&self.file_by_path, root) {
                        root = dir_of(root);
                    }
                    let relative = if root.is_empty() {
                        stem
                    } else {
                        &stem[root.len() + 1..]
                    };
                    self.dotted_full
                        .entry(stem.replace('/', "."))
                        .or_default()
                        .push(f);
                    if relative != stem && !relative.is_empty() {
                        self.dotted_full
                            .entry(relative.replace('/', "."))
                            .or_default()
                            .push(f);
                    }
                }
                Language::Java => {
                    let stem = strip_ext(unit.path);
                    let dotted = stem.replace('/', ".");
                    self.dotted_full.entry(dotted.clone()).or_default().push(f);
                    let mut rest = dotted.as_str();
                    while let Some((_, tail)) = rest.split_once('.') {
                        self.dotted_suffix
                            .entry(tail.to_string())
                            .or_default()
                            .push(f);
                        rest = tail;
                    }
                }
                Language::Rust => {
                    self.rust_modules.insert(rust_module_of(unit.path), f);
                }
                _ => {}
            }
            let Some(facts) = unit.facts else { continue };
            if let Some(package) = &facts.package {
                self.packages.entry(package.as_str()).or_default().push(f);
            }
            for binding in &facts.bindings {
                let Some(scope) = binding.scope else { continue };
                let owner = &facts.defs[scope as usize];
                if !owner.kind.is_type_container()
                    || (binding.type_name.is_none()
                        && binding.initializer.is_none()
                        && binding.value.is_none())
                {
                    continue;
                }
                let name = binding
                    .name
                    .strip_prefix("self.")
                    .or_else(|| binding.name.strip_prefix("this."))
                    .unwrap_or(&binding.name);
                self.field_types
                    .entry((owner.member_scope.as_str(), name))
                    .or_insert((binding, f));
            }
            let base = self.def_base[file];
            for (i, def) in facts.defs.iter().enumerate() {
                let id = base + i as u32;
                self.by_name.entry(def.name.as_str()).or_default().push(id);
                self.by_qualified
                    .entry(def.qualified.as_str())
                    .or_default()
                    .push(id);
                match def.parent {
                    None => self.top_level[file]
                        .entry(def.name.as_str())
                        .or_default()
                        .push(id),
                    Some(p) => {
                        if def.kind != SymbolKind::Impl {
                            self.children
                                .entry((base + p, def.name.as_str()))
                                .or_default()
                                .push(id);
                        }
                        let parent = &facts.defs[p as usize];
                        if parent.kind.is_type_container() {
                            self.members
                                .entry((parent.member_scope.as_str(), def.name.as_str()))
                                .or_default()
                                .push(id);
                        }
                    }
                }
                // Go methods are declared outside their type but belong to it.
                if def.parent.is_some()
                    && language == Language::Go
                    && def.kind == SymbolKind::Method
                    && let Some((scope, _)) = def.qualified.rsplit_once('.')
                {
                    let scope: &'a str = scope;
                    let list = self.members.entry((scope, def.name.as_str())).or_default();
                    if !list.contains(&id) {
                        list.push(id);
                    }
                }
            }
        }
        // Imports are bound in passes so that re-exports (`from .app import Flask` in a
        // package `__init__`, `pub use`) resolve for their importers: each pass sees the
        // previous pass's bindings. Three passes follow re-export chains two deep.
        const PASSES: usize = 3;
        let files = units.len() as u32;
        for pass in 0..PASSES {
            let results: Vec<FileImports> =
                (0..files).map(|file| self.bind_imports(file)).collect();
            self.bindings.clear();
            self.wildcards.clear();
            self.opaque_imports.clear();
            for (file, imports) in results.into_iter().enumerate() {
                let file = file as u32;
                if pass + 1 == PASSES {
                    for (target, site) in &imports.edges {
                        let from = self.out.file_nodes[file as usize];
                        self.edges.insert(ResolvedEdge {
                            from,
                            to: *target,
                            kind: EdgeKind::Imports,
                            subkind: EdgeSubkind::None,
                            provenance: Provenance::TreeSitter,
                            resolution: Resolution::Import,
                            confidence: 95,
                            site: Some(Site {
                                file,
                                span: (*site).into(),
                            }),
                            flags: 0,
                        });
                    }
                }
                self.opaque_imports
                    .push((imports.unresolved, imports.unresolved_wildcard));
                self.bindings.push(imports.bindings);
                self.wildcards.push(imports.wildcards);
            }
        }
    }

    /// A name a file defines at top level or re-exports through an import, including
    /// wildcard re-exports (`export * from "./x"`, `from .x import *`) a few levels deep.
    fn exported(&self, file: u32, name: &str) -> Option<u32> {
        self.exported_at_depth(file, name, 0)
    }

    fn exported_at_depth(&self, file: u32, name: &str, depth: u32) -> Option<u32> {
        if let Some(ids) = self.top_level[file as usize].get(name) {
            return ids.first().map(|&id| self.implementation_of(id, ids));
        }
        if let Some(Target::Symbol(id)) = self.bindings.get(file as usize).and_then(|b| b.get(name))
        {
            return Some(*id);
        }
        if depth >= 4 {
            return None;
        }
        self.wildcards
            .get(file as usize)?
            .iter()
            .filter(|&&f| f != file)
            .find_map(|&f| self.exported_at_depth(f, name, depth + 1))
    }

    /// Files a module text names, seen from `file`.
    fn module_files(&self, file: u32, module: &str) -> Vec<u32> {
        let unit = &self.units[file as usize];
        let Some(language) = unit.language else {
            return Vec::new();
        };
        match language {
            Language::Python => self.python_module(unit.path, module),
            Language::Java => match self.packages.get(module) {
                Some(files) => files.clone(),
                None => self.dotted(module),
            },
            Language::TypeScript | Language::Tsx | Language::JavaScript => {
                self.script_module(unit.path, module).into_iter().collect()
            }
            Language::Go => self.go_package(module),
            Language::Rust => self.rust_module(unit.path, module).into_iter().collect(),
        }
    }

    fn dotted(&self, dotted: &str) -> Vec<u32> {
        if let Some(files) = self.dotted_full.get(dotted) {
            return files.clone();
        }
        match self.dotted_suffix.get(dotted) {
            Some(files) if files.len() == 1 => files.clone(),
            _ => Vec::new(),
        }
    }

    fn python_module(&self, from_path: &str, module: &str) -> Vec<u32> {
        let dots = module.chars().take_while(|c| *c == '.').count();
        if dots == 0 {
            return self.dotted(module);
        }
        let mut package: Vec<&str> = dir_of(from_path)
            .split('/')
            .filter(|s| !s.is_empty())
            .collect();
        for _ in 1..dots {
            package.pop();
        }
        let rest = &module[dots..];
        let mut parts: Vec<&str> = package;
        if !rest.is_empty() {
            parts.extend(rest.split('.'));
        }
        let dotted = parts.join(".");
        self.dotted_full.get(&dotted).cloned().unwrap_or_default()
    }

    fn script_module(&self, from_path: &str, spec: &str) -> Option<u32> {
        if !spec.starts_with('.') {
            return self.workspace_package(spec);
        }
        let mut parts: Vec<&str> = dir_of(from_path)
            .split('/')
            .filter(|s| !s.is_empty())
            .collect();
        for part in spec.split('/') {
            match part {
                "." | "" => {}
                ".." => {
                    parts.pop()?;
                }
                other => parts.push(other),
            }
        }
        self.script_path(&parts.join("/"))
    }

    /// A file for a module path without extension, or a directory's index.
    fn script_path(&self, base: &str) -> Option<u32> {
        let stripped = ["js", "jsx", "mjs", "cjs"]
            .iter()
            .find_map(|e| base.strip_suffix(&format!(".{e}")));
        const EXTENSIONS: &[&str] = &["", ".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs"];
        for candidate in [Some(base), stripped].into_iter().flatten() {
            for ext in EXTENSIONS {
                if let Some(&f) = self.file_by_path.get(format!("{candidate}{ext}").as_str()) {
                    return Some(f);
                }
            }
            for ext in &EXTENSIONS[1..] {
                if let Some(&f) = self
                    .file_by_path
                    .get(format!("{candidate}/index{ext}").as_str())
                {
                    return Some(f);
                }
            }
        }
        None
    }

    /// A bare specifier (`zod`, `zod/v4`, `@scope/pkg/sub`) naming a package of this
    /// workspace: a directory with a `package.json` whose name is the package's last
    /// segment, resolved to its sources (`<dir>/src/<sub>`, `<dir>/<sub>`, index files).
    fn workspace_package(&self, spec: &str) -> Option<u32> {
        let mut segments = spec.split('/');
        let first = segments.next()?;
        let name = if first.starts_with('@') {
            segments.next()?
        } else {
            first
        };
        let rest: Vec<&str> = segments.collect();
        let rest = rest.join("/");
        // Monorepo layouts whose package.json is ignored or absent.
        let conventional = [
            format!("packages/{name}"),
            format!("libs/{name}"),
            name.to_string(),
        ];
        let dirs: Vec<&str> = match self.package_dirs.get(name) {
            Some(dirs) => dirs.clone(),
            None => conventional.iter().map(String::as_str).collect(),
        };
        for dir in dirs {
            let prefix = if dir.is_empty() {
                String::new()
            } else {
                format!("{dir}/")
            };
            let candidates = if rest.is_empty() {
                vec![format!("{prefix}src/index"), format!("{prefix}index")]
            } else {
                vec![format!("{prefix}src/{rest}"), format!("{prefix}{rest}")]
            };
            if let Some(f) = candidates.iter().find_map(|c| self.script_path(c)) {
                return Some(f);
            }
        }
        None
    }

    fn go_package(&self, import_path: &str) -> Vec<u32> {
        // The longest directory that is a suffix of the import path.
        let mut best: Option<(&str, &Vec<u32>)> = None;
        for (dir, files) in &self.dir_files {
            if dir.is_empty() {
                continue;
            }
            let matches = import_path == *dir || import_path.ends_with(&format!("/{dir}"));
            if matches && best.is_none_or(|(b, _)| dir.len() > b.len()) {
                best = Some((dir, files));
            }
        }
        best.map(|(_, files)| {
            files
                .iter()
                .copied()
                .filter(|&f| self.language(f) == Some(Language::Go))
                .collect()
        })
        .unwrap_or_default()
    }

    fn rust_module(&self, from_path: &str, path: &str) -> Option<u32> {
        let (crate_root, current) = rust_module_of(from_path);
        let mut segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
        let mut base: Vec<String> = Vec::new();
        match segments.first().copied() {
            Some("crate") => {
                segments.remove(0);
            }
            Some("self") => {
                segments.remove(0);
                base = current
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect();
            }
            Some("super") => {
                base = current
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect();
                while segments.first() == Some(&"super") {
                    segments.remove(0);
                    base.pop();
                }
            }
            _ => {
                // A path relative to the current module (Rust 2018 allows `use sibling::x`
                // only for crates, but `mod` children resolve this way).
                base = current
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect();
                let mut relative = base.clone();
                relative.extend(segments.iter().map(|s| s.to_string()));
                if let Some(&f) = self
                    .rust_modules
                    .get(&(crate_root.clone(), relative.join("::")))
                {
                    return Some(f);
                }
                return None;
            }
        }
        base.extend(segments.iter().map(|s| s.to_string()));
        self.rust_modules
            .get(&(crate_root, base.join("::")))
            .copied()
    }

    fn bind_imports(&self, file: u32) -> FileImports {
        let mut bindings = HashMap::default();
        let mut wildcards = Vec::new();
        let mut edges = Vec::new();
        let mut unresolved = HashSet::default();
        let mut unresolved_wildcard = false;
        let Some(facts) = self.facts(file) else {
            return FileImports {
                bindings,
                wildcards,
                unresolved,
                unresolved_wildcard,
                edges,
            };
        };
        for import in &facts.imports {
            let files = self.module_files(file, &import.module);
            if import.wildcard {
                unresolved_wildcard |= files.is_empty();
                for &f in &files {
                    edges.push((self.out.file_nodes[f as usize], import.site));
                }
                wildcards.extend(files);
                continue;
            }
            let target = self.import_target(file, import, &files);
            let Some(target) = target else {
                if let Some(local) = import.local_name() {
                    unresolved.insert(local.to_string());
                }
                continue;
            };
            match &target {
                Target::Symbol(id) => edges.push((*id, import.site)),
                Target::Files(fs) => {
                    for &f in fs {
                        edges.push((self.out.file_nodes[f as usize], import.site));
                    }
                }
            }
            if let Some(local) = import.local_name() {
                bindings.insert(local.to_string(), target.clone());
            }
            if import.alias.is_none() && import.name.is_none() {
                bindings.insert(import.module.clone(), target);
            }
        }
        FileImports {
            bindings,
            wildcards,
            unresolved,
            unresolved_wildcard,
            edges,
        }
    }

    fn import_target(&self, file: u32, import: &Import, files: &[u32]) -> Option<Target> {
        let Some(name) = &import.name else {
            return (!files.is_empty()).then(|| Target::Files(files.to_vec()));
        };
        // The member as a definition (or re-export) of the module's files.
        for &f in files {
            if let Some(id) = self.exported(f, name) {
                return Some(Target::Symbol(id));
            }
        }
        // The member as a submodule (`from pkg import mod`, `use crate::a::b`).
        let language = self.language(file)?;
        let sub = match language {
            Language::Rust => format!("{}::{}", import.module, name),
            Language::Python => {
                if import.module.ends_with('.') {
                    format!("{}{}", import.module, name)
                } else {
                    format!("{}.{}", import.module, name)
                }
            }
            _ => {
                return (!files.is_empty() && name == "default")
                    .then(|| Target::Files(files.to_vec()));
            }
        };
        let sub_files = self.module_files(file, &sub);
        (!sub_files.is_empty()).then_some(Target::Files(sub_files))
    }

    fn resolve_all(&mut self) {
        use rayon::prelude::*;
        let results: Vec<FileResolution> = (0..self.units.len() as u32)
            .into_par_iter()
            .map(|file| self.resolve_file(file))
            .collect();
        for result in results {
            self.edges.extend(result.edges);
            self.out.frontier.extend(result.frontier);
            self.out.external_references += result.external_references;
        }
    }

    /// Go interfaces are satisfied structurally: a struct whose methods include every
    /// method of an interface implements it (an `implements` edge at the struct's name,
    /// resolution `scope`, confidence 70), so that calls through the interface dispatch.
    fn go_implementations(&mut self) {
        let mut methods_of: HashMap<&'a str, HashSet<&'a str>> = HashMap::default();
        for &(scope, name) in self.members.keys() {
            methods_of.entry(scope).or_default().insert(name);
        }
        let mut interfaces: Vec<(u32, &'a str)> = Vec::new();
        let mut structs: Vec<(u32, &'a str, Span)> = Vec::new();
        for (file, unit) in self.units.iter().enumerate() {
            if unit.language != Some(Language::Go) {
                continue;
            }
            let Some(facts) = unit.facts else { continue };
            let base = self.def_base[file];
            for (i, def) in facts.defs.iter().enumerate() {
                let id = base + i as u32;
                match def.kind {
                    SymbolKind::Interface => interfaces.push((id, def.member_scope.as_str())),
                    SymbolKind::Struct => {
                        structs.push((id, def.member_scope.as_str(), def.name_span))
                    }
                    _ => {}
                }
            }
        }
        for (interface, scope) in interfaces {
            let Some(required) = methods_of.get(scope).filter(|m| !m.is_empty()) else {
                continue;
            };
            for &(id, struct_scope, site) in &structs {
                let satisfied = methods_of
                    .get(struct_scope)
                    .is_some_and(|have| required.iter().all(|m| have.contains(m)));
                if satisfied && id != interface {
                    let Some(file) = self.out.nodes[id as usize].file else {
                        continue;
                    };
                    self.edges.insert(ResolvedEdge {
                        from: id,
                        to: interface,
                        kind: EdgeKind::Implements,
                        subkind: EdgeSubkind::None,
                        provenance: Provenance::TreeSitter,
                        resolution: Resolution::Scope,
                        confidence: 70,
                        site: Some(Site {
                            file,
                            span: site.into(),
                        }),
                        flags: 0,
                    });
                }
            }
        }
    }

    fn resolve_file(&self, file: u32) -> FileResolution {
        let mut result = FileResolution::default();
        let (Some(facts), Some(language)) = (self.facts(file), self.language(file)) else {
            return result;
        };
        let base = self.def_base[file as usize];
        let locals = self.locals_of(file);
        for reference in &facts.refs {
            let from = reference
                .from
                .map(|f| base + f)
                .unwrap_or(self.out.file_nodes[file as usize]);
            let outcome = self.resolve_reference(file, language, facts, locals, reference);
            let (kind, subkind) = match reference.role {
                RefRole::Call => (EdgeKind::Calls, EdgeSubkind::None),
                RefRole::TypeUse => (EdgeKind::UsesType, EdgeSubkind::None),
                RefRole::Implement => (EdgeKind::Implements, EdgeSubkind::None),
                RefRole::Inherit => (EdgeKind::Implements, EdgeSubkind::Extends),
                RefRole::Import => (EdgeKind::Imports, EdgeSubkind::None),
                RefRole::Read | RefRole::Write => (EdgeKind::References, EdgeSubkind::None),
            };
            match outcome {
                Ok(o) if o.target != from || kind == EdgeKind::Calls => {
                    result.edges.push(ResolvedEdge {
                        from,
                        to: o.target,
                        kind,
                        subkind,
                        provenance: Provenance::TreeSitter,
                        resolution: o.resolution,
                        confidence: o.confidence,
                        site: Some(Site {
                            file,
                            span: reference.site.into(),
                        }),
                        flags: reference.site_flags,
                    });
                }
                Ok(_) => {}
                Err(candidates) => {
                    // Calls and inheritance are always frontier ("callers unknown" must
                    // stay answerable); an unresolved type use only when some definition
                    // shares its name; unresolved reads and writes — mostly locals — are
                    // counted, not kept.
                    let keep = match reference.role {
                        RefRole::Call | RefRole::Inherit | RefRole::Implement => true,
                        RefRole::TypeUse | RefRole::Import => candidates > 0,
                        RefRole::Read | RefRole::Write => false,
                    };
                    if keep {
                        result.frontier.push(FrontierEntry {
                            name: reference.name.clone(),
                            role: reference.role,
                            from,
                            file,
                            site: reference.site,
                            candidates,
                        });
                    } else {
                        result.external_references += 1;
                    }
                }
            }
        }
        result
    }

    /// The nodes of kinds a reference with this role may target.
    fn compatible(&self, role: RefRole, id: u32) -> bool {
        let kind = self.out.nodes[id as usize].kind;
        match role {
            RefRole::Call => kind.is_callable() || kind.is_type(),
            RefRole::TypeUse | RefRole::Inherit | RefRole::Implement => kind.is_type(),
            RefRole::Import => true,
            RefRole::Read | RefRole::Write => {
                !matches!(kind, SymbolKind::Impl | SymbolKind::Module)
            }
        }
    }

    fn pick(&self, role: RefRole, ids: &[u32]) -> Option<u32> {
        let first = ids.iter().copied().find(|&id| self.compatible(role, id))?;
        Some(self.implementation_of(first, ids))
    }

    /// Definitions with overloads folded into their implementations.
    fn distinct_symbols(&self, ids: Vec<u32>) -> Vec<u32> {
        let mut out: Vec<u32> = ids
            .iter()
            .map(|&id| self.implementation_of(id, &ids))
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Overloads (`@overload` stubs, TypeScript signatures) share a qualified name in one
    /// file; a call reaches the implementation: not a stub, else the largest body.
    fn implementation_of(&self, id: u32, ids: &[u32]) -> u32 {
        let node = &self.out.nodes[id as usize];
        // A stub only declares (`...`); among bodies, the largest (a long signature is
        // not a body).
        let weight = |n: &ResolvedNode| {
            (
                !n.declares_only,
                n.span.end_byte.saturating_sub(n.signature.end_byte),
                n.span.end_byte.saturating_sub(n.span.start_byte),
            )
        };
        ids.iter()
            .copied()
            .filter(|&other| {
                let o = &self.out.nodes[other as usize];
                o.file == node.file && o.qualified == node.qualified && o.kind == node.kind
            })
            .max_by_key(|&other| (weight(&self.out.nodes[other as usize]), u32::MAX - other))
            .unwrap_or(id)
    }

    /// The type of a member-call receiver: `Some(Ok(type))` when the graph proves it,
    /// `Some(Err(()))` when the receiver is a known name of unknown or outside type
    /// (decisive: an unknown member on it is frontier), `None` when the receiver is not
    /// something we know. Receivers are typed from declarations, constructors, and the
    /// declared return types of the calls that produced them (`a = self.get_adapter(u)`,
    /// `with make() as v`, `for p in params()`, `Foo::builder().port(1)`).
    fn receiver_type(
        &self,
        file: u32,
        facts: &'a FileFacts,
        locals: &Locals<'a>,
        r: &Reference,
        receiver: &str,
    ) -> Option<Result<u32, ()>> {
        let _depth = DepthGuard::enter()?;
        let receiver = strip_value_noise(receiver);
        if is_call_text(receiver) {
            // A call's value: typed through its target's return type, else unknown.
            return self
                .call_type(file, facts, locals, r.from, receiver, false)
                .map(Ok);
        }
        // A chain of fields (`c.echo.Binder`, `self.app.router`): each hop types the next.
        if let Some((base, fields)) = receiver.split_once('.')
            && fields.contains('.') | !matches!(base, "self" | "this")
        {
            let mut current = if matches!(base, "self" | "this") {
                let owner = self.enclosing_type(facts, r.from)?;
                self.type_named(file, owner)?
            } else {
                match self.receiver_type(file, facts, locals, r, base)? {
                    Ok(ty) => ty,
                    Err(()) => return Some(Err(())),
                }
            };
            for field in fields.split('.') {
                let owner = self.member_scope_of(current);
                let (binding, binding_file) = self.field_types.get(&(owner, field)).copied()?;
                current = match self.binding_type(binding_file, binding) {
                    Ok(ty) => ty,
                    Err(()) => return Some(Err(())),
                };
            }
            return Some(Ok(current));
        }
        let binding = if let Some(field) = receiver
            .strip_prefix("self.")
            .or_else(|| receiver.strip_prefix("this."))
        {
            if field.contains('.') {
                return None;
            }
            let owner = self.enclosing_type(facts, r.from)?;
            let (binding, binding_file) = self.field_types.get(&(owner, field)).copied()?;
            return Some(self.binding_type(binding_file, binding));
        } else {
            if !receiver
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
            {
                return None;
            }
            local_binding(locals, facts, r.from, receiver, r.site.start_byte)?
        };
        Some(self.binding_type(file, binding))
    }

    /// The type a binding of `file` holds: declared, constructed, or the (element of the)
    /// value its initialiser returns.
    fn binding_type(
        &self,
        file: u32,
        binding: &crate::syntax::facts::TypeBinding,
    ) -> Result<u32, ()> {
        if let Some(found) = binding
            .type_name
            .as_deref()
            .and_then(|t| self.type_named(file, t))
            .or_else(|| {
                binding
                    .initializer
                    .as_deref()
                    .and_then(|c| self.type_named(file, c))
                    .filter(|_| !binding.element)
            })
        {
            return Ok(found);
        }
        let Some(value) = binding.value.as_deref() else {
            return Err(());
        };
        let Some(_depth) = DepthGuard::enter() else {
            return Err(());
        };
        if binding.element {
            // The items of the value (`for route in self.routes`, `for p in params()`).
            return self
                .items_type(file, binding.value_scope, value, binding.site.start_byte)
                .ok_or(());
        }
        self.value_type(file, binding.value_scope, binding.site, value)
    }

    /// The type of a value's text evaluated in `scope`: a cast, a call's return type,
    /// another name's type, the first typed branch of a conditional.
    fn value_type(
        &self,
        file: u32,
        scope: Option<u32>,
        site: Span,
        value: &str,
    ) -> Result<u32, ()> {
        let Some(facts) = self.facts(file) else {
            return Err(());
        };
        let Some(_depth) = DepthGuard::enter() else {
            return Err(());
        };
        let value = strip_value_noise(value);
        let branches = value_branches(value);
        if branches != [value] {
            return branches
                .into_iter()
                .find_map(|branch| self.value_type(file, scope, site, branch).ok())
                .ok_or(());
        }
        if let Some(asserted) = asserted_type(value) {
            return self.type_named(file, asserted).ok_or(());
        }
        if is_call_text(value) {
            return self
                .call_type(file, facts, self.locals_of(file), scope, value, false)
                .ok_or(());
        }
        // An alias of another name (`self.app = app`, `x = y`): that name's type.
        let probe = Reference {
            role: RefRole::Read,
            name: value.to_string(),
            receiver: None,
            qualifier: None,
            site,
            from: scope,
            site_flags: 0,
        };
        match self.receiver_type(file, facts, self.locals_of(file), &probe, value) {
            Some(result) => result,
            None => self.type_named(file, value).ok_or(()),
        }
    }

    /// The type of the items of a collection expression: a name or field declared as a
    /// collection (`routes: Sequence[Route]`), a call returning one, a conversion that
    /// keeps the items (`list(x)`, `sorted(x)`), either branch of a conditional
    /// (`[] if x is None else list(x)`), through the bindings that hold it.
    fn items_type(&self, file: u32, scope: Option<u32>, text: &str, at: u32) -> Option<u32> {
        let _depth = DepthGuard::enter()?;
        let facts = self.facts(file)?;
        let text = strip_value_noise(text);
        let branches = value_branches(text);
        if branches != [text] {
            return branches
                .into_iter()
                .find_map(|branch| self.items_type(file, scope, branch, at));
        }
        if let Some(callee) = callee_of(text) {
            if ITEM_PRESERVING.contains(&callee) {
                let argument = first_of_tuple(arguments_of(text)?);
                return self.items_type(file, scope, argument, at);
            }
            return self.call_type(file, facts, self.locals_of(file), scope, text, true);
        }
        let (binding, binding_file) = self.binding_of(file, facts, scope, text, at)?;
        if let Some(items) = binding.items.as_deref() {
            return self.type_named(binding_file, items);
        }
        let value = binding.value.as_deref().filter(|_| !binding.element)?;
        self.items_type(
            binding_file,
            binding.value_scope,
            value,
            binding.site.start_byte,
        )
    }

    /// The binding a bare name or a `self.`/`this.` field denotes in `scope` at byte `at`.
    fn binding_of(
        &self,
        file: u32,
        facts: &'a FileFacts,
        scope: Option<u32>,
        name: &str,
        at: u32,
    ) -> Option<(&'a crate::syntax::facts::TypeBinding, u32)> {
        if let Some(field) = name
            .strip_prefix("self.")
            .or_else(|| name.strip_prefix("this."))
        {
            let owner = self.enclosing_type(facts, scope)?;
            return self.field_types.get(&(owner, field)).copied();
        }
        if !name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
        {
            return None;
        }
        local_binding(self.locals_of(file), facts, scope, name, at).map(|b| (b, file))
    }

    /// A file's bindings by (scope, name), built once per file (typing a value may visit
    /// any file).
    fn locals_of(&self, file: u32) -> &Locals<'a> {
        self.locals[file as usize].get_or_init(|| {
            let mut locals: Locals = HashMap::default();
            if let Some(facts) = self.facts(file) {
                for binding in &facts.bindings {
                    locals
                        .entry((binding.scope, binding.name.as_str()))
                        .or_default()
                        .push(binding);
                }
                for list in locals.values_mut() {
                    list.sort_by_key(|b| b.site.start_byte);
                }
            }
            locals
        })
    }

    /// The type a call expression (`callee(args)`) evaluates to, from its target's declared
    /// return type (`Self` is the target's own type); `element` takes the element of a
    /// collection type (`list[Param]` → `Param`). A type called like a function
    /// constructs itself.
    fn call_type(
        &self,
        file: u32,
        facts: &'a FileFacts,
        locals: &Locals<'a>,
        scope: Option<u32>,
        text: &str,
        element: bool,
    ) -> Option<u32> {
        let callee = callee_of(text)?;
        let (receiver, name) = match callee.rfind(['.', ':']) {
            Some(at) => (
                Some(callee[..at].trim_end_matches(':').to_string()),
                &callee[at + 1..],
            ),
            None => (None, callee),
        };
        if name.is_empty() {
            return None;
        }
        if receiver.is_none()
            && !element
            && let Some(ty) = self.type_named(file, name)
        {
            return Some(ty);
        }
        // `Type::f` is a path; `a::b().c` is a call on a receiver.
        let qualified = callee
            .rfind(['.', ':'])
            .is_some_and(|at| callee.as_bytes()[at] == b':');
        let probe = Reference {
            role: RefRole::Call,
            name: name.to_string(),
            receiver: if qualified { None } else { receiver.clone() },
            qualifier: if qualified { receiver } else { None },
            site: Span::default(),
            from: scope,
            site_flags: 0,
        };
        let language = self.language(file)?;
        let target = self
            .resolve_reference(file, language, facts, locals, &probe)
            .ok()?
            .target;
        let node = &self.out.nodes[target as usize];
        if node.kind.is_type() && !element {
            return Some(target);
        }
        let target_file = node.file?;
        let def = self
            .facts(target_file)?
            .defs
            .get((target - self.def_base[target_file as usize]) as usize)?;
        let returns = def.returns.as_deref()?;
        let name = if element {
            collection_items(returns)?
        } else {
            crate::syntax::extract::normalize_type(first_of_tuple(returns))?
        };
        if name == "Self" || name == "self" || name == "this" {
            let owner = self.enclosing_type(
                self.facts(target_file)?,
                Some(target - self.def_base[target_file as usize]),
            )?;
            return self.type_named(target_file, owner);
        }
        self.type_named(target_file, &name)
    }

    fn resolve_reference(
        &self,
        file: u32,
        language: Language,
        facts: &'a FileFacts,
        locals: &Locals<'a>,
        r: &Reference,
    ) -> Result<Outcome, u32> {
        let ok = |target, resolution, confidence| {
            Ok(Outcome {
                target,
                resolution,
                confidence,
            })
        };
        let base = self.def_base[file as usize];

        if let Some(receiver) = &r.receiver {
            if language.is_self_receiver(receiver) {
                if let Some(owner) = self.enclosing_type(facts, r.from)
                    && let Some(id) = self.member_of(file, owner, &r.name, 0)
                {
                    return ok(id, Resolution::Scope, 85);
                }
            } else if let Some(typed) = self.receiver_type(file, facts, locals, r, receiver) {
                // A receiver whose type we know (or know we do not know): decisive.
                let Ok(type_node) = typed else {
                    return Err(self.candidate_count(r));
                };
                let owner = self.member_scope_of(type_node);
                let owner_file = self.out.nodes[type_node as usize].file.unwrap_or(file);
                return match self.member_of(owner_file, owner, &r.name, 0) {
                    Some(id) => ok(id, Resolution::Scope, 80),
                    None => Err(self.candidate_count(r)),
                };
            } else if let Some(target) = self.bindings[file as usize].get(receiver.as_str()) {
                // An imported receiver is decisive: a member we cannot find on it is
                // unknown, not a reason to guess by name.
                return match self.lookup_in_target(target, &r.name, r.role) {
                    Some(id) => ok(id, Resolution::Import, 90),
                    None => Err(self.candidate_count(r)),
                };
            } else if let Some(id) = self.type_named(file, receiver) {
                let scope = self.member_scope_of(id);
                if let Some(id) = self.member_of(file, scope, &r.name, 0) {
                    return ok(id, Resolution::Scope, 80);
                }
            }
            return self.unique_member(file, r);
        }

        if let Some(qualifier) = &r.qualifier {
            return match self.resolve_qualified(file, language, facts, r, qualifier) {
                Some(o) => Ok(o),
                None => Err(self.candidate_count(r)),
            };
        }

        // A parameter or local variable of an enclosing function shadows every
        // definition of the name: it is a local, not an edge.
        let mut scope = r.from;
        while let Some(s) = scope {
            let def = &facts.defs[s as usize];
            if def.kind.is_callable()
                && locals
                    .get(&(Some(s), r.name.as_str()))
                    .is_some_and(|list| list.iter().any(|b| b.site.start_byte != r.site.start_byte))
            {
                return Err(0);
            }
            scope = def.parent;
        }

        // 1. Local scope: enclosing functions' nested definitions, then the file's top level.
        let mut scope = r.from;
        while let Some(s) = scope {
            let def = &facts.defs[s as usize];
            let allow_members = def.kind.is_callable()
                || (language == Language::Java && def.kind.is_type_container());
            if allow_members
                && let Some(ids) = self.children.get(&(base + s, r.name.as_str()))
                && let Some(id) = self.pick(r.role, ids)
            {
                return ok(id, Resolution::Scope, 90);
            }
            scope = def.parent;
        }
        if let Some(ids) = self.top_level[file as usize].get(r.name.as_str())
            && let Some(id) = self.pick(r.role, ids)
        {
            return ok(id, Resolution::Scope, 90);
        }
        // 2. Imports.
        if let Some(target) = self.bindings[file as usize].get(r.name.as_str()) {
            match target {
                Target::Symbol(id) if self.compatible(r.role, *id) => {
                    return ok(*id, Resolution::Import, 95);
                }
                _ => {}
            }
        }
        // Same package (Go directory, Java package) shares one namespace.
        for f in self.package_peers(file) {
            if let Some(ids) = self.top_level[f as usize].get(r.name.as_str())
                && let Some(id) = self.pick(r.role, ids)
            {
                return ok(id, Resolution::Scope, 85);
            }
        }
        for &f in &self.wildcards[file as usize] {
            if let Some(ids) = self.top_level[f as usize].get(r.name.as_str())
                && let Some(id) = self.pick(r.role, ids)
            {
                return ok(id, Resolution::Import, 80);
            }
        }
        if r.name == "Self"
            && language == Language::Rust
            && let Some(owner) = self.enclosing_type(facts, r.from)
            && let Some(id) = self.type_named(file, owner)
        {
            return ok(id, Resolution::Scope, 90);
        }
        // 5. A unique global name.
        self.unique_global(file, r)
    }

    fn candidate_count(&self, r: &Reference) -> u32 {
        self.by_name.get(r.name.as_str()).map_or(0, |ids| {
            ids.iter()
                .filter(|&&id| self.compatible(r.role, id))
                .count() as u32
        })
    }

    /// A unique definition of the name in the whole graph — only for names the file
    /// imports from somewhere we could not follow (an unresolved import or wildcard):
    /// in every supported language a bare name from another file must be imported, so
    /// anything else would be a guess.
    fn unique_global(&self, file: u32, r: &Reference) -> Result<Outcome, u32> {
        let Some(ids) = self.by_name.get(r.name.as_str()) else {
            return Err(0);
        };
        let (names, wildcard) = &self.opaque_imports[file as usize];
        if !(*wildcard || names.contains(r.name.as_str())) {
            return Err(self.candidate_count(r));
        }
        // A bare name never means a member: methods and fields need a receiver.
        let compatible: Vec<u32> = ids
            .iter()
            .copied()
            .filter(|&id| self.compatible(r.role, id))
            .filter(|&id| {
                !matches!(
                    self.out.nodes[id as usize].kind,
                    SymbolKind::Method | SymbolKind::Field
                )
            })
            .collect();
        let compatible = self.distinct_symbols(compatible);
        match compatible.as_slice() {
            [only] => Ok(Outcome {
                target: *only,
                resolution: Resolution::UniqueName,
                confidence: 50,
            }),
            other => Err(other.len() as u32),
        }
    }

    /// A member call on a receiver of unknown type: only a method name unique in the graph
    /// whose file the caller can see (same file or imported) is accepted.
    fn unique_member(&self, file: u32, r: &Reference) -> Result<Outcome, u32> {
        let Some(ids) = self.by_name.get(r.name.as_str()) else {
            return Err(0);
        };
        let methods: Vec<u32> = ids
            .iter()
            .copied()
            .filter(|&id| {
                matches!(
                    self.out.nodes[id as usize].kind,
                    SymbolKind::Method | SymbolKind::Field
                )
            })
            .collect();
        let methods = self.distinct_symbols(methods);
        match methods.as_slice() {
            [only] => {
                let target_file = self.out.nodes[*only as usize].file.unwrap_or(u32::MAX);
                let visible = target_file == file
                    || self.bindings[file as usize].values().any(|t| match t {
                        Target::Symbol(id) => {
                            self.out.nodes[*id as usize].file == Some(target_file)
                        }
                        Target::Files(fs) => fs.contains(&target_file),
                    });
                if visible {
                    Ok(Outcome {
                        target: *only,
                        resolution: Resolution::UniqueName,
                        confidence: 45,
                    })
                } else {
                    Err(1)
                }
            }
            other => Err(other.len() as u32),
        }
    }

    fn package_peers(&self, file: u32) -> Vec<u32> {
        let unit = &self.units[file as usize];
        match unit.language {
            Some(Language::Go) => self.dir_files[dir_of(unit.path)]
                .iter()
                .copied()
                .filter(|&f| f != file && self.language(f) == Some(Language::Go))
                .collect(),
            Some(Language::Java) => unit
                .facts
                .and_then(|f| f.package.as_deref())
                .and_then(|p| self.packages.get(p))
                .map(|files| files.iter().copied().filter(|&f| f != file).collect())
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// Member scope name of the type enclosing a definition (class name, impl self type).
    fn enclosing_type(&self, facts: &'a FileFacts, from: Option<u32>) -> Option<&'a str> {
        let mut scope = from;
        while let Some(s) = scope {
            let def = &facts.defs[s as usize];
            if def.kind.is_type_container() {
                return Some(def.member_scope.as_str());
            }
            // Go methods: the receiver type qualifies the method.
            if def.kind == SymbolKind::Method
                && def
                    .parent
                    .is_some_and(|p| !facts.defs[p as usize].span.contains(&def.span))
            {
                return def
                    .parent
                    .map(|p| facts.defs[p as usize].member_scope.as_str());
            }
            scope = def.parent;
        }
        None
    }

    fn member_scope_of(&self, id: u32) -> &str {
        let node = &self.out.nodes[id as usize];
        let file = node.file.unwrap_or(0) as usize;
        let index = id - self.def_base[file];
        self.units[file]
            .facts
            .and_then(|f| f.defs.get(index as usize))
            .map_or(node.name.as_str(), |d| d.member_scope.as_str())
    }

    /// A member `name` of type `owner`, preferring the caller's file, then bases.
    fn member_of(&self, file: u32, owner: &str, name: &str, depth: u32) -> Option<u32> {
        if let Some(ids) = self.members.get(&(owner, name)) {
            let same_file = ids
                .iter()
                .copied()
                .find(|&id| self.out.nodes[id as usize].file == Some(file));
            let only = &self.out.nodes[ids[0] as usize];
            let one_symbol = ids.iter().all(|&id| {
                let node = &self.out.nodes[id as usize];
                node.file == only.file && node.qualified == only.qualified
            });
            return same_file
                .or_else(|| one_symbol.then_some(ids[0]))
                .map(|id| self.implementation_of(id, ids));
        }
        if depth >= 4 {
            return None;
        }
        // Inherited: follow the bases declared by the owner type.
        let owner_id = self.type_named(file, owner)?;
        let owner_file = self.out.nodes[owner_id as usize].file?;
        let facts = self.facts(owner_file)?;
        let local = owner_id - self.def_base[owner_file as usize];
        for r in &facts.refs {
            if r.from == Some(local)
                && matches!(r.role, RefRole::Inherit | RefRole::Implement)
                && let Some(found) = self.member_of(owner_file, &r.name, name, depth + 1)
            {
                return Some(found);
            }
        }
        None
    }

    /// A type called `name` visible from `file`: same file, imported, or unique.
    fn type_named(&self, file: u32, name: &str) -> Option<u32> {
        let is_type = |id: &u32| {
            self.out.nodes[*id as usize].kind.is_type()
                || self.out.nodes[*id as usize].kind == SymbolKind::Impl
        };
        if let Some(ids) = self.top_level[file as usize].get(name)
            && let Some(id) = ids
                .iter()
                .copied()
                .find(|id| self.out.nodes[*id as usize].kind.is_type())
        {
            return Some(id);
        }
        if let Some(Target::Symbol(id)) = self.bindings.get(file as usize).and_then(|b| b.get(name))
            && is_type(id)
        {
            return Some(*id);
        }
        for f in self.package_peers(file) {
            if let Some(ids) = self.top_level[f as usize].get(name)
                && let Some(id) = ids
                    .iter()
                    .copied()
                    .find(|id| self.out.nodes[*id as usize].kind.is_type())
            {
                return Some(id);
            }
        }
        let ids = self.by_name.get(name)?;
        let types: Vec<u32> = ids
            .iter()
            .copied()
            .filter(|id| self.out.nodes[*id as usize].kind.is_type())
            .collect();
        (types.len() == 1).then(|| types[0])
    }

    fn lookup_in_target(&self, target: &Target, name: &str, role: RefRole) -> Option<u32> {
        match target {
            Target::Symbol(id) => {
                let node = &self.out.nodes[*id as usize];
                let file = node.file?;
                if node.kind.is_type() {
                    let scope = self.member_scope_of(*id);
                    self.member_of(file, scope, name, 0)
                } else {
                    None
                }
            }
            Target::Files(files) => files.iter().find_map(|&f| {
                self.top_level[f as usize]
                    .get(name)
                    .and_then(|ids| self.pick(role, ids))
                    .or_else(|| {
                        self.exported(f, name)
                            .filter(|&id| self.compatible(role, id))
                    })
            }),
        }
    }

    fn resolve_qualified(
        &self,
        file: u32,
        language: Language,
        facts: &'a FileFacts,
        r: &Reference,
        qualifier: &str,
    ) -> Option<Outcome> {
        let separator = if qualifier.contains("::") { "::" } else { "." };
        let segments: Vec<&str> = qualifier.split(separator).map(str::trim).collect();
        let first = *segments.first()?;
        let mut resolution = Resolution::Qualified;
        // The scope the first segment names.
        let mut scope: Option<Target> =
            if language == Language::Rust && matches!(first, "crate" | "self" | "super") {
                let module_segments: Vec<&str> = segments
                    .iter()
                    .copied()
                    .take_while(|s| matches!(*s, "crate" | "self" | "super"))
                    .collect();
                let path = module_segments.join("::");
                self.rust_module(self.units[file as usize].path, &path)
                    .map(|f| Target::Files(vec![f]))
            } else if first == "Self" {
                self.enclosing_type(facts, r.from)
                    .and_then(|t| self.type_named(file, t))
                    .map(Target::Symbol)
            } else if let Some(t) = self.bindings[file as usize].get(first) {
                resolution = Resolution::Import;
                Some(t.clone())
            } else if let Some(id) = self.type_named(file, first) {
                Some(Target::Symbol(id))
            } else if language == Language::Rust {
                self.rust_module(self.units[file as usize].path, first)
                    .map(|f| Target::Files(vec![f]))
            } else {
                None
            };
        let skip = segments
            .iter()
            .take_while(|s| matches!(**s, "crate" | "self" | "super"))
            .count()
            .max(1);
        for segment in &segments[skip..] {
            scope = match scope? {
                Target::Files(files) => {
                    let next_files: Vec<u32> = files
                        .iter()
                        .filter_map(|&f| {
                            let path = self.units[f as usize].path;
                            match language {
                                Language::Rust => {
                                    let (root, module) = rust_module_of(path);
                                    let sub = if module.is_empty() {
                                        segment.to_string()
                                    } else {
                                        format!("{module}::{segment}")
                                    };
                                    self.rust_modules.get(&(root, sub)).copied()
                                }
                                _ => None,
                            }
                        })
                        .collect();
                    if !next_files.is_empty() {
                        Some(Target::Files(next_files))
                    } else {
                        files
                            .iter()
                            .find_map(|&f| {
                                self.top_level[f as usize].get(*segment).map(|ids| ids[0])
                            })
                            .map(Target::Symbol)
                    }
                }
                Target::Symbol(id) => {
                    let owner = self.member_scope_of(id);
                    let file = self.out.nodes[id as usize].file?;
                    self.member_of(file, owner, segment, 0).map(Target::Symbol)
                }
            };
        }
        if let Some(target) = scope {
            if let Some(id) = self.lookup_in_target(&target, &r.name, r.role) {
                return Some(Outcome {
                    target: id,
                    resolution,
                    confidence: 80,
                });
            }
            return None;
        }
        // Qualified-suffix lookup: `Type::method` anywhere in the graph, if unique.
        let last = segments.last()?;
        let key = format!("{last}{}{}", language.separator(), r.name);
        let ids = self.by_qualified.get(key.as_str())?;
        let compatible: Vec<u32> = ids
            .iter()
            .copied()
            .filter(|&id| self.compatible(r.role, id))
            .collect();
        (compatible.len() == 1).then(|| Outcome {
            target: compatible[0],
            resolution: Resolution::Qualified,
            confidence: 70,
        })
    }

    fn finish(mut self) -> Resolved {
        let mut edges: Vec<ResolvedEdge> = self.edges.into_iter().collect();
        edges.sort();
        self.out.edges = edges;
        self.out.frontier.sort_by(|a, b| {
            (a.file, a.site.start_byte, &a.name).cmp(&(b.file, b.site.start_byte, &b.name))
        });
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_module_paths() {
        assert_eq!(rust_module_of("src/lib.rs"), ("src".into(), "".into()));
        assert_eq!(rust_module_of("src/a/b.rs"), ("src".into(), "a::b".into()));
        assert_eq!(
            rust_module_of("crates/x/src/a/mod.rs"),
            ("crates/x/src".into(), "a".into())
        );
        assert_eq!(rust_module_of("tests/it.rs"), ("tests".into(), "".into()));
    }

    #[test]
    fn value_texts_name_their_types() {
        assert_eq!(asserted_type("p.Get().(*Context)"), Some("Context"));
        assert_eq!(asserted_type("raw as Request"), Some("Request"));
        assert_eq!(asserted_type("t.cast(Group, cmd)"), Some("Group"));
        assert_eq!(asserted_type("x as const"), None);
        assert_eq!(
            value_branches("[] if routes is None else list(routes)"),
            ["list(routes)"]
        );
        assert_eq!(value_branches("a or b"), ["a", "b"]);
        assert_eq!(value_branches("ok ? make() : null"), ["make()"]);
        assert_eq!(value_branches("f(a if b else c)"), ["f(a if b else c)"]);
        assert_eq!(arguments_of("f(a, g(b))"), Some("a, g(b)"));
        assert_eq!(
            callee_of("Server::builder().port(1)"),
            Some("Server::builder().port")
        );
    }

    #[test]
    fn unclosed_and_multibyte_collection_texts_name_nothing() {
        // Found by `operator_shaped_texts_never_panic`.
        assert_eq!(crate::syntax::extract::element_type("list["), None);
        assert_eq!(crate::syntax::extract::element_type("listá"), None);
        assert_eq!(crate::syntax::extract::collection_items("Optional[á"), None);
        assert_eq!(
            crate::syntax::extract::collection_items("Sequence[Route] | None").as_deref(),
            Some("Route")
        );
    }

    /// Every helper that reads a value's text, on `text`.
    fn exercise_value_text(text: &str) {
        let _ = strip_value_noise(text);
        let _ = callee_of(text);
        let _ = arguments_of(text);
        let _ = asserted_type(text);
        let _ = value_branches(text);
        let _ = crate::syntax::extract::collection_items(text);
        let _ = crate::syntax::extract::element_type(text);
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config {
            failure_persistence: None,
            ..proptest::test_runner::Config::default()
        })]
        // Value texts come from any source file: no text may panic the helpers (a
        // multi-byte character next to an operator once did).
        #[test]
        fn value_text_helpers_never_panic(text in "\\PC{0,40}") {
            exercise_value_text(&text);
        }

        #[test]
        fn operator_shaped_texts_never_panic(
            parts in proptest::collection::vec(
                proptest::sample::select(vec![
                    "á", "é", " if ", " else ", " or ", " ? ", " : ", " ?? ", " as ", ".(", "(",
                    ")", "[", "]", "<", ">", "*", "cast", "list", "x", ",", "|", "None",
                ]),
                0..12,
            )
        ) {
            exercise_value_text(&parts.concat());
        }
    }
}
