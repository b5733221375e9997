//! The query engine extraction runs: the `.scm` subset Atlas's queries use, compiled
//! against a grammar's node kinds and matched by walking the tree.
//!
//! Why not `tree_sitter::Query`: constructing one analyses every pattern against the
//! grammar's parse table, which costs 10–120 ms per language and process (TypeScript's
//! query 117 ms, Python's and Rust's ~50 ms on this machine) — more than a one-file edit's
//! whole build on a small repository. Compiling this engine's patterns takes
//! microseconds. The matches are tree-sitter's for every pattern Atlas writes
//! (`extract::tests::the_pattern_engine_extracts_what_tree_sitter_queries_extract`
//! compares the facts of both engines over the fixtures and the corpus).
//!
//! The subset: node patterns `(kind child…)`, the wildcards `(_)` (any named node) and
//! `_` (any node), neither of which matches an ERROR node, anonymous nodes `"text"`, fields `field: pattern`, negated fields
//! `!field`, alternations `[…]`, the optional quantifier `?`, anchors `.`, captures
//! `@name` (several per node), top-level sibling groups `((a) . (b))`, and the `#eq?`
//! predicate between a capture and a string. Anything else is a `QueryDefect`.
//!
//! Semantics, as tree-sitter's: child patterns match children in order, skipping any
//! between them unless anchored; an anchor before the first (after the last) child
//! pattern requires the first (last) named child, between two the next named sibling.
//! Every way a pattern matches is a match, except that of two matches of one pattern at
//! one node where one's captures contain the other's, only the larger is kept (so an
//! optional child is captured when present).

use tree_sitter::{Language as Grammar, Node};

use super::QueryDefect;

/// Matches of one pattern at one node beyond this are dropped, and the extraction
/// reports it (a generated file with thousands of names on each side of an assignment
/// would otherwise multiply them).
pub(crate) const MAX_MATCHES_PER_NODE: usize = 10_000;

/// A compiled query: patterns by the kind of node they start at.
pub(crate) struct Patterns {
    capture_names: Vec<String>,
    patterns: Vec<Pattern>,
    /// Patterns whose root is a node pattern, by node kind id.
    by_kind: Vec<Vec<u32>>,
    /// Patterns whose root may be any node (a wildcard or an alternation of wildcards).
    any_kind: Vec<u32>,
    /// Top-level sibling groups, matched against every node's children.
    groups: Vec<u32>,
}

struct Pattern {
    root: Root,
    /// (capture, text): the captured node's text must equal it.
    equal: Vec<(u16, String)>,
}

enum Root {
    Node(Step),
    Siblings(Children),
}

struct Step {
    test: Test,
    field: Option<u16>,
    negated: Vec<std::num::NonZeroU16>,
    captures: Vec<u16>,
    children: Children,
}

enum Test {
    /// Named node of one of these kind ids (a name may have several ids: aliases).
    Kinds(Vec<u16>),
    Anonymous(String),
    AnyNamed,
    Any,
    Alternatives(Vec<Step>),
}

#[derive(Default)]
struct Children {
    items: Vec<ChildStep>,
    anchor_first: bool,
    anchor_last: bool,
}

struct ChildStep {
    step: Step,
    optional: bool,
    /// An anchor between this and the previous child pattern.
    adjacent: bool,
}

/// One match: (capture index, node), in pattern order.
pub(crate) type Captures<'t> = Vec<(u16, Node<'t>)>;

impl Patterns {
    pub(crate) fn compile(grammar: &Grammar, source: &str) -> Result<Patterns, QueryDefect> {
        let mut parser = Parser {
            text: source.as_bytes(),
            at: 0,
            grammar,
            capture_names: Vec::new(),
            source,
        };
        let mut patterns = Vec::new();
        loop {
            parser.skip_space();
            if parser.at >= parser.text.len() {
                break;
            }
            patterns.push(parser.pattern()?);
        }
        let kinds = grammar.node_kind_count();
        let mut by_kind = vec![Vec::new(); kinds];
        let mut any_kind = Vec::new();
        let mut groups = Vec::new();
        for (index, pattern) in patterns.iter().enumerate() {
            let index = index as u32;
            match &pattern.root {
                Root::Siblings(_) => groups.push(index),
                Root::Node(step) => {
                    let mut roots = Vec::new();
                    if root_kinds(step, &mut roots) {
                        roots.sort_unstable();
                        roots.dedup();
                        for kind in roots {
                            by_kind[usize::from(kind)].push(index);
                        }
                    } else {
                        any_kind.push(index);
                    }
                }
            }
        }
        Ok(Patterns {
            capture_names: parser.capture_names,
            patterns,
            by_kind,
            any_kind,
            groups,
        })
    }

    pub(crate) fn capture_names(&self) -> Vec<&str> {
        self.capture_names.iter().map(String::as_str).collect()
    }

    pub(crate) fn capture_name(&self, capture: u16) -> &str {
        &self.capture_names[usize::from(capture)]
    }

    /// Every match under `root`, pattern starts no deeper than `max_start_depth`, in
    /// document order of the node a match starts at (then pattern order). Calls `each`
    /// with a match's captures; returns whether a node's matches were cut at
    /// [`MAX_MATCHES_PER_NODE`].
    pub(crate) fn for_each_match<'t>(
        &self,
        root: Node<'t>,
        source: &[u8],
        max_start_depth: u32,
        mut each: impl FnMut(&Captures<'t>),
    ) -> bool {
        let mut cut = false;
        let mut found: Vec<Captures<'t>> = Vec::new();
        let mut kids = Vec::new();
        preorder(root, |node, depth| {
            if depth <= max_start_depth {
                let kind = usize::from(node.kind_id());
                let indexed = self.by_kind.get(kind).map_or(&[][..], Vec::as_slice);
                for &index in indexed.iter().chain(&self.any_kind) {
                    let pattern = &self.patterns[index as usize];
                    let Root::Node(step) = &pattern.root else {
                        continue;
                    };
                    found.clear();
                    match_step(step, node, None, &mut found);
                    cut |= self.emit(pattern, &mut found, source, &mut each);
                }
            }
            if depth < max_start_depth && !self.groups.is_empty() && node.child_count() > 0 {
                children_into(node, &mut kids);
                for &index in &self.groups {
                    let pattern = &self.patterns[index as usize];
                    let Root::Siblings(children) = &pattern.root else {
                        continue;
                    };
                    found.clear();
                    match_children(children, &kids, &mut found);
                    cut |= self.emit(pattern, &mut found, source, &mut each);
                }
            }
        });
        cut
    }

    /// Filters one pattern's matches at one node (predicates, then the larger of two
    /// nested matches) and hands them on; true when some were cut.
    fn emit<'t>(
        &self,
        pattern: &Pattern,
        found: &mut Vec<Captures<'t>>,
        source: &[u8],
        each: &mut impl FnMut(&Captures<'t>),
    ) -> bool {
        found.retain(|captures| {
            pattern.equal.iter().all(|(capture, text)| {
                captures
                    .iter()
                    .filter(|(c, _)| c == capture)
                    .all(|(_, node)| source.get(node.byte_range()) == Some(text.as_bytes()))
            })
        });
        let sizes = found.iter().map(Vec::len);
        if sizes.clone().min() != sizes.max() {
            // A match is dropped when a larger one holds every capture of it. The
            // candidates are the matches holding its rarest (capture, node) pair.
            let mut holding: std::collections::HashMap<(u16, usize), Vec<usize>> =
                std::collections::HashMap::new();
            for (index, captures) in found.iter().enumerate() {
                for &(capture, node) in captures {
                    holding.entry((capture, node.id())).or_default().push(index);
                }
            }
            let contained = |index: usize, small: &Captures| {
                let Some(candidates) = small
                    .iter()
                    .filter_map(|&(c, n)| holding.get(&(c, n.id())))
                    .min_by_key(|list| list.len())
                else {
                    return false;
                };
                candidates.iter().any(|&other| {
                    let large = &found[other];
                    other != index
                        && small.len() < large.len()
                        && small
                            .iter()
                            .all(|(c, n)| large.iter().any(|(d, m)| c == d && n.id() == m.id()))
                })
            };
            let keep: Vec<bool> = found
                .iter()
                .enumerate()
                .map(|(index, captures)| !contained(index, captures))
                .collect();
            let mut at = 0;
            found.retain(|_| {
                at += 1;
                keep[at - 1]
            });
        }
        let cut = found.len() > MAX_MATCHES_PER_NODE;
        for captures in found.iter().take(MAX_MATCHES_PER_NODE) {
            each(captures);
        }
        cut
    }
}

/// Visits every node under `root` (itself included) in document order with its depth
/// (`root`: 0), by a tree cursor: linear, no recursion.
pub(crate) fn preorder<'t>(root: Node<'t>, mut visit: impl FnMut(Node<'t>, u32)) {
    let mut cursor = root.walk();
    let mut depth = 0u32;
    loop {
        visit(cursor.node(), depth);
        if cursor.goto_first_child() {
            depth += 1;
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return;
            }
            depth -= 1;
        }
    }
}

/// The kind ids a root step can start at; false when it can start at any node.
fn root_kinds(step: &Step, out: &mut Vec<u16>) -> bool {
    match &step.test {
        Test::Kinds(kinds) => {
            out.extend(kinds);
            true
        }
        Test::Alternatives(steps) => steps.iter().all(|s| root_kinds(s, out)),
        Test::Anonymous(_) | Test::AnyNamed | Test::Any => false,
    }
}

/// A node's children with their field ids (0: none).
fn children_of(node: Node<'_>) -> Vec<(Node<'_>, u16)> {
    let mut kids = Vec::with_capacity(node.child_count() as usize);
    children_into(node, &mut kids);
    kids
}

fn children_into<'t>(node: Node<'t>, kids: &mut Vec<(Node<'t>, u16)>) {
    kids.clear();
    let mut cursor = node.walk();
    if cursor.goto_first_child() {
        loop {
            let field = cursor.field_id().map_or(0, |f| f.get());
            kids.push((cursor.node(), field));
            if !cursor.goto_next_sibling() {
                break;
            }
        }
    }
}

fn test_node(test: &Test, node: Node<'_>) -> bool {
    match test {
        Test::Kinds(kinds) => node.is_named() && kinds.contains(&node.kind_id()),
        Test::Anonymous(text) => !node.is_named() && node.kind() == text,
        // Tree-sitter's wildcards never match an ERROR node.
        Test::AnyNamed => node.is_named() && !node.is_error(),
        Test::Any => !node.is_error(),
        Test::Alternatives(_) => true,
    }
}

/// Appends every way `step` matches `node` (whose field in its parent is `field`).
fn match_step<'t>(step: &Step, node: Node<'t>, field: Option<u16>, out: &mut Vec<Captures<'t>>) {
    if step.field.is_some() && step.field != field {
        return;
    }
    if let Test::Alternatives(alternatives) = &step.test {
        let start = out.len();
        for alternative in alternatives {
            match_step(alternative, node, field, out);
        }
        for captures in &mut out[start..] {
            captures.extend(step.captures.iter().map(|&c| (c, node)));
        }
        return;
    }
    if !test_node(&step.test, node) {
        return;
    }
    if step
        .negated
        .iter()
        .any(|f| node.child_by_field_id(f.get()).is_some())
    {
        return;
    }
    let own: Captures<'t> = step.captures.iter().map(|&c| (c, node)).collect();
    if step.children.items.is_empty() {
        out.push(own);
        return;
    }
    let kids = children_of(node);
    let start = out.len();
    match_children(&step.children, &kids, out);
    for captures in &mut out[start..] {
        captures.splice(0..0, own.iter().copied());
    }
}

/// Appends every way the child patterns match a sequence of children, in order.
fn match_children<'t>(children: &Children, kids: &[(Node<'t>, u16)], out: &mut Vec<Captures<'t>>) {
    let mut partial = Vec::new();
    descend(children, kids, 0, 0, None, &mut partial, out);
}

fn descend<'t>(
    children: &Children,
    kids: &[(Node<'t>, u16)],
    item: usize,
    from: usize,
    previous: Option<usize>,
    partial: &mut Captures<'t>,
    out: &mut Vec<Captures<'t>>,
) {
    if out.len() > MAX_MATCHES_PER_NODE {
        return;
    }
    let Some(child) = children.items.get(item) else {
        let last_ok = !children.anchor_last
            || previous.is_some_and(|p| kids[p + 1..].iter().all(|(k, _)| !k.is_named()));
        if last_ok {
            out.push(partial.clone());
        }
        return;
    };
    let anchored = (item == 0 && children.anchor_first) || (item > 0 && child.adjacent);
    for (at, &(kid, field)) in kids.iter().enumerate().skip(from) {
        let mut one = Vec::new();
        match_step(&child.step, kid, (field != 0).then_some(field), &mut one);
        for captures in one {
            let mark = partial.len();
            partial.extend(captures);
            descend(children, kids, item + 1, at + 1, Some(at), partial, out);
            partial.truncate(mark);
        }
        // Anchored: only the first named node after the previous match may match.
        if anchored && kid.is_named() {
            break;
        }
    }
    if child.optional {
        descend(children, kids, item + 1, from, previous, partial, out);
    }
}

struct Parser<'g, 's> {
    text: &'s [u8],
    source: &'s str,
    at: usize,
    grammar: &'g Grammar,
    capture_names: Vec<String>,
}

impl Parser<'_, '_> {
    fn defect(&self, what: &str) -> QueryDefect {
        let line = self.source[..self.at.min(self.source.len())]
            .matches('\n')
            .count()
            + 1;
        QueryDefect(format!("line {line}: {what}"))
    }

    fn skip_space(&mut self) {
        while let Some(&c) = self.text.get(self.at) {
            if c == b';' {
                while self.text.get(self.at).is_some_and(|&c| c != b'\n') {
                    self.at += 1;
                }
            } else if c.is_ascii_whitespace() {
                self.at += 1;
            } else {
                break;
            }
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_space();
        self.text.get(self.at).copied()
    }

    fn expect(&mut self, c: u8) -> Result<(), QueryDefect> {
        if self.peek() == Some(c) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.defect(&format!("expected `{}`", c as char)))
        }
    }

    fn identifier(&mut self) -> Result<&str, QueryDefect> {
        self.skip_space();
        let start = self.at;
        while self.text.get(self.at).is_some_and(|&c| {
            c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-' | b'?' | b'!')
        }) {
            self.at += 1;
        }
        if start == self.at {
            return Err(self.defect("expected a name"));
        }
        Ok(&self.source[start..self.at])
    }

    fn string(&mut self) -> Result<String, QueryDefect> {
        self.expect(b'"')?;
        let mut out = String::new();
        loop {
            match self.text.get(self.at) {
                None => return Err(self.defect("unterminated string")),
                Some(b'"') => {
                    self.at += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    let escaped = self.text.get(self.at + 1).copied();
                    out.push(match escaped {
                        Some(b'n') => '\n',
                        Some(b't') => '\t',
                        Some(c) => c as char,
                        None => return Err(self.defect("unterminated string")),
                    });
                    self.at += 2;
                }
                Some(_) => {
                    let rest = &self.source[self.at..];
                    let c = rest.chars().next().unwrap_or('"');
                    out.push(c);
                    self.at += c.len_utf8();
                }
            }
        }
    }

    fn capture(&mut self) -> Result<u16, QueryDefect> {
        self.expect(b'@')?;
        let name = self.identifier()?.to_string();
        let index = match self.capture_names.iter().position(|n| *n == name) {
            Some(i) => i,
            None => {
                self.capture_names.push(name);
                self.capture_names.len() - 1
            }
        };
        Ok(index as u16)
    }

    fn field_id(&mut self, name: &str) -> Result<u16, QueryDefect> {
        self.grammar
            .field_id_for_name(name)
            .map(|f| f.get())
            .ok_or_else(|| self.defect(&format!("unknown field `{name}`")))
    }

    /// One top-level pattern with its predicates.
    fn pattern(&mut self) -> Result<Pattern, QueryDefect> {
        let mut equal = Vec::new();
        // `((a) . (b) (#eq? …))`: a group of siblings.
        let is_group = self.peek() == Some(b'(')
            && matches!(
                self.text
                    .get(self.at + 1..)
                    .and_then(|rest| rest.iter().find(|c| !c.is_ascii_whitespace())),
                Some(b'(' | b'[' | b'"')
            );
        let root = if is_group {
            self.at += 1;
            let (children, negated) = self.children(&mut equal)?;
            self.expect(b')')?;
            if !negated.is_empty() {
                return Err(self.defect("a negated field outside a node"));
            }
            let mut children = children;
            let alone =
                children.items.len() == 1 && !children.anchor_first && !children.anchor_last;
            match children.items.pop() {
                Some(child) if alone => {
                    if child.optional {
                        return Err(self.defect("a pattern cannot be optional"));
                    }
                    Root::Node(child.step)
                }
                popped => {
                    children.items.extend(popped);
                    Root::Siblings(children)
                }
            }
        } else {
            let (step, optional) = self.item(&mut equal)?;
            if optional {
                return Err(self.defect("a pattern cannot be optional"));
            }
            Root::Node(step)
        };
        Ok(Pattern { root, equal })
    }

    /// Child patterns up to a closing parenthesis (not consumed), with anchors,
    /// fields, negated fields and predicates.
    #[allow(clippy::type_complexity)]
    fn children(
        &mut self,
        equal: &mut Vec<(u16, String)>,
    ) -> Result<(Children, Vec<std::num::NonZeroU16>), QueryDefect> {
        let mut children = Children::default();
        let mut anchor = false;
        let mut field: Option<u16> = None;
        let mut negated: Vec<std::num::NonZeroU16> = Vec::new();
        loop {
            match self.peek() {
                None => return Err(self.defect("unclosed pattern")),
                Some(b')') => {
                    if field.is_some() {
                        return Err(self.defect("a field without a pattern"));
                    }
                    children.anchor_last = anchor;
                    return Ok((children, negated));
                }
                Some(b'.') => {
                    self.at += 1;
                    if children.items.is_empty() {
                        children.anchor_first = true;
                    } else {
                        anchor = true;
                    }
                }
                Some(b'!') => {
                    self.at += 1;
                    let name = self.identifier()?.to_string();
                    let id = self.field_id(&name)?;
                    negated.extend(std::num::NonZeroU16::new(id));
                }
                Some(b'(') if self.text.get(self.at + 1) == Some(&b'#') => {
                    self.predicate(equal)?;
                }
                Some(c) if c.is_ascii_alphabetic() && field.is_none() => {
                    let name = self.identifier()?.to_string();
                    if name == "_" {
                        return Err(self.defect("a bare `_` child is not supported"));
                    }
                    self.expect(b':')?;
                    field = Some(self.field_id(&name)?);
                }
                Some(_) => {
                    let (mut step, optional) = self.item(equal)?;
                    if let Some(f) = field.take() {
                        step.field = Some(f);
                    }
                    children.items.push(ChildStep {
                        step,
                        optional,
                        adjacent: std::mem::take(&mut anchor),
                    });
                }
            }
        }
    }

    fn predicate(&mut self, equal: &mut Vec<(u16, String)>) -> Result<(), QueryDefect> {
        self.expect(b'(')?;
        self.expect(b'#')?;
        let name = self.identifier()?.to_string();
        if name != "eq?" {
            return Err(self.defect(&format!("unsupported predicate #{name}")));
        }
        let capture = self.capture()?;
        self.skip_space();
        let text = self.string()?;
        self.expect(b')')?;
        equal.push((capture, text));
        Ok(())
    }

    /// A node, alternation or anonymous node with its quantifier and captures.
    fn item(&mut self, equal: &mut Vec<(u16, String)>) -> Result<(Step, bool), QueryDefect> {
        let mut step = match self.peek() {
            Some(b'(') => self.node(equal)?,
            Some(b'[') => {
                self.at += 1;
                let mut alternatives = Vec::new();
                while self.peek() != Some(b']') {
                    if self.peek().is_none() {
                        return Err(self.defect("unclosed alternation"));
                    }
                    let (alternative, optional) = self.item(equal)?;
                    if optional {
                        return Err(self.defect("an optional alternative"));
                    }
                    alternatives.push(alternative);
                }
                self.at += 1;
                leaf(Test::Alternatives(alternatives))
            }
            Some(b'"') => leaf(Test::Anonymous(self.string()?)),
            Some(b'_') => {
                self.at += 1;
                leaf(Test::Any)
            }
            _ => return Err(self.defect("expected a pattern")),
        };
        let mut optional = false;
        loop {
            match self.peek() {
                Some(b'?') => {
                    self.at += 1;
                    optional = true;
                }
                Some(b'*' | b'+') => {
                    return Err(self.defect("only the `?` quantifier is supported"));
                }
                Some(b'@') => {
                    let capture = self.capture()?;
                    step.captures.push(capture);
                }
                _ => return Ok((step, optional)),
            }
        }
    }

    fn node(&mut self, equal: &mut Vec<(u16, String)>) -> Result<Step, QueryDefect> {
        self.expect(b'(')?;
        let name = self.identifier()?.to_string();
        let test = if name == "_" {
            Test::AnyNamed
        } else {
            let kinds: Vec<u16> = (0..self.grammar.node_kind_count() as u16)
                .filter(|&id| {
                    self.grammar.node_kind_is_named(id)
                        && self.grammar.node_kind_for_id(id) == Some(name.as_str())
                })
                .collect();
            if kinds.is_empty() {
                return Err(self.defect(&format!("unknown node kind `{name}`")));
            }
            Test::Kinds(kinds)
        };
        let (children, negated) = self.children(equal)?;
        self.expect(b')')?;
        Ok(Step {
            test,
            field: None,
            negated,
            captures: Vec::new(),
            children,
        })
    }
}

fn leaf(test: Test) -> Step {
    Step {
        test,
        field: None,
        negated: Vec::new(),
        captures: Vec::new(),
        children: Children::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::lang::Language;

    /// Each match as `capture=text` pairs, in match order.
    fn matches(language: Language, query: &str, source: &str) -> Vec<String> {
        let grammar = language.grammar();
        let patterns = Patterns::compile(&grammar, query).expect("the query compiles");
        let mut parser = tree_sitter::Parser::new();
        parser.set_language(&grammar).expect("the grammar loads");
        let tree = parser.parse(source, None).expect("a tree");
        let mut out = Vec::new();
        let cut = patterns.for_each_match(tree.root_node(), source.as_bytes(), 512, |m| {
            let parts: Vec<String> = m
                .iter()
                .map(|&(c, node)| {
                    format!(
                        "{}={}",
                        patterns.capture_name(c),
                        &source[node.byte_range()]
                    )
                })
                .collect();
            out.push(parts.join(" "));
        });
        assert!(!cut);
        out
    }

    fn defect(language: Language, query: &str) -> String {
        match Patterns::compile(&language.grammar(), query) {
            Ok(_) => panic!("{query:?} compiled"),
            Err(defect) => defect.0,
        }
    }

    #[test]
    fn an_unanchored_child_matches_each_child_and_anchors_pin_positions() {
        let source = "f(x, y, z)\n";
        assert_eq!(
            matches(Language::Python, "(argument_list (identifier) @a)", source),
            ["a=x", "a=y", "a=z"]
        );
        assert_eq!(
            matches(
                Language::Python,
                "(argument_list . (identifier) @a . (identifier) @b)",
                source
            ),
            ["a=x b=y"]
        );
        assert_eq!(
            matches(
                Language::Python,
                "(argument_list (identifier) @a .)",
                source
            ),
            ["a=z"]
        );
        // In order: a later child pattern never matches an earlier child.
        assert_eq!(
            matches(
                Language::Python,
                "(argument_list (identifier) @a (identifier) @b)",
                source
            ),
            ["a=x b=y", "a=x b=z", "a=y b=z"]
        );
    }

    #[test]
    fn an_optional_child_is_captured_when_present() {
        let source = "package p\nimport (\n\tf \"fmt\"\n\t\"os\"\n)\n";
        let query = "(import_spec name: (_)? @alias path: (interpreted_string_literal) @path)";
        assert_eq!(
            matches(Language::Go, query, source),
            ["alias=f path=\"fmt\"", "path=\"os\""]
        );
    }

    #[test]
    fn fields_negated_fields_alternatives_and_predicates_filter_matches() {
        let source = "impl A {}\nimpl T for B {}\n";
        assert_eq!(
            matches(Language::Rust, "(impl_item !trait type: (_) @t)", source),
            ["t=A"]
        );
        assert_eq!(
            matches(
                Language::Rust,
                "(impl_item trait: (_) @trait type: (_) @t)",
                source
            ),
            ["trait=T t=B"]
        );
        let python = "self.x = 1\nother.y = 2\nz = [a, b.c]\n";
        assert_eq!(
            matches(
                Language::Python,
                "(assignment left: (attribute object: (identifier) @_o attribute: (identifier) @n) (#eq? @_o \"self\"))",
                python
            ),
            ["_o=self n=x"]
        );
        assert_eq!(
            matches(
                Language::Python,
                "(list [(identifier) (attribute)] @item)",
                python
            ),
            ["item=a", "item=b.c"]
        );
    }

    #[test]
    fn wildcards_never_match_error_nodes() {
        // `readonly import(…)` in a parameter's type parses as an ERROR node beside a
        // tuple type: only the tuple type is a wildcard's match, as tree-sitter has it.
        let source = "function f(c: readonly import(\"./t\").N[]) {}\n";
        assert_eq!(
            matches(Language::TypeScript, "(type_annotation (_) @t)", source),
            ["t=[]"]
        );
    }

    #[test]
    fn sibling_groups_match_among_any_nodes_children() {
        let source = "#[cfg(test)]\nmod tests {}\nmod other {}\n";
        let query =
            "((attribute_item (attribute (identifier) @_c)) . (mod_item) @m (#eq? @_c \"cfg\"))";
        let found = matches(Language::Rust, query, source);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].ends_with("m=mod tests {}"), "{found:?}");
    }

    #[test]
    fn malformed_or_unsupported_queries_are_typed_defects_with_their_line() {
        let unknown = defect(Language::Python, "(call)\n(no_such_node) @x");
        assert!(
            unknown.contains("line 2") && unknown.contains("no_such_node"),
            "{unknown}"
        );
        let field = defect(Language::Python, "(call nothing: (identifier))");
        assert!(field.contains("unknown field `nothing`"), "{field}");
        let predicate = defect(Language::Python, "((identifier) @x (#match? @x \"a\"))");
        assert!(predicate.contains("#match?"), "{predicate}");
        let quantifier = defect(Language::Python, "(block (expression_statement)* @s)");
        assert!(quantifier.contains("quantifier"), "{quantifier}");
        let unclosed = defect(Language::Python, "(call function: (identifier)");
        assert!(
            unclosed.contains("unclosed") || unclosed.contains("expected"),
            "{unclosed}"
        );
    }
}
