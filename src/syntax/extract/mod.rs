//! tree-sitter extraction: one file's bytes in, `FileFacts` out (R-EXT-1/2).
//!
//! Extraction never fails on broken code: syntax errors make the file `partial` with an
//! error count and lines, and whatever the parser recovered is still extracted. The only
//! error is an invalid query file, which is a bug in Atlas, not in the input.

use std::cell::RefCell;

use tree_sitter::{Node, Parser, Tree};

use crate::error::Result;
use crate::syntax::facts::{
    Definition, FileFacts, Import, ParseStatus, RefRole, Reference, Span, SymbolKind, TypeBinding,
    Visibility,
};
use crate::syntax::lang::Language;

mod decl;
mod parents;
mod sites;
mod type_text;

use decl::{
    enclosing_def, generality, is_constant_name, qualified_scope, signature_of, split_rust_path,
    visibility_of, wrapper_and_doc,
};
use parents::Parents;
use sites::{ReturnedNames, call_site_flags, declares_only, return_type};
pub use type_text::{collection_items, element_type, first_of_tuple, normalize_type};
use type_text::{strip_generics, type_name_and_qualifier};

/// Bumped whenever extraction output changes for the same input; part of the cache key
/// and of the fingerprint.
/// 8: a call assigned at module level is never `RETURNED`, and a function's returned names
/// leave out those of the functions nested in it.
/// 9: Rust `extern crate a as b;` is an import of crate `a` bound as `b`.
/// 10: the items, calls and `use`s inside a Rust macro call in item position
/// (`cfg_rt! { … }`) are extracted.
/// 11: and the calls inside one in expression position (`assert_eq!(parse(x), 3)`).
/// 12: not inside a quoting macro (`quote! { … }`); a macro body nested deeper than the
/// limit makes the file `truncated`.
pub const EXTRACTOR_VERSION: u32 = 12;

/// Syntax nested deeper than this is not extracted: hostile or generated files
/// (`f(f(f(…)))` 40,000 deep) would otherwise cost quadratic time. The file is
/// `truncated`, and the reason says so (issue 10, E). Real code nests a few dozen deep.
const MAX_NESTING: u32 = 512;

const MAX_ERROR_LINES: usize = 8;
/// Receiver and qualifier texts are clipped: they are evidence, not payload.
const MAX_AUX_TEXT: usize = 160;

thread_local! {
    static PARSERS: RefCell<Vec<(Language, Parser)>> = const { RefCell::new(Vec::new()) };
}

/// Every match of a language's query under a root, handed on as (capture name, node)
/// pairs; true when a limit cut matches short.
type MatchSource<'a> =
    &'a dyn for<'t> Fn(Node<'t>, &str, &mut dyn FnMut(&[(&str, Node<'t>)])) -> bool;

/// Extracts the facts of one source file.
pub fn extract(language: Language, source: &str) -> Result<FileFacts> {
    let patterns = &language.query()?.patterns;
    extract_with(language, source, &|root, source, each| {
        let mut captures: Vec<(&str, Node)> = Vec::new();
        patterns.for_each_match(root, source.as_bytes(), MAX_NESTING, |m| {
            captures.clear();
            captures.extend(m.iter().map(|&(c, node)| (patterns.capture_name(c), node)));
            each(&captures);
        })
    })
}

fn extract_with(language: Language, source: &str, matches: MatchSource) -> Result<FileFacts> {
    let parsed = PARSERS.with(|parsers| {
        let mut parsers = parsers.borrow_mut();
        let index = match parsers.iter().position(|(l, _)| *l == language) {
            Some(i) => i,
            None => {
                let mut parser = Parser::new();
                // A grammar/ABI mismatch is impossible at run time: the grammars are linked
                // crates checked by the query test. Fall back to "no tree" rather than panic.
                if parser.set_language(&language.grammar()).is_err() {
                    return None;
                }
                parsers.push((language, parser));
                parsers.len() - 1
            }
        };
        let parser = &mut parsers[index].1;
        let tree = parser.parse(source, None)?;
        let bodies = match language {
            Language::Rust => macro_bodies(parser, source, tree.root_node()),
            _ => MacroBodies::default(),
        };
        Some((tree, bodies))
    });
    let line_count = source.lines().count() as u32;
    let Some((tree, bodies)) = parsed else {
        return Ok(FileFacts {
            parse_status: ParseStatus::Partial,
            limit: None,
            error_count: 1,
            error_lines: vec![0],
            line_count,
            package: None,
            defs: Vec::new(),
            refs: Vec::new(),
            imports: Vec::new(),
            bindings: Vec::new(),
        });
    };
    let root = tree.root_node();
    let (error_count, error_lines) = count_errors(root);

    let mut parents = Parents::index(root);
    for body in &bodies.trees {
        parents.add(body.root_node());
    }
    // A macro body read as code nests as deep as its own tree does.
    let depth = parents.deepest();
    let mut collector = Collector::new(language, source, parents);
    let mut cut = matches(root, source, &mut |captures| collector.add_match(captures));
    for body in &bodies.trees {
        cut |= matches(body.root_node(), source, &mut |captures| {
            collector.add_match(captures)
        });
    }
    let mut facts = collector.finish();
    facts.line_count = line_count;
    facts.error_count = error_count;
    facts.error_lines = error_lines;
    facts.parse_status = if error_count > 0 {
        ParseStatus::Partial
    } else {
        ParseStatus::Complete
    };
    // A limit that cut extraction short is reported, never silent.
    if depth > MAX_NESTING {
        facts.parse_status = ParseStatus::Truncated;
        facts.limit = Some(format!(
            "syntax nested {depth} deep; nothing deeper than {MAX_NESTING} is extracted"
        ));
    } else if bodies.too_deep {
        facts.parse_status = ParseStatus::Truncated;
        facts.limit = Some(format!(
            "macro calls nested {MAX_MACRO_NESTING} deep; what deeper ones hold is not extracted"
        ));
    } else if cut {
        facts.parse_status = ParseStatus::Truncated;
        facts.limit = Some(format!(
            "a pattern matched one node more than {} ways; the rest are not extracted",
            crate::syntax::lang::pattern::MAX_MATCHES_PER_NODE
        ));
    }
    Ok(facts)
}

/// Macro calls inside one another deeper than this are not read.
const MAX_MACRO_NESTING: u32 = 8;

/// Expression bodies read by one parse (`macro_bodies`).
const BODIES_PER_PARSE: usize = 32;

/// The bodies of a Rust file's macro calls, parsed as items or as expressions.
#[derive(Default)]
struct MacroBodies {
    trees: Vec<Tree>,
    /// A body held macro calls nested deeper than `MAX_MACRO_NESTING`.
    too_deep: bool,
}

/// tree-sitter leaves a macro call's body a token tree, so the items a crate writes
/// inside one (`cfg_rt! { pub fn spawn… }`, how tokio gates whole modules) were not in
/// the graph, nor their calls and `use`s. The body of every call in an item position
/// (a file's, a module's, an `impl`'s or a trait's top level) is parsed again as Rust,
/// restricted to its own bytes, so positions stay the file's and `Collector::finish`
/// nests the items in the `impl` or module around the call. Only a body that parses
/// cleanly into items is kept: `lazy_static! { static ref … }` or `impl_op!(u8, u16)`
/// are not Rust items and stay token trees.
fn macro_bodies(parser: &mut Parser, source: &str, root: Node) -> MacroBodies {
    let mut bodies = MacroBodies::default();
    let mut calls = Vec::new();
    item_level_macro_calls(root, &mut calls);
    let mut pending: Vec<(tree_sitter::Range, u32)> = calls.into_iter().map(|r| (r, 1)).collect();
    while let Some((range, depth)) = pending.pop() {
        if depth > MAX_MACRO_NESTING {
            bodies.too_deep = true;
            continue;
        }
        if parser.set_included_ranges(&[range]).is_err() {
            continue;
        }
        let Some(tree) = parser.parse(source, None) else {
            continue;
        };
        let inner = {
            let body = tree.root_node();
            let mut walk = body.walk();
            let items = body.named_child_count() > 0
                && !body.has_error()
                && body
                    .named_children(&mut walk)
                    .all(|item| is_item(item.kind()));
            if !items {
                continue;
            }
            let mut inner = Vec::new();
            item_level_macro_calls(body, &mut inner);
            inner
        };
        pending.extend(inner.into_iter().map(|r| (r, depth + 1)));
        bodies.trees.push(tree);
    }
    // Calls in expression position (`assert_eq!(parse(x), 3)`, `vec![make()]`): their
    // bodies, delimiters included, read as expressions (tuples, arrays, blocks), then
    // the calls found inside those, round by round. A parse reads up to
    // `BODIES_PER_PARSE` bodies: adjacent ones join into chains such as `(a, b)(c)`,
    // which call no name, and a chain stays far shallower than `MAX_NESTING`. Errors
    // here are not the file's.
    let mut round = Vec::new();
    expression_macro_calls(root, source, &mut round);
    for tree in &bodies.trees {
        expression_macro_calls(tree.root_node(), source, &mut round);
    }
    let mut depth = 1;
    while !round.is_empty() {
        if depth > MAX_MACRO_NESTING {
            bodies.too_deep = true;
            break;
        }
        round.sort_unstable_by_key(|range| range.start_byte);
        let mut next = Vec::new();
        for ranges in round.chunks(BODIES_PER_PARSE) {
            if parser.set_included_ranges(ranges).is_err() {
                continue;
            }
            let Some(tree) = parser.parse(source, None) else {
                continue;
            };
            expression_macro_calls(tree.root_node(), source, &mut next);
            bodies.trees.push(tree);
        }
        round = next;
        depth += 1;
    }
    // The parser parses whole files again.
    let _ = parser.set_included_ranges(&[]);
    bodies
}

/// The bodies, delimiters included, of the macro calls under `node` that are not in
/// item position (those are `item_level_macro_calls`') and run as written (`quotes_code`).
fn expression_macro_calls(node: Node, source: &str, out: &mut Vec<tree_sitter::Range>) {
    let mut cursor = node.walk();
    // The kinds of the current node's ancestors under `node`.
    let mut above: Vec<&str> = Vec::new();
    loop {
        let current = cursor.node();
        let mut descend = current.kind() != "token_tree";
        if current.kind() == "macro_invocation" {
            descend = false;
            let item_position = above
                .last()
                .is_some_and(|p| matches!(*p, "source_file" | "declaration_list"))
                || quotes_code(current, source);
            if let Some(body) = macro_body(current)
                && !item_position
            {
                out.push(body.range());
            }
        }
        if descend && cursor.goto_first_child() {
            above.push(current.kind());
            continue;
        }
        loop {
            if cursor.node() == node {
                return;
            }
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return;
            }
            above.pop();
        }
    }
}

/// A macro whose body is code it generates, not code that runs where it is written
/// (`quote! { impl X { … } }` in a procedural macro): read as code, it would add
/// definitions and calls that are not there.
fn quotes_code(call: Node, source: &str) -> bool {
    let Some(name) = call.child_by_field_name("macro") else {
        return false;
    };
    let name = name.child_by_field_name("name").unwrap_or(name);
    let text = source.get(name.byte_range()).unwrap_or("");
    matches!(
        text,
        "quote" | "quote_spanned" | "parse_quote" | "parse_quote_spanned"
    )
}

/// A node kind a Rust file's top level holds when it is items (and their comments).
fn is_item(kind: &str) -> bool {
    kind.ends_with("_item")
        || matches!(
            kind,
            "use_declaration"
                | "extern_crate_declaration"
                | "macro_definition"
                | "macro_invocation"
                | "line_comment"
                | "block_comment"
        )
}

/// The bodies (between the delimiters) of the macro calls in item position under
/// `node`: its own top level, and that of the modules, `impl`s and traits it holds (a
/// stack, not recursion: hostile files nest modules thousands deep).
fn item_level_macro_calls(node: Node, out: &mut Vec<tree_sitter::Range>) {
    let mut lists = vec![node];
    while let Some(list) = lists.pop() {
        let mut walk = list.walk();
        for child in list.named_children(&mut walk) {
            match child.kind() {
                "macro_invocation" => {
                    let Some(body) = macro_body(child) else {
                        continue;
                    };
                    if body.end_byte() < body.start_byte() + 2 {
                        continue;
                    }
                    let (start, end) = (body.start_position(), body.end_position());
                    out.push(tree_sitter::Range {
                        start_byte: body.start_byte() + 1,
                        end_byte: body.end_byte() - 1,
                        start_point: tree_sitter::Point {
                            row: start.row,
                            column: start.column + 1,
                        },
                        end_point: tree_sitter::Point {
                            row: end.row,
                            column: end.column.saturating_sub(1),
                        },
                    });
                }
                "mod_item" | "impl_item" | "trait_item" | "foreign_mod_item" => {
                    if let Some(body) = child.child_by_field_name("body") {
                        lists.push(body);
                    }
                }
                _ => {}
            }
        }
    }
    // In file order, whatever order the stack visited them in.
    out.sort_unstable_by_key(|range| range.start_byte);
}

/// A macro call's body: its token tree (`cfg_rt! { … }`, `assert!(…)`).
fn macro_body(call: Node) -> Option<Node> {
    let last = u32::try_from(call.named_child_count().checked_sub(1)?).ok()?;
    call.named_child(last)
        .filter(|body| body.kind() == "token_tree")
}

fn count_errors(root: Node) -> (u32, Vec<u32>) {
    if !root.has_error() {
        return (0, Vec::new());
    }
    let mut count = 0u32;
    let mut lines = Vec::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if node.is_error() || node.is_missing() {
            count += 1;
            if lines.len() < MAX_ERROR_LINES {
                lines.push(node.start_position().row as u32);
            }
            continue;
        }
        if node.has_error() {
            let mut walk = node.walk();
            stack.extend(
                node.children(&mut walk)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev(),
            );
        }
    }
    lines.sort_unstable();
    (count.max(1), lines)
}

fn span_of(node: Node) -> Span {
    Span {
        start_byte: node.start_byte() as u32,
        end_byte: node.end_byte() as u32,
        start_line: node.start_position().row as u32,
        end_line: node.end_position().row as u32,
    }
}

struct RawDef<'t> {
    kind: SymbolKind,
    node: Node<'t>,
    name: String,
    name_span: Span,
    member_scope: String,
    /// Go method receiver type: qualifies and parents the method.
    receiver_scope: Option<String>,
    trait_node: Option<Node<'t>>,
}

struct RawRef {
    role: RefRole,
    name: String,
    receiver: Option<String>,
    qualifier: Option<String>,
    site: Span,
    site_flags: u8,
}

struct RawBinding {
    name: String,
    type_name: Option<String>,
    items: Option<String>,
    initializer: Option<String>,
    /// The initialising expression's text (clipped).
    value: Option<String>,
    /// The binding is an element of `value` (a `for` loop).
    element: bool,
    site: Span,
    /// A TypeScript parameter property (`constructor(private repo: Repo)`).
    parameter_property: bool,
}

struct Collector<'s, 't> {
    language: Language,
    source: &'s str,
    defs: Vec<RawDef<'t>>,
    refs: Vec<RawRef>,
    bindings: Vec<RawBinding>,
    imports: Vec<Import>,
    test_scopes: Vec<Span>,
    package: Option<String>,
    parents: Parents<'t>,
    returned: ReturnedNames<'s>,
}

impl<'s, 't> Collector<'s, 't> {
    fn new(language: Language, source: &'s str, parents: Parents<'t>) -> Self {
        Collector {
            language,
            source,
            parents,
            returned: ReturnedNames::default(),
            defs: Vec::new(),
            refs: Vec::new(),
            bindings: Vec::new(),
            imports: Vec::new(),
            test_scopes: Vec::new(),
            package: None,
        }
    }

    fn text(&self, node: Node) -> &'s str {
        self.source.get(node.byte_range()).unwrap_or("")
    }

    fn clipped(&self, node: Node) -> String {
        let text = self.text(node);
        match text.char_indices().nth(MAX_AUX_TEXT) {
            Some((cut, _)) => text[..cut].to_string(),
            None => text.to_string(),
        }
    }

    fn add_match(&mut self, captures: &[(&str, Node<'t>)]) {
        let find = |name: &str| {
            captures
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, node)| *node)
        };
        let Some((main, node)) = captures.iter().copied().find(|(n, _)| {
            n.starts_with("def.")
                || n.starts_with("ref.")
                || *n == "import"
                || *n == "package"
                || *n == "test.scope"
                || *n == "binding"
        }) else {
            return;
        };
        match main {
            "package" => self.package = Some(self.text(node).to_string()),
            "test.scope" => self.test_scopes.push(span_of(node)),
            "import" => self.add_import(node, &find),
            "binding" => {
                let Some(name) = find("binding.name") else {
                    return;
                };
                let mut text = self.text(name).to_string();
                let attribute = self
                    .parents
                    .of(name)
                    .is_some_and(|p| p.kind() == "attribute");
                if attribute && self.language == Language::Python {
                    text = format!("self.{text}");
                }
                let mut walk = node.walk();
                let parameter_property = node.kind() == "required_parameter"
                    && node
                        .children(&mut walk)
                        .any(|c| c.kind() == "accessibility_modifier");
                let iterable = find("binding.iterable");
                let value = find("binding.value").or(iterable).map(|v| self.clipped(v));
                self.bindings.push(RawBinding {
                    name: text,
                    type_name: find("binding.type").and_then(|t| normalize_type(self.text(t))),
                    items: find("binding.type").and_then(|t| collection_items(self.text(t))),
                    initializer: find("binding.ctor").and_then(|c| normalize_type(self.text(c))),
                    value,
                    element: iterable.is_some(),
                    site: span_of(name),
                    parameter_property,
                });
            }
            m if m.starts_with("def.") => self.add_def(&m[4..], node, &find),
            m => {
                let role = match &m[4..] {
                    "call" => RefRole::Call,
                    "type" => RefRole::TypeUse,
                    "implement" => RefRole::Implement,
                    "inherit" => RefRole::Inherit,
                    "write" => RefRole::Write,
                    _ => RefRole::Read,
                };
                let Some(name_node) = find("name") else {
                    return;
                };
                let name = self.text(name_node);
                if name.is_empty() {
                    return;
                }
                let site_flags = if role == RefRole::Call {
                    call_site_flags(
                        self.language,
                        node,
                        self.source,
                        &self.parents,
                        &mut self.returned,
                    )
                } else {
                    0
                };
                self.refs.push(RawRef {
                    role,
                    name: name.to_string(),
                    receiver: find("receiver").map(|n| self.clipped(n)),
                    qualifier: find("qualifier").map(|n| self.clipped(n)),
                    site: span_of(name_node),
                    site_flags,
                });
            }
        }
    }

    fn add_def(&mut self, kind: &str, node: Node<'t>, find: &dyn Fn(&str) -> Option<Node<'t>>) {
        let kind = match kind {
            "function" => SymbolKind::Function,
            "method" => SymbolKind::Method,
            "class" => SymbolKind::Class,
            "struct" => SymbolKind::Struct,
            "enum" => SymbolKind::Enum,
            "interface" => SymbolKind::Interface,
            "impl" => SymbolKind::Impl,
            "field" => SymbolKind::Field,
            "constant" => SymbolKind::Constant,
            "type" => SymbolKind::TypeAlias,
            "macro" => SymbolKind::Macro,
            "module" => SymbolKind::Module,
            _ => SymbolKind::Variable,
        };
        let scope = find("scope");
        let trait_node = find("trait");
        let (name, name_span, member_scope) = if kind == SymbolKind::Impl {
            let Some(scope) = scope else { return };
            let self_type = strip_generics(self.text(scope));
            let name = match trait_node {
                Some(t) => format!("impl {} for {}", strip_generics(self.text(t)), self_type),
                None => format!("impl {self_type}"),
            };
            let member = crate::syntax::facts::last_segment(&self_type).to_string();
            (name, span_of(scope), member)
        } else {
            let Some(name_node) = find("name") else {
                return;
            };
            let name = self.text(name_node).to_string();
            if name.is_empty() {
                return;
            }
            (name.clone(), span_of(name_node), name)
        };
        let receiver_scope = if kind == SymbolKind::Impl {
            None
        } else {
            scope.map(|s| self.text(s).to_string())
        };
        self.defs.push(RawDef {
            kind,
            node,
            name,
            name_span,
            member_scope,
            receiver_scope,
            trait_node,
        });
    }

    fn add_import(&mut self, node: Node<'t>, find: &dyn Fn(&str) -> Option<Node<'t>>) {
        let site = span_of(node);
        if let Some(tree) = find("import.tree") {
            let mut out = Vec::new();
            self.use_tree(tree, "", site, &mut out);
            self.imports.extend(out);
            return;
        }
        let Some(module) = find("import.module") else {
            return;
        };
        let module_text = self.text(module).trim_matches(['"', '`', '\'']).to_string();
        let wildcard = find("import.wildcard").is_some();
        let alias = find("import.alias").map(|n| self.text(n).to_string());
        let mut import = Import {
            module: module_text,
            name: find("import.name").map(|n| self.text(n).to_string()),
            alias,
            wildcard,
            site,
        };
        if let Some(default) = find("import.default") {
            import.name = Some("default".to_string());
            import.alias = Some(self.text(default).to_string());
        }
        // Java names the class in the path: `import a.b.C;` binds `C` from package `a.b`.
        if self.language == Language::Java
            && !wildcard
            && let Some((package, class)) = import.module.rsplit_once('.')
        {
            import.name = Some(class.to_string());
            import.module = package.to_string();
        }
        self.imports.push(import);
    }

    /// Flattens a Rust `use` tree into one `Import` per bound name.
    fn use_tree(&self, node: Node, prefix: &str, site: Span, out: &mut Vec<Import>) {
        let join = |a: &str, b: &str| {
            if a.is_empty() {
                b.to_string()
            } else {
                format!("{a}::{b}")
            }
        };
        match node.kind() {
            "scoped_use_list" => {
                let path = node
                    .child_by_field_name("path")
                    .map(|p| self.text(p))
                    .unwrap_or("");
                let prefix = join(prefix, path);
                if let Some(list) = node.child_by_field_name("list") {
                    self.use_tree(list, &prefix, site, out);
                }
            }
            "use_list" => {
                let mut walk = node.walk();
                for child in node.named_children(&mut walk) {
                    self.use_tree(child, prefix, site, out);
                }
            }
            "use_as_clause" => {
                let path = node
                    .child_by_field_name("path")
                    .map(|p| self.text(p))
                    .unwrap_or("");
                let alias = node
                    .child_by_field_name("alias")
                    .map(|a| self.text(a).to_string());
                let mut import = split_rust_path(&join(prefix, path), site);
                import.alias = alias;
                out.push(import);
            }
            "use_wildcard" => {
                let text = self.text(node).trim_end_matches('*').trim_end_matches("::");
                out.push(Import {
                    module: join(prefix, text),
                    name: None,
                    alias: None,
                    wildcard: true,
                    site,
                });
            }
            "self" => out.push(Import {
                module: prefix.to_string(),
                name: None,
                alias: None,
                wildcard: false,
                site,
            }),
            "identifier" | "scoped_identifier" | "crate" | "super" => {
                out.push(split_rust_path(&join(prefix, self.text(node)), site));
            }
            _ => {}
        }
    }

    fn finish(self) -> FileFacts {
        let language = self.language;
        let source = self.source;
        let mut raw = self.defs;
        // The same node may be tagged by two patterns (e.g. a top-level arrow function is
        // both a function and a variable): keep the most specific kind.
        raw.sort_by(|a, b| {
            (a.node.start_byte(), std::cmp::Reverse(a.node.end_byte()))
                .cmp(&(b.node.start_byte(), std::cmp::Reverse(b.node.end_byte())))
                .then(generality(a.kind).cmp(&generality(b.kind)))
        });
        raw.dedup_by(|b, a| a.node.id() == b.node.id() && a.name == b.name);

        // A span is in test scope when some scope starts at or before it and ends at or
        // after it: by start, the furthest end so far decides (a file of thousands of
        // `#[test]` functions is as many scopes).
        let mut scopes: Vec<(u32, u32)> = self
            .test_scopes
            .iter()
            .map(|t| (t.start_byte, t.end_byte))
            .collect();
        scopes.sort_unstable();
        let mut furthest = 0;
        for scope in &mut scopes {
            furthest = furthest.max(scope.1);
            scope.1 = furthest;
        }
        let in_a_test_scope = |span: &Span| {
            let before = scopes.partition_point(|&(start, _)| start <= span.start_byte);
            before > 0 && scopes[before - 1].1 >= span.end_byte
        };
        let mut defs: Vec<Definition> = Vec::with_capacity(raw.len());
        let mut stack: Vec<usize> = Vec::new();
        for r in &raw {
            let span = span_of(r.node);
            while let Some(&top) = stack.last() {
                if defs[top].span.contains(&span) {
                    break;
                }
                stack.pop();
            }
            let mut parent = stack.last().map(|&p| p as u32);
            let mut kind = r.kind;
            if let Some(p) = parent {
                let parent_def = &defs[p as usize];
                if kind == SymbolKind::Function && parent_def.kind.is_type_container() {
                    kind = SymbolKind::Method;
                }
                // Locals inside functions are not symbols of the graph.
                if parent_def.kind.is_callable() && matches!(kind, SymbolKind::Variable) {
                    continue;
                }
            }
            if kind == SymbolKind::Variable && is_constant_name(&r.name) {
                kind = SymbolKind::Constant;
            }
            if parent.is_none()
                && let Some(receiver) = &r.receiver_scope
            {
                parent = defs
                    .iter()
                    .position(|d| d.kind.is_type() && &d.name == receiver)
                    .map(|i| i as u32);
            }
            let qualified = match (parent, &r.receiver_scope) {
                (Some(p), _) => format!(
                    "{}{}{}",
                    qualified_scope(&defs, p as usize, language),
                    language.separator(),
                    r.name
                ),
                (None, Some(receiver)) => format!("{receiver}{}{}", language.separator(), r.name),
                (None, None) => r.name.clone(),
            };
            let (outer, doc) = wrapper_and_doc(r.node, language, source, &self.parents);
            let mut full_span = span_of(outer);
            full_span.end_byte = full_span.end_byte.max(span.end_byte);
            full_span.end_line = full_span.end_line.max(span.end_line);
            let in_test_scope =
                in_a_test_scope(&span) || parent.is_some_and(|p| defs[p as usize].in_test_scope);
            defs.push(Definition {
                kind,
                name: r.name.clone(),
                qualified,
                member_scope: r.member_scope.clone(),
                span: full_span,
                name_span: r.name_span,
                signature: signature_of(r.node, full_span, source),
                doc,
                parent,
                visibility: visibility_of(r.node, outer, &r.name, language, source),
                in_test_scope,
                returns: kind
                    .is_callable()
                    .then(|| return_type(r.node, language, source))
                    .flatten(),
                declares_only: kind.is_callable() && declares_only(r.node, outer, source),
            });
            if kind.is_type_container() || kind.is_callable() || matches!(kind, SymbolKind::Module)
            {
                stack.push(defs.len() - 1);
            }
        }

        // Trait implementations declared by Rust impls.
        let mut refs = self.refs;
        for r in &raw {
            if let Some(t) = r.trait_node {
                let (name_node, qualifier) = type_name_and_qualifier(t, source);
                refs.push(RawRef {
                    role: RefRole::Implement,
                    name: source.get(name_node.byte_range()).unwrap_or("").to_string(),
                    receiver: None,
                    qualifier,
                    site: span_of(name_node),
                    site_flags: 0,
                });
            }
        }

        let def_name_sites: std::collections::HashSet<(u32, u32)> = defs
            .iter()
            .map(|d| (d.name_span.start_byte, d.name_span.end_byte))
            .collect();
        refs.retain(|r| !def_name_sites.contains(&(r.site.start_byte, r.site.end_byte)));
        refs.sort_by(|a, b| {
            (a.site.start_byte, a.site.end_byte, a.role.specificity())
                .cmp(&(b.site.start_byte, b.site.end_byte, b.role.specificity()))
                .then(b.qualifier.is_some().cmp(&a.qualifier.is_some()))
                .then(b.receiver.is_some().cmp(&a.receiver.is_some()))
        });
        refs.dedup_by(|b, a| a.site == b.site);

        let refs = refs
            .into_iter()
            .map(|r| Reference {
                from: enclosing_def(&defs, &r.site),
                role: r.role,
                name: r.name,
                receiver: r.receiver,
                qualifier: r.qualifier,
                site: r.site,
                site_flags: r.site_flags,
            })
            .collect();

        let bindings = bindings_in_scope(&defs, self.bindings);
        let mut imports = self.imports;
        imports.sort_by(|a, b| {
            (a.site.start_byte, &a.module, &a.name, &a.alias).cmp(&(
                b.site.start_byte,
                &b.module,
                &b.name,
                &b.alias,
            ))
        });
        imports.dedup();

        FileFacts {
            parse_status: ParseStatus::Complete,
            limit: None,
            error_count: 0,
            error_lines: Vec::new(),
            line_count: 0,
            package: self.package,
            defs,
            refs,
            imports,
            bindings,
        }
    }
}

/// Places bindings in their scope: the innermost enclosing function, type or module —
/// fields and variables are not scopes — and `self.x` / parameter properties in the
/// enclosing type, as `self.x` / `this.x`.
fn bindings_in_scope(defs: &[Definition], mut raw: Vec<RawBinding>) -> Vec<TypeBinding> {
    // One binding per (site, name): several patterns may describe it, each adding a part.
    raw.sort_by(|a, b| (a.site.start_byte, &a.name).cmp(&(b.site.start_byte, &b.name)));
    let mut merged: Vec<RawBinding> = Vec::with_capacity(raw.len());
    for b in raw {
        match merged.last_mut() {
            Some(a) if a.site == b.site && a.name == b.name => {
                a.type_name = a.type_name.take().or(b.type_name);
                a.items = a.items.take().or(b.items);
                a.initializer = a.initializer.take().or(b.initializer);
                a.value = a.value.take().or(b.value);
                a.element |= b.element;
                a.parameter_property |= b.parameter_property;
            }
            _ => merged.push(b),
        }
    }
    let raw = merged;
    let scope_of = |site: &Span| {
        let mut scope = enclosing_def(defs, site);
        while let Some(s) = scope {
            if !matches!(
                defs[s as usize].kind,
                SymbolKind::Field | SymbolKind::Variable | SymbolKind::Constant
            ) {
                break;
            }
            scope = defs[s as usize].parent;
        }
        scope
    };
    let type_scope = |mut scope: Option<u32>| {
        while let Some(s) = scope {
            if defs[s as usize].kind.is_type_container() {
                return Some(s);
            }
            scope = defs[s as usize].parent;
        }
        None
    };
    let mut out = Vec::with_capacity(raw.len());
    for b in raw {
        let value_scope = scope_of(&b.site);
        let (name, scope) = if b.name.starts_with("self.") {
            (b.name.clone(), type_scope(value_scope))
        } else {
            (b.name.clone(), value_scope)
        };
        if b.parameter_property {
            out.push(TypeBinding {
                scope: type_scope(scope),
                name: format!("this.{name}"),
                type_name: b.type_name.clone(),
                items: b.items.clone(),
                initializer: b.initializer.clone(),
                site: b.site,
                value: Some(name.clone()),
                value_scope,
                element: false,
            });
        }
        out.push(TypeBinding {
            scope,
            name,
            type_name: b.type_name,
            items: b.items,
            initializer: b.initializer,
            site: b.site,
            value: b.value,
            value_scope,
            element: b.element,
        });
    }
    out
}

#[cfg(test)]
mod tests;
