//! Value text: the small readers over initializer and return-type text (branches,
//! casts, call text, arguments) that type inference uses, and scoped local bindings.

use super::*;

/// A field's binding and the file it is declared in.
pub(super) type FieldType<'a> = (&'a crate::syntax::facts::TypeBinding, u32);

/// A file's type bindings by (scope definition, name).
/// A file's bindings by (scope, name), in source order: a name rebound or narrowed
/// (`if isinstance(x, T)`) takes the binding before its use.
pub(super) type Locals<'a> =
    HashMap<(Option<u32>, &'a str), Vec<&'a crate::syntax::facts::TypeBinding>>;

/// The binding of `name` visible at byte `at` from `scope` outwards: the last one before
/// `at` in the innermost scope that binds the name, else that scope's first.
pub(super) fn local_binding<'a>(
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
pub(super) struct DepthGuard;

impl DepthGuard {
    const MAX: u32 = 6;

    pub(super) fn enter() -> Option<DepthGuard> {
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
pub(super) fn strip_value_noise(text: &str) -> &str {
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
pub(super) const ITEM_PRESERVING: &[&str] = &[
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
pub(super) fn value_branches(text: &str) -> Vec<&str> {
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
pub(super) fn asserted_type(text: &str) -> Option<&str> {
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

pub(super) fn is_call_text(text: &str) -> bool {
    text.ends_with(')') && callee_of(text).is_some()
}

/// The argument list of a call expression's text, without its parentheses.
pub(super) fn arguments_of(text: &str) -> Option<&str> {
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
pub(super) fn callee_of(text: &str) -> Option<&str> {
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
