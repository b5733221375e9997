//! Every stored code and its name, pinned (issue 12): the graph format and the fact cache
//! store these numbers, so a change here is a format change (bump its version, keep the
//! old golden file).

use atlas::graph::codes::{EdgeKind, EdgeSubkind, FileClass, Provenance, Resolution};
use atlas::syntax::facts::{ParseStatus, RefRole, SymbolKind, Visibility};
use atlas::syntax::lang::Language;

macro_rules! pinned {
    ($name:ident, [$(($code:literal, $text:literal)),+ $(,)?]) => {{
        let actual: Vec<(u8, &str)> = $name::ALL.iter().map(|v| (v.code(), v.as_str())).collect();
        assert_eq!(actual, [$(($code, $text)),+], stringify!($name));
        for value in $name::ALL {
            assert_eq!($name::from_code(value.code()), Some(value));
        }
        assert_eq!($name::from_code(200), None, stringify!($name));
    }};
}

#[test]
fn stored_codes_never_change_meaning() {
    pinned!(
        SymbolKind,
        [
            (0, "module"),
            (1, "file"),
            (2, "function"),
            (3, "method"),
            (4, "class"),
            (5, "struct"),
            (6, "enum"),
            (7, "interface"),
            (8, "impl"),
            (9, "field"),
            (10, "constant"),
            (11, "type-alias"),
            (12, "macro"),
            (13, "variable"),
        ]
    );
    pinned!(Visibility, [(0, "public"), (1, "private"), (2, "internal")]);
    pinned!(
        RefRole,
        [
            (0, "call"),
            (1, "type-use"),
            (2, "import"),
            (3, "read"),
            (4, "write"),
            (5, "inherit"),
            (6, "implement"),
        ]
    );
    pinned!(
        ParseStatus,
        [(0, "complete"), (1, "partial"), (2, "truncated")]
    );
    pinned!(
        EdgeKind,
        [
            (0, "contains"),
            (1, "calls"),
            (2, "references"),
            (3, "uses-type"),
            (4, "implements"),
            (5, "imports"),
        ]
    );
    pinned!(EdgeSubkind, [(0, "none"), (1, "extends")]);
    pinned!(Provenance, [(0, "tree-sitter"), (1, "scip")]);
    pinned!(
        Resolution,
        [
            (0, "precise"),
            (1, "import"),
            (2, "scope"),
            (3, "qualified"),
            (4, "unique-name"),
        ]
    );
    pinned!(
        FileClass,
        [
            (0, "source"),
            (1, "test"),
            (2, "generated"),
            (3, "vendored"),
            (4, "doc"),
            (5, "manifest"),
        ]
    );
    pinned!(
        Language,
        [
            (0, "rust"),
            (1, "python"),
            (2, "typescript"),
            (3, "tsx"),
            (4, "javascript"),
            (5, "go"),
            (6, "java"),
        ]
    );
}

#[test]
fn call_site_flags_and_node_flags_never_change_meaning() {
    use atlas::graph::data::{FLAG_DECLARES_ONLY, FLAG_HAS_DOC, FLAG_TEST_SCOPE};
    use atlas::syntax::facts::site;
    assert_eq!(
        [
            site::HANDLER,
            site::GUARD,
            site::RESULT,
            site::RETURNED,
            site::RAISED
        ],
        [1, 2, 4, 8, 16]
    );
    assert_eq!(
        [FLAG_TEST_SCOPE, FLAG_HAS_DOC, FLAG_DECLARES_ONLY],
        [1, 2, 4]
    );
}
