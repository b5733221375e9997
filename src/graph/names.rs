//! Name normalisation shared by the name tables and their lookups.

/// Splits an identifier into lower-cased words: `compileContext`, `compile_context` and
/// `CompileContext` all give `compile`, `context`; `HTTPServer2` gives `http`, `server`, `2`.
pub fn split_identifier(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    each_segment(name, &mut String::new(), |word| {
        words.push(word.to_string());
        true
    });
    words
}

/// Gives `each` the words of `split_identifier(name)` in order, each lower-cased in `buf`,
/// without a string per word (a question's name checks split thousands of names); stops
/// when `each` answers false. Returns whether it went to the end.
pub fn each_segment(name: &str, buf: &mut String, mut each: impl FnMut(&str) -> bool) -> bool {
    buf.clear();
    let mut chars = name.chars().peekable();
    // The character before `c`: an alphanumeric one whenever `buf` holds a word.
    let mut prev = None;
    while let Some(c) = chars.next() {
        let before = prev.replace(c);
        if !c.is_alphanumeric() {
            if !buf.is_empty() {
                if !each(buf) {
                    return false;
                }
                buf.clear();
            }
            continue;
        }
        if let Some(prev) = before
            && !buf.is_empty()
        {
            let next_is_lower = chars.peek().is_some_and(|n| n.is_lowercase());
            let boundary = (prev.is_lowercase() && c.is_uppercase())
                || (prev.is_alphabetic() && c.is_ascii_digit())
                || (prev.is_ascii_digit() && c.is_alphabetic())
                || (prev.is_uppercase() && c.is_uppercase() && next_is_lower);
            if boundary {
                if !each(buf) {
                    return false;
                }
                buf.clear();
            }
        }
        if c.is_ascii() {
            buf.push(c.to_ascii_lowercase());
        } else {
            buf.extend(c.to_lowercase());
        }
    }
    buf.is_empty() || each(buf)
}

/// `a::b::C` and `a/b.C` → `a.b.C`.
pub fn normalize_qualified(text: &str) -> String {
    text.replace("::", ".").replace('/', ".")
}

/// Dotted module path of a repository file: `shop/models.py` → `shop.models`,
/// `src/geometry.rs` → `src.geometry`; package markers (`__init__`, `mod`, `index`) drop.
pub fn module_path_of(path: &str) -> String {
    let stem = match path.rfind('.') {
        Some(dot) if dot > path.rfind('/').map_or(0, |s| s + 1) => &path[..dot],
        _ => path,
    };
    let mut parts: Vec<&str> = stem.split('/').collect();
    if matches!(
        parts.last(),
        Some(&("__init__" | "mod" | "index" | "lib" | "main"))
    ) && parts.len() > 1
    {
        parts.pop();
    }
    parts.join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The splitter as it was written before `each_segment`: every name splits the same.
    fn split_by_chars(name: &str) -> Vec<String> {
        let mut words = Vec::new();
        let chars: Vec<char> = name.chars().collect();
        let mut current = String::new();
        for (i, &c) in chars.iter().enumerate() {
            if !c.is_alphanumeric() {
                if !current.is_empty() {
                    words.push(std::mem::take(&mut current));
                }
                continue;
            }
            if let Some(&prev) = (!current.is_empty()).then(|| &chars[i - 1]) {
                let next_is_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
                let boundary = (prev.is_lowercase() && c.is_uppercase())
                    || (prev.is_alphabetic() && c.is_ascii_digit())
                    || (prev.is_ascii_digit() && c.is_alphabetic())
                    || (prev.is_uppercase() && c.is_uppercase() && next_is_lower);
                if boundary {
                    words.push(std::mem::take(&mut current));
                }
            }
            current.extend(c.to_lowercase());
        }
        if !current.is_empty() {
            words.push(current);
        }
        words
    }

    proptest::proptest! {
        #[test]
        fn each_segment_splits_as_the_character_splitter(
            name in "([a-zA-Z0-9_.:$ -]|[ÀÉßİΣσçÇ٣ǅ]){0,24}"
        ) {
            proptest::prop_assert_eq!(split_identifier(&name), split_by_chars(&name));
            // Stopped after its first word, it gave only that.
            let mut seen = Vec::new();
            let went_on = each_segment(&name, &mut String::from("stale"), |w| {
                seen.push(w.to_string());
                false
            });
            let all = split_by_chars(&name);
            proptest::prop_assert_eq!(went_on, all.is_empty());
            proptest::prop_assert_eq!(seen, all.into_iter().take(1).collect::<Vec<_>>());
        }
    }

    #[test]
    fn identifiers_split_on_case_and_separators() {
        assert_eq!(split_identifier("compile_context"), ["compile", "context"]);
        assert_eq!(split_identifier("compileContext"), ["compile", "context"]);
        assert_eq!(split_identifier("HTTPServer2"), ["http", "server", "2"]);
        assert_eq!(split_identifier("__init__"), ["init"]);
    }

    #[test]
    fn module_paths() {
        assert_eq!(module_path_of("shop/models.py"), "shop.models");
        assert_eq!(module_path_of("shop/__init__.py"), "shop");
        assert_eq!(module_path_of("src/a/mod.rs"), "src.a");
        assert_eq!(module_path_of("main.go"), "main");
    }
}
