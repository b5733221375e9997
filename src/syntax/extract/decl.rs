//! Declaration details: which kind wins for a node tagged twice, constant names,
//! qualified scopes, enclosing definitions, decorators and docs, signatures, visibility, and
//! Rust `use` paths.

use super::parents::Parents;
use super::*;

/// Lower is more specific; used to pick one kind for a node tagged twice.
pub(super) fn generality(kind: SymbolKind) -> u8 {
    match kind {
        SymbolKind::Variable => 2,
        SymbolKind::Field | SymbolKind::Constant => 1,
        _ => 0,
    }
}

pub(super) fn is_constant_name(name: &str) -> bool {
    name.chars().any(|c| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

pub(super) fn qualified_scope(defs: &[Definition], index: usize, language: Language) -> String {
    let def = &defs[index];
    match def.parent {
        Some(p) if def.kind != SymbolKind::Impl => format!(
            "{}{}{}",
            qualified_scope(defs, p as usize, language),
            language.separator(),
            def.member_scope
        ),
        Some(p) => {
            // Members of an impl are qualified by the self type, under the impl's module.
            let outer = qualified_scope(defs, p as usize, language);
            format!("{outer}{}{}", language.separator(), def.member_scope)
        }
        None => def.member_scope.clone(),
    }
}

/// Innermost definition whose span contains `site`. Definitions are sorted by start and
/// properly nested, so the answer is the nearest preceding definition or one of its
/// ancestors.
pub(super) fn enclosing_def(defs: &[Definition], site: &Span) -> Option<u32> {
    let after = defs.partition_point(|d| d.span.start_byte <= site.start_byte);
    let mut candidate = after.checked_sub(1);
    while let Some(i) = candidate {
        if defs[i].span.contains(site) {
            return Some(i as u32);
        }
        candidate = defs[i].parent.map(|p| p as usize);
    }
    None
}

/// The node that carries decorators/export/doc for a definition, and its doc span.
pub(super) fn wrapper_and_doc<'t>(
    node: Node<'t>,
    language: Language,
    source: &str,
    parents: &Parents<'t>,
) -> (Node<'t>, Option<Span>) {
    // Climb through wrappers that carry decorators, `export`, or the declaration keyword
    // (`type X struct`, `const x = () => …`), so spans and docs cover what a reader sees.
    let mut outer = node;
    while let Some(parent) = parents.of(outer) {
        let wraps = match parent.kind() {
            "decorated_definition" | "export_statement" => true,
            "type_declaration"
            | "lexical_declaration"
            | "variable_declaration"
            | "const_declaration"
            | "var_declaration" => parent.named_child_count() == 1,
            _ => false,
        };
        if !wraps {
            break;
        }
        outer = parent;
    }
    if language == Language::Python
        && let Some(doc) = python_docstring(node)
    {
        return (outer, Some(span_of(doc)));
    }
    // Contiguous comments right above the definition (attributes may sit in between).
    let mut first: Option<Node> = None;
    let mut last: Option<Node> = None;
    let mut expected_line = outer.start_position().row;
    let mut cursor = outer.prev_sibling();
    while let Some(sibling) = cursor {
        let kind = sibling.kind();
        let is_comment = kind.contains("comment");
        let is_attribute = matches!(kind, "attribute_item" | "decorator" | "annotation");
        if !(is_comment || is_attribute) || sibling.end_position().row + 1 < expected_line {
            break;
        }
        if is_comment {
            let text = source.get(sibling.byte_range()).unwrap_or("");
            // `//!` and `/*!` document the enclosing module, not the next item.
            if text.starts_with("//!") || text.starts_with("/*!") {
                break;
            }
            if last.is_none() {
                last = Some(sibling);
            }
            first = Some(sibling);
        }
        expected_line = sibling.start_position().row;
        cursor = sibling.prev_sibling();
    }
    let doc = match (first, last) {
        (Some(f), Some(l)) => {
            let mut span = span_of(f);
            let end = span_of(l);
            span.end_byte = end.end_byte;
            span.end_line = end.end_line;
            Some(span)
        }
        _ => None,
    };
    (outer, doc)
}

pub(super) fn python_docstring(node: Node) -> Option<Node> {
    let body = node.child_by_field_name("body")?;
    let first = body.named_child(0)?;
    if first.kind() != "expression_statement" {
        return None;
    }
    let string = first.named_child(0)?;
    (string.kind() == "string").then_some(string)
}

/// Signature: from the definition's start to its body, or its first line.
pub(super) fn signature_of(node: Node, full: Span, source: &str) -> Span {
    let start = full.start_byte as usize;
    let end = match node.child_by_field_name("body") {
        Some(body) => body.start_byte(),
        None => {
            let node_end = node.end_byte();
            source
                .get(node.start_byte()..node_end)
                .and_then(|t| t.find('\n'))
                .map(|i| node.start_byte() + i)
                .unwrap_or(node_end)
        }
    };
    let text = source.get(start..end.max(start)).unwrap_or("");
    let trimmed = text.trim_end();
    let end_byte = start + trimmed.len();
    let end_line = full.start_line + trimmed.matches('\n').count() as u32;
    Span {
        start_byte: full.start_byte,
        end_byte: end_byte as u32,
        start_line: full.start_line,
        end_line,
    }
}

pub(super) fn visibility_of(
    node: Node,
    outer: Node,
    name: &str,
    language: Language,
    source: &str,
) -> Visibility {
    let has_child_kind = |n: Node, kind: &str| {
        let mut walk = n.walk();

        n.children(&mut walk).any(|c| c.kind() == kind)
    };
    match language {
        Language::Rust => {
            if has_child_kind(node, "visibility_modifier") {
                Visibility::Public
            } else {
                Visibility::Internal
            }
        }
        Language::Python => {
            if name.starts_with("__") && name.ends_with("__") {
                Visibility::Public
            } else if name.starts_with('_') {
                Visibility::Private
            } else {
                Visibility::Public
            }
        }
        Language::Go => {
            if name.chars().next().is_some_and(|c| c.is_uppercase()) {
                Visibility::Public
            } else {
                Visibility::Internal
            }
        }
        Language::Java => {
            let modifiers = {
                let mut walk = node.walk();

                node.children(&mut walk)
                    .find(|c| c.kind() == "modifiers")
                    .and_then(|m| source.get(m.byte_range()))
                    .unwrap_or("")
            };
            if modifiers.contains("public") {
                Visibility::Public
            } else if modifiers.contains("private") {
                Visibility::Private
            } else {
                Visibility::Internal
            }
        }
        Language::TypeScript | Language::Tsx | Language::JavaScript => {
            let text = source.get(node.byte_range()).unwrap_or("");
            if outer.kind() == "export_statement" {
                Visibility::Public
            } else if has_child_kind(node, "accessibility_modifier") {
                if text.starts_with("private") || text.starts_with("protected") {
                    Visibility::Private
                } else {
                    Visibility::Public
                }
            } else if name.starts_with('#') {
                Visibility::Private
            } else {
                Visibility::Internal
            }
        }
    }
}

pub(super) fn split_rust_path(path: &str, site: Span) -> Import {
    match path.rsplit_once("::") {
        Some((module, name)) => Import {
            module: module.to_string(),
            name: Some(name.to_string()),
            alias: None,
            wildcard: false,
            site,
        },
        None => Import {
            module: path.to_string(),
            name: None,
            alias: None,
            wildcard: false,
            site,
        },
    }
}
