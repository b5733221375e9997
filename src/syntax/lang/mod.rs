//! Language support as data: one `.scm` query per language plus the small per-language
//! table below (R-EXT-1). Capture names are validated when a query loads, so a typo in a
//! query file is a typed error listing the allowed names, never silently lost facts.

use std::sync::OnceLock;

pub(crate) mod pattern;

use crate::code_enum::code_enum;
use crate::error::{AtlasError, Result};

code_enum! {
    /// A language Atlas extracts; the discriminants are on-disk codes (`files[].language`).
    pub enum Language {
        Rust = 0 => "rust",
        Python = 1 => "python",
        TypeScript = 2 => "typescript",
        Tsx = 3 => "tsx",
        JavaScript = 4 => "javascript",
        Go = 5 => "go",
        Java = 6 => "java",
    }
}

impl Language {
    /// Language of a file by its extension; `None` for files we do not extract.
    pub fn from_path(path: &str) -> Option<Language> {
        let ext = path.rsplit_once('.').map(|(_, e)| e)?;
        Some(match ext {
            "rs" => Language::Rust,
            "py" | "pyi" => Language::Python,
            "ts" | "mts" | "cts" => Language::TypeScript,
            "tsx" => Language::Tsx,
            "js" | "jsx" | "mjs" | "cjs" => Language::JavaScript,
            "go" => Language::Go,
            "java" => Language::Java,
            _ => return None,
        })
    }

    pub fn from_str_name(name: &str) -> Option<Language> {
        Language::ALL.into_iter().find(|l| l.as_str() == name)
    }

    /// Separator of in-file qualified names.
    pub fn separator(self) -> &'static str {
        match self {
            Language::Rust => "::",
            _ => ".",
        }
    }

    /// Receiver words that mean "the enclosing type".
    pub fn is_self_receiver(self, text: &str) -> bool {
        match self {
            Language::Rust => text == "self" || text == "Self",
            Language::Python => text == "self" || text == "cls",
            Language::Go => false,
            _ => text == "this" || text == "super",
        }
    }

    pub(crate) fn grammar(self) -> tree_sitter::Language {
        match self {
            Language::Rust => tree_sitter_rust::LANGUAGE.into(),
            Language::Python => tree_sitter_python::LANGUAGE.into(),
            Language::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Language::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Language::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Language::Go => tree_sitter_go::LANGUAGE.into(),
            Language::Java => tree_sitter_java::LANGUAGE.into(),
        }
    }

    /// The query source; TSX is TypeScript's query plus its JSX patterns.
    fn query_source(self) -> &'static str {
        match self {
            Language::Rust => include_str!("queries/rust.scm"),
            Language::Python => include_str!("queries/python.scm"),
            Language::TypeScript => include_str!("queries/typescript.scm"),
            Language::Tsx => concat!(
                include_str!("queries/typescript.scm"),
                include_str!("queries/tsx.scm")
            ),
            Language::JavaScript => include_str!("queries/javascript.scm"),
            Language::Go => include_str!("queries/go.scm"),
            Language::Java => include_str!("queries/java.scm"),
        }
    }

    /// Loaded, validated query (cached for the process).
    pub(crate) fn query(self) -> Result<&'static LanguageQuery> {
        static CACHE: [OnceLock<std::result::Result<LanguageQuery, QueryDefect>>; 7] =
            [const { OnceLock::new() }; 7];
        let slot = &CACHE[self as usize];
        slot.get_or_init(|| LanguageQuery::load(self))
            .as_ref()
            .map_err(|defect| AtlasError::QueryInvalid {
                language: self.as_str(),
                reason: defect.to_string(),
            })
    }

    /// Hash of the query text, part of the fact-cache key (R-EXT-3); hashed once per
    /// process (every file's cache key takes it).
    pub fn query_hash(self) -> blake3::Hash {
        static CACHE: [OnceLock<blake3::Hash>; 7] = [const { OnceLock::new() }; 7];
        *CACHE[self as usize].get_or_init(|| blake3::hash(self.query_source().as_bytes()))
    }
}

/// Capture names a query may use. `_`-prefixed captures are predicate helpers.
const ALLOWED_CAPTURES: &[&str] = &[
    "def.function",
    "def.method",
    "def.class",
    "def.struct",
    "def.enum",
    "def.interface",
    "def.impl",
    "def.field",
    "def.constant",
    "def.type",
    "def.macro",
    "def.variable",
    "def.module",
    "name",
    "scope",
    "trait",
    "ref.call",
    "ref.type",
    "ref.implement",
    "ref.inherit",
    "ref.read",
    "ref.write",
    "receiver",
    "qualifier",
    "import",
    "import.module",
    "import.name",
    "import.alias",
    "import.default",
    "import.wildcard",
    "import.tree",
    "package",
    "test.scope",
    "binding",
    "binding.name",
    "binding.type",
    "binding.ctor",
    "binding.value",
    "binding.iterable",
];

pub(crate) struct LanguageQuery {
    pub patterns: pattern::Patterns,
}

impl LanguageQuery {
    fn load(language: Language) -> std::result::Result<LanguageQuery, QueryDefect> {
        let patterns = pattern::Patterns::compile(&language.grammar(), language.query_source())?;
        validate_capture_names(&patterns.capture_names())?;
        Ok(LanguageQuery { patterns })
    }

    /// The same query compiled by tree-sitter, which the pattern engine must agree with
    /// (`extract::tests`).
    #[cfg(test)]
    pub(crate) fn tree_sitter(language: Language) -> tree_sitter::Query {
        tree_sitter::Query::new(&language.grammar(), language.query_source())
            .expect("the embedded queries compile")
    }
}

/// What is wrong with a query file (an Atlas bug: the queries are embedded).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct QueryDefect(pub String);

pub(crate) fn validate_capture_names(names: &[&str]) -> std::result::Result<(), QueryDefect> {
    for name in names {
        if !name.starts_with('_') && !ALLOWED_CAPTURES.contains(name) {
            return Err(QueryDefect(format!(
                "unknown capture @{name}; allowed: {}",
                ALLOWED_CAPTURES
                    .iter()
                    .map(|n| format!("@{n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_query_loads_and_uses_only_allowed_captures() {
        for language in Language::ALL {
            if let Err(e) = language.query() {
                panic!("{e}");
            }
        }
    }

    #[test]
    fn unknown_capture_is_rejected_with_the_allowed_list() {
        let err = validate_capture_names(&["name", "def.functoin"]).unwrap_err();
        assert!(err.0.contains("@def.functoin"), "{err}");
        assert!(err.0.contains("@def.function"), "{err}");
        assert!(validate_capture_names(&["_helper", "name"]).is_ok());
    }

    #[test]
    fn extensions_map_to_languages() {
        assert_eq!(Language::from_path("a/b.rs"), Some(Language::Rust));
        assert_eq!(Language::from_path("x.tsx"), Some(Language::Tsx));
        assert_eq!(Language::from_path("x.mjs"), Some(Language::JavaScript));
        assert_eq!(Language::from_path("README.md"), None);
        assert_eq!(Language::from_path("Makefile"), None);
    }
}
