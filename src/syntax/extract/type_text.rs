//! Type text: the bare type name of a declared type, collection items and element
//! types, tuples, and generics stripped, as extraction and resolution read them.

use super::*;

/// The bare type name of a declared type: `&mut dyn Shape` → `Shape`,
/// `Optional[app.Flask]` → `Flask`, `List<User>` → `List`, `*Memory` → `Memory`,
/// `Foo | None` → `Foo`; `None` for anything that is not a named type.
pub fn normalize_type(text: &str) -> Option<String> {
    let mut t = text.trim().trim_matches(|c| c == '"' || c == '\'');
    for prefix in ["&", "mut ", "*", "dyn ", "impl ", "?", "'static ", "const "] {
        while let Some(rest) = t.strip_prefix(prefix) {
            t = rest.trim_start();
        }
    }
    // `Optional[X]` and `X | None` name X.
    for wrapper in [
        "Optional[",
        "typing.Optional[",
        "t.Optional[",
        "Option<",
        "Box<",
        "Rc<",
        "Arc<",
        "Ref<",
        "RefCell<",
        "Mutex<",
        "Result<",
        "io::Result<",
        "Promise<",
    ] {
        if let Some(inner) = t.strip_prefix(wrapper) {
            return normalize_type(inner.trim_end_matches([']', '>']));
        }
    }
    if let Some((first, rest)) = t.split_once('|') {
        let first = first.trim();
        return if first == "None" || first == "null" || first == "undefined" {
            normalize_type(rest)
        } else {
            normalize_type(first)
        };
    }
    let end = t.find(['<', '[', '(', ' ', ',', '{']).unwrap_or(t.len());
    let path = &t[..end];
    let name = crate::syntax::facts::last_segment(path);
    let valid = name
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '$');
    valid.then(|| name.to_string())
}

/// The element type of a declared collection type, normalised: `Sequence[Route] | None`,
/// `Optional[list[Route]]`, `Vec<Route>`, `Route[]` → `Route`.
pub fn collection_items(text: &str) -> Option<String> {
    let mut t = text.trim().trim_matches(|c| c == '"' || c == '\'');
    for wrapper in ["Optional[", "typing.Optional[", "t.Optional[", "Option<"] {
        if let Some(inner) = t.strip_prefix(wrapper) {
            t = inner.strip_suffix([']', '>']).unwrap_or(inner);
        }
    }
    let parts: Vec<&str> = t.split('|').map(str::trim).collect();
    if let [a, b] = parts.as_slice() {
        t = if matches!(*a, "None" | "null" | "undefined") {
            b
        } else {
            a
        };
    }
    normalize_type(first_of_tuple(element_type(t)?))
}

/// The element type of a collection type text: `list[Param]`, `Vec<Param>`,
/// `Iterator[Param]`, `Param[]`.
pub fn element_type(text: &str) -> Option<&str> {
    let text = text.trim();
    if let Some(inner) = text.strip_suffix("[]") {
        return Some(inner);
    }
    let open = text.find(['[', '<'])?;
    let outer = crate::syntax::facts::last_segment(&text[..open]).to_lowercase();
    let collections = [
        "list",
        "sequence",
        "iterable",
        "iterator",
        "set",
        "frozenset",
        "tuple",
        "generator",
        "vec",
        "vecdeque",
        "array",
        "readonlyarray",
        "slice",
        "mutablesequence",
        "collection",
        "abstractset",
        "hashset",
        "btreeset",
    ];
    if !collections.contains(&outer.as_str()) {
        return None;
    }
    let rest = &text[open + 1..];
    let inner = rest.strip_suffix(']').or_else(|| rest.strip_suffix('>'))?;
    Some(first_of_tuple(inner))
}

/// The first element of a tuple or generic argument list (`(*Server, error)` → `*Server`).
pub fn first_of_tuple(text: &str) -> &str {
    let t = text.trim().trim_start_matches('(').trim_end_matches(')');
    let mut depth = 0i32;
    for (at, c) in t.char_indices() {
        match c {
            '[' | '<' | '(' => depth += 1,
            ']' | '>' | ')' => depth -= 1,
            ',' if depth == 0 => return t[..at].trim(),
            _ => {}
        }
    }
    t.trim()
}

pub(super) fn strip_generics(text: &str) -> String {
    let text = text.trim_start_matches('&').trim();
    match text.find('<') {
        Some(i) => text[..i].trim().to_string(),
        None => text.to_string(),
    }
}

/// For a type node (`a::B<T>`, `B<T>`, `B`), the node of its bare name and the path text.
pub(super) fn type_name_and_qualifier<'t>(
    node: Node<'t>,
    source: &str,
) -> (Node<'t>, Option<String>) {
    match node.kind() {
        "generic_type" => match node.child_by_field_name("type") {
            Some(inner) => type_name_and_qualifier(inner, source),
            None => (node, None),
        },
        "scoped_type_identifier" => match node.child_by_field_name("name") {
            Some(name) => (
                name,
                node.child_by_field_name("path")
                    .and_then(|p| source.get(p.byte_range()))
                    .map(str::to_string),
            ),
            None => (node, None),
        },
        _ => (node, None),
    }
}
