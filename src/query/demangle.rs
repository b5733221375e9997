//! Rust paths as backtraces and panics print them, read as the plain paths the graph
//! names: `<grep_regex::RegexMatcher as grep_matcher::Matcher>::find_at` is
//! `grep_regex::RegexMatcher::find_at`, `SearchWorker<W>::search` is `SearchWorker::search`,
//! `MultiLine::run::{{closure}}` is `MultiLine::run`, and a symbol's hash
//! (`::h3a5b2c1d0e9f8a7b`) and generic arguments (`::<&str, M>`) are dropped. The standard
//! library's own words in a panic (``called `Result::unwrap()` on an `Err` value``) name
//! nothing of the repository and are dropped too.
//!
//! Only text that is a Rust path is touched: angle brackets count only next to `::` (a JSX
//! tag `<UserBadge>`, `Array<string>` or `a < b` stay as written).

use std::borrow::Cow;

/// The standard library's panic messages, which name its own types, never the repository's.
const STD_PANIC_WORDS: &[&str] = &[
    "called `Option::unwrap()` on a `None` value",
    "called `Option::expect()` on a `None` value",
    "called `Result::unwrap()` on an `Err` value",
    "called `Result::expect()` on an `Err` value",
    "called `Result::unwrap_err()` on an `Ok` value",
    "called `Result::expect_err()` on an `Ok` value",
];

/// Longest angle-bracket group read as generic arguments or a qualified self type.
const MAX_GROUP: usize = 512;

/// `query` with its printed Rust paths made plain; borrowed when there is none.
pub fn plain_rust_paths(query: &str) -> Cow<'_, str> {
    if !query.contains("::") {
        return Cow::Borrowed(query);
    }
    let mut text = query.to_string();
    for words in STD_PANIC_WORDS {
        text = text.replace(words, " ");
    }
    text = without_closures(&text);
    // Nested groups (`<A<B> as C>::f`) come off one level at a time.
    for _ in 0..8 {
        let next = without_angle_groups(&text);
        if next == text {
            break;
        }
        text = next;
    }
    text = without_hashes(&text);
    if text == query {
        Cow::Borrowed(query)
    } else {
        Cow::Owned(text)
    }
}

/// Drops `::{{closure}}` (and `{{constant}}`, `{{vtable-shim}}`, …) and v0's
/// `::{closure#0}`: the function that holds them is what the graph names.
fn without_closures(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("::{") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let end = if after.starts_with("{{") {
            after.find("}}").map(|e| e + 2)
        } else {
            after
                .find('}')
                .filter(|&e| after[1..e].contains('#') || after[1..e].starts_with("shim"))
                .map(|e| e + 1)
        };
        match end {
            Some(end) if !after[..end].contains(char::is_whitespace) => rest = &after[end..],
            _ => {
                out.push_str("::");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// One pass over the angle-bracket groups next to `::`: generic arguments dropped
/// (`Worker<W>::run`, `search::<&str>`), a qualified self type kept without its trait
/// (`<A as T>::f`, `<A>::f` → `A::f`). Groups of innermost brackets go first.
fn without_angle_groups(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'<' {
            i += 1;
            continue;
        }
        let Some(close) = matching_close(text, i) else {
            i += 1;
            continue;
        };
        let inner = &text[i + 1..close];
        let before = &text[..i];
        let after = &text[close + 1..];
        let ident_before = before
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        let path_after = after.starts_with("::");
        let turbofish = before.ends_with("::");
        // The word the group follows is a path (`alloc::vec::Vec<T> as …`).
        let in_path = before
            .rsplit(|c: char| c.is_whitespace() || c == '<')
            .next()
            .is_some_and(|word| word.contains("::"));
        let word_starts = before
            .chars()
            .next_back()
            .is_none_or(|c| c.is_whitespace() || matches!(c, '`' | '\'' | '"' | '(' | '['));
        if turbofish || (ident_before && (path_after || in_path)) {
            // Generic arguments: dropped, with the turbofish's `::`.
            let keep = if turbofish { i - 2 } else { i };
            out.push_str(&text[copied..keep]);
            copied = close + 1;
            // `search_path::<T>` at the end of a path: nothing follows the name.
            i = close + 1;
            continue;
        }
        if word_starts && path_after {
            // A qualified self type: `<A as T>::f` is `A::f`.
            let self_type = inner.split(" as ").next().unwrap_or(inner).trim();
            out.push_str(&text[copied..i]);
            out.push_str(self_type);
            copied = close + 1;
            i = close + 1;
            continue;
        }
        i += 1;
    }
    out.push_str(&text[copied..]);
    out
}

/// The `>` that closes the `<` at `open` when the group holds no further `<` (innermost
/// first) and looks like Rust types: no line break, within `MAX_GROUP` bytes.
fn matching_close(text: &str, open: usize) -> Option<usize> {
    let rest = &text[open + 1..];
    let end = rest.find(['<', '>', '\n'])?;
    if rest.as_bytes()[end] != b'>' || end > MAX_GROUP || end == 0 {
        return None;
    }
    let inner = &rest[..end];
    let typed = inner.chars().all(|c| {
        c.is_alphanumeric()
            || c.is_whitespace()
            || matches!(
                c,
                '_' | ':' | '&' | '*' | ',' | '\'' | '[' | ']' | ';' | '(' | ')' | '-'
            )
    });
    typed.then_some(open + 1 + end)
}

/// Drops a symbol hash (`::h` and 16 hex digits) that ends a path.
fn without_hashes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("::h") {
        let hash = &rest[at + 3..];
        let digits = hash.bytes().take_while(|b| b.is_ascii_hexdigit()).count();
        let ends = hash[digits..]
            .chars()
            .next()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        out.push_str(&rest[..at]);
        if digits == 16 && ends {
            rest = &hash[digits..];
        } else {
            out.push_str("::h");
            rest = hash;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::plain_rust_paths;

    #[test]
    fn printed_rust_paths_read_as_plain_paths() {
        for (printed, plain) in [
            (
                "<grep_searcher::Searcher>::search_path",
                "grep_searcher::Searcher::search_path",
            ),
            (
                "<grep_regex::matcher::RegexMatcher as grep_matcher::Matcher>::find_at",
                "grep_regex::matcher::RegexMatcher::find_at",
            ),
            (
                "grep_searcher::searcher::glue::MultiLine::run::{{closure}}::{{closure}}",
                "grep_searcher::searcher::glue::MultiLine::run",
            ),
            (
                "ignore::walk::WalkParallel::visit::{closure#0}",
                "ignore::walk::WalkParallel::visit",
            ),
            (
                "grep_searcher::Searcher::search_path::<&str, grep_regex::RegexMatcher>",
                "grep_searcher::Searcher::search_path",
            ),
            (
                "rg::search::SearchWorker<W>::search",
                "rg::search::SearchWorker::search",
            ),
            (
                "<rg::search::SearchWorker<W>>::search",
                "rg::search::SearchWorker::search",
            ),
            (
                "<alloc::vec::Vec<T> as core::ops::Drop>::drop",
                "alloc::vec::Vec::drop",
            ),
            (
                "grep_searcher::Searcher::search_path::h3a5b2c1d0e9f8a7b",
                "grep_searcher::Searcher::search_path",
            ),
            (
                "   3: core::result::unwrap_failed\n   4: app::main::h0123456789abcdef\n at ./src/main.rs:5:9",
                "   3: core::result::unwrap_failed\n   4: app::main\n at ./src/main.rs:5:9",
            ),
        ] {
            assert_eq!(plain_rust_paths(printed), plain, "{printed}");
        }
    }

    #[test]
    fn the_standard_librarys_panic_words_are_dropped() {
        let panic = "thread 'main' panicked at src/main.rs:5:9:\ncalled `Result::unwrap()` on an `Err` value: ParseError";
        let plain = plain_rust_paths(panic);
        assert!(!plain.contains("`Err`") && !plain.contains("Result::unwrap"));
        assert!(plain.contains("src/main.rs:5:9") && plain.contains("ParseError"));
    }

    proptest::proptest! {
        /// Any text of Rust-path characters is read without a panic, and what comes out
        /// is never longer than what went in (everything it does drops text).
        #[test]
        fn any_text_is_read_and_only_shortened(text in "[a-f0-9hA:<>{}#_ &,\n`'éΣ-]{0,64}") {
            let plain = plain_rust_paths(&text);
            proptest::prop_assert!(plain.len() <= text.len());
        }
    }

    #[test]
    fn text_that_is_no_rust_path_is_left_as_it_is() {
        for text in [
            "why does <UserBadge> render twice",
            "Array<string> is not assignable",
            "if a < b and c > d::e",
            "Cart.total",
            "shop::h12",
            "render::{props}",
            "x::hdeadbeefdeadbeefx",
            "a::<",
        ] {
            assert_eq!(plain_rust_paths(text), text);
        }
    }
}
