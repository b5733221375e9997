//! The graph vocabulary shared by resolution, the compiled graph and its readers:
//! edge kinds, provenance and resolution classes (R-RES-2/3). Discriminants are on-disk
//! codes of the graph format and never change meaning.

use crate::code_enum::code_enum;

code_enum! {
    pub enum EdgeKind {
        Contains = 0 => "contains",
        Calls = 1 => "calls",
        References = 2 => "references",
        UsesType = 3 => "uses-type",
        Implements = 4 => "implements",
        Imports = 5 => "imports",
    }
}

impl EdgeKind {
    pub fn from_str_name(name: &str) -> Option<EdgeKind> {
        EdgeKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

code_enum! {
    /// Edge subkinds: `implements` covers trait/interface impls and class inheritance.
    pub enum EdgeSubkind {
        None = 0 => "none",
        Extends = 1 => "extends",
    }
}

code_enum! {
    pub enum Provenance {
        TreeSitter = 0 => "tree-sitter",
        Scip = 1 => "scip",
    }
}

code_enum! {
    /// How an edge's target was decided (R-RES-1/2), strongest first.
    pub enum Resolution {
        Precise = 0 => "precise",
        Import = 1 => "import",
        Scope = 2 => "scope",
        Qualified = 3 => "qualified",
        UniqueName = 4 => "unique-name",
    }
}

code_enum! {
    /// File classes (R-INV-4); they drive projection's source-admission rule.
    pub enum FileClass {
        Source = 0 => "source",
        Test = 1 => "test",
        Generated = 2 => "generated",
        Vendored = 3 => "vendored",
        Doc = 4 => "doc",
        Manifest = 5 => "manifest",
    }
}
