//! Name normalisation shared by the name tables and their lookups.

/// Splits an identifier into lower-cased words: `compileContext`, `compile_context` and
/// `CompileContext` all give `compile`, `context`; `HTTPServer2` gives `http`, `server`, `2`.
pub fn split_identifier(name: &str) -> Vec<String> {
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
