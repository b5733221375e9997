//! The scope a commit-style message names before its colon (`sync: fix …`,
//! `fix(router): …`, `printer: …`): many projects prefix messages and issue titles with
//! the area they touch, and that area is nearly always a directory or file name (a Rust
//! crate's or module's directory, a package). Search weighs candidates under it higher.

/// Conventional-commit types: a prefix that names the kind of change, not the area.
const CHANGE_TYPES: &[&str] = &[
    "fix", "feat", "feature", "chore", "docs", "doc", "test", "tests", "refactor", "perf", "ci",
    "build", "style", "revert", "deps", "release", "bug", "bugfix", "wip", "misc",
];

/// The scope's names, lowercased with `-` read as `_`: `sync` for `sync: …`, `router`
/// for `fix(router): …`, `sync` and `mpsc` for `sync::mpsc: …`. Empty when the first line
/// has no such prefix.
pub fn scope_names(query: &str) -> Vec<String> {
    let first = query.trim_start().lines().next().unwrap_or("");
    let Some((head, rest)) = first.split_once(':') else {
        return Vec::new();
    };
    // `a::b: …` splits at the path's `::`: take the whole `a::b` before `: `.
    let (head, rest) = if rest.starts_with(':') {
        match first.find(": ") {
            Some(i) => (&first[..i], &first[i + 1..]),
            None => return Vec::new(),
        }
    } else {
        (head, rest)
    };
    if !rest.starts_with(' ') || rest.trim().is_empty() || head.len() > 60 {
        return Vec::new();
    }
    let head = head.trim().trim_end_matches('!');
    let (kind, inner) = match head.split_once('(') {
        Some((kind, inner)) => (kind, inner.strip_suffix(')').unwrap_or(inner)),
        // Without parentheses the scope is one word: `Bug report: …` is prose.
        None if head.contains(char::is_whitespace) => return Vec::new(),
        None => ("", head),
    };
    if !kind.is_empty() && !kind.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Vec::new();
    }
    let valid =
        |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | ':' | ',' | ' ');
    if inner.is_empty() || !inner.chars().all(valid) || inner.split_whitespace().count() > 3 {
        return Vec::new();
    }
    let mut names: Vec<String> = inner
        .split(['/', ',', ':', ' '])
        .map(|s| s.trim().to_ascii_lowercase().replace('-', "_"))
        .filter(|s| s.len() >= 2 && !CHANGE_TYPES.contains(&s.as_str()))
        .collect();
    names.dedup();
    names
}

/// Whether `path` lies under a scope name: a directory of it, or the file's stem.
pub fn path_in_scope(path: &str, names: &[String]) -> bool {
    if names.is_empty() {
        return false;
    }
    let mut segments = path.split('/').peekable();
    while let Some(segment) = segments.next() {
        let segment = if segments.peek().is_none() {
            segment.split('.').next().unwrap_or(segment)
        } else {
            segment
        };
        let normal = segment.to_ascii_lowercase().replace('-', "_");
        if names.contains(&normal) {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_area_before_the_colon_is_the_scope() {
        assert_eq!(scope_names("sync: fix the semaphore's permits"), ["sync"]);
        assert_eq!(
            scope_names("fix(router): a trailing slash 404s"),
            ["router"]
        );
        assert_eq!(scope_names("feat(core)!: drop the old API"), ["core"]);
        assert_eq!(scope_names("sync::mpsc: clarify panics"), ["sync", "mpsc"]);
        assert_eq!(scope_names("tokio-util: add a codec"), ["tokio_util"]);
        assert_eq!(
            scope_names("printer: fix column numbers\n\nbody"),
            ["printer"]
        );
    }

    #[test]
    fn prose_types_and_urls_are_not_scopes() {
        assert!(scope_names("fix: a crash").is_empty());
        assert!(scope_names("docs(docs): typo").is_empty());
        assert!(scope_names("The parser fails on this input").is_empty());
        assert!(scope_names("see https://example.com for details").is_empty());
        assert!(scope_names("Note:").is_empty());
        assert!(scope_names("When I run this (with args, more words here): it fails").is_empty());
        assert!(scope_names("Bug report: it fails").is_empty());
        assert!(scope_names("").is_empty());
    }

    #[test]
    fn a_path_is_in_scope_by_a_directory_or_its_stem() {
        let names = vec!["sync".to_string(), "tokio_util".to_string()];
        assert!(path_in_scope("tokio/src/sync/mutex.rs", &names));
        assert!(path_in_scope("tokio/src/sync.rs", &names));
        assert!(path_in_scope("tokio-util/src/codec/mod.rs", &names));
        assert!(!path_in_scope("tokio/src/synchronous/x.rs", &names));
        assert!(!path_in_scope("tokio/src/io/mod.rs", &names));
        assert!(!path_in_scope("tokio/src/io/mod.rs", &[]));
    }
}
