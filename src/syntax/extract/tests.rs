//! Extraction checks: snapshots of every fixture file's facts, plus targeted assertions of
//! the facts the spec names (qualified names, roles, imports with aliases, partial parses).

use std::fmt::Write as _;
use std::path::Path;

use super::*;

/// Renders facts as stable text: one line per fact.
fn render(facts: &FileFacts, source: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "status {} errors={} lines={} package={:?}",
        facts.parse_status.as_str(),
        facts.error_count,
        facts.line_count,
        facts.package
    );
    for d in &facts.defs {
        let parent = d.parent.map(|p| facts.defs[p as usize].qualified.as_str());
        let sig = source
            .get(d.signature.start_byte as usize..d.signature.end_byte as usize)
            .unwrap_or("?")
            .replace('\n', "⏎");
        let _ = writeln!(
            out,
            "def {} {} L{}-{} {} parent={:?} doc={} test={} sig=`{}`",
            d.kind.as_str(),
            d.qualified,
            d.span.start_line + 1,
            d.span.end_line + 1,
            d.visibility.as_str(),
            parent,
            d.doc
                .map(|s| format!("L{}-{}", s.start_line + 1, s.end_line + 1))
                .unwrap_or("-".into()),
            d.in_test_scope,
            sig
        );
    }
    for r in &facts.refs {
        let from = r
            .from
            .map(|f| facts.defs[f as usize].qualified.as_str())
            .unwrap_or("<file>");
        let _ = writeln!(
            out,
            "ref {} {} L{} from={} receiver={:?} qualifier={:?}",
            r.role.as_str(),
            r.name,
            r.site.start_line + 1,
            from,
            r.receiver,
            r.qualifier
        );
    }
    for b in &facts.bindings {
        let scope = b
            .scope
            .map(|f| facts.defs[f as usize].qualified.as_str())
            .unwrap_or("<file>");
        let _ = writeln!(
            out,
            "binding {} in {} type={:?} init={:?} L{}",
            b.name,
            scope,
            b.type_name,
            b.initializer,
            b.site.start_line + 1
        );
    }
    for i in &facts.imports {
        let _ = writeln!(
            out,
            "import module={:?} name={:?} alias={:?} wildcard={} L{}",
            i.module,
            i.name,
            i.alias,
            i.wildcard,
            i.site.start_line + 1
        );
    }
    out
}

fn facts_of(relative: &str) -> (FileFacts, String) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(relative);
    let source = std::fs::read_to_string(&path).expect("fixture readable");
    let language = Language::from_path(relative).expect("fixture language");
    (extract(language, &source).expect("queries load"), source)
}

fn check(relative: &str) -> FileFacts {
    let (facts, source) = facts_of(relative);
    insta::assert_snapshot!(relative.replace('/', "__"), render(&facts, &source));
    facts
}

fn qualified(facts: &FileFacts) -> Vec<&str> {
    facts.defs.iter().map(|d| d.qualified.as_str()).collect()
}

#[test]
fn python_classes_methods_and_docstrings() {
    let facts = check("python/shop/models.py");
    let names = qualified(&facts);
    assert!(names.contains(&"Item.total"), "{names:?}");
    assert!(names.contains(&"Cart.add"), "{names:?}");
    let total = facts
        .defs
        .iter()
        .find(|d| d.qualified == "Item.total")
        .unwrap();
    assert_eq!(total.kind, SymbolKind::Method);
    assert!(total.doc.is_some());
    let max = facts.defs.iter().find(|d| d.name == "MAX_ITEMS").unwrap();
    assert_eq!(max.kind, SymbolKind::Constant);
    let audit = facts.defs.iter().find(|d| d.name == "_audit").unwrap();
    assert_eq!(audit.visibility, Visibility::Private);
    assert!(
        facts
            .refs
            .iter()
            .any(|r| r.role == RefRole::Inherit && r.name == "Base")
    );
    assert!(
        facts
            .refs
            .iter()
            .any(|r| r.role == RefRole::TypeUse && r.name == "Item")
    );
    let self_call = facts.refs.iter().find(|r| r.name == "describe").unwrap();
    assert_eq!(self_call.receiver.as_deref(), Some("self"));
    assert_eq!(
        facts.defs[self_call.from.unwrap() as usize].qualified,
        "Cart._audit"
    );
}

#[test]
fn python_imports_keep_aliases_and_relative_modules() {
    let facts = check("python/shop/pricing.py");
    let product = facts
        .imports
        .iter()
        .find(|i| i.alias.as_deref() == Some("Product"))
        .unwrap();
    assert_eq!(product.module, "shop.models");
    assert_eq!(product.name.as_deref(), Some("Item"));
    let util = facts
        .imports
        .iter()
        .find(|i| i.name.as_deref() == Some("util"))
        .unwrap();
    assert_eq!(util.module, ".");
    let u = facts
        .imports
        .iter()
        .find(|i| i.alias.as_deref() == Some("u"))
        .unwrap();
    assert_eq!((u.module.as_str(), u.name.as_deref()), ("shop.util", None));
}

#[test]
fn broken_python_is_partial_but_keeps_facts() {
    let facts = check("python/broken.py");
    assert_eq!(facts.parse_status, ParseStatus::Partial);
    assert!(facts.error_count > 0);
    assert!(qualified(&facts).contains(&"fine"));
}

#[test]
fn rust_impls_traits_and_test_modules() {
    let facts = check("rust/src/geometry.rs");
    let names = qualified(&facts);
    for expected in [
        "Shape",
        "Shape::area",
        "Circle::new",
        "Circle::area",
        "Circle::fmt",
        "tests::circle_area",
    ] {
        assert!(names.contains(&expected), "missing {expected}: {names:?}");
    }
    let implements: Vec<_> = facts
        .refs
        .iter()
        .filter(|r| r.role == RefRole::Implement)
        .map(|r| (r.name.as_str(), r.qualifier.as_deref()))
        .collect();
    assert!(implements.contains(&("Shape", None)), "{implements:?}");
    assert!(
        implements.contains(&("Display", Some("fmt"))),
        "{implements:?}"
    );
    let circle_area = facts
        .defs
        .iter()
        .find(|d| d.qualified == "tests::circle_area")
        .unwrap();
    assert!(circle_area.in_test_scope);
    let new = facts
        .defs
        .iter()
        .find(|d| d.qualified == "Circle::new")
        .unwrap();
    assert_eq!(
        (new.kind, new.visibility),
        (SymbolKind::Method, Visibility::Public)
    );
    let circle = facts
        .defs
        .iter()
        .find(|d| d.name == "Circle" && d.kind == SymbolKind::Struct)
        .unwrap();
    assert!(circle.doc.is_some(), "doc comment above #[derive] is found");
}

#[test]
fn rust_use_trees_are_flattened() {
    let facts = check("rust/src/lib.rs");
    let bound: Vec<_> = facts
        .imports
        .iter()
        .filter_map(|i| i.local_name())
        .collect();
    assert_eq!(bound, vec!["Circle", "Shape"]);
    check("rust/src/render.rs");
}

/// Test code outside a `#[cfg(test)] mod`: a `#[test]` function (also `#[tokio::test]`,
/// and with more attributes after it) and any item under `#[cfg(test)]` is test scope,
/// with its members; a function under another attribute is not.
#[test]
fn rust_test_functions_and_cfg_test_items_are_test_scope() {
    let source = "\
#[cfg(test)]
#[test]
fn flagged() {}

#[test]
#[should_panic]
fn panics() {}

#[tokio::test]
async fn awaits() {}

#[cfg(test)]
fn helper() -> u32 { 1 }

#[cfg(test)]
#[allow(dead_code)]
fn unused_helper() {}

#[cfg(test)]
impl Probe {
    fn probe(&self) {}
}

#[inline]
fn shipped() {}

#[cfg(feature = \"x\")]
fn featured() {}

struct Probe;
";
    let facts = extract(Language::Rust, source).expect("extracts");
    let scope: Vec<(&str, bool)> = facts
        .defs
        .iter()
        .map(|d| (d.qualified.as_str(), d.in_test_scope))
        .collect();
    assert_eq!(
        scope,
        [
            ("flagged", true),
            ("panics", true),
            ("awaits", true),
            ("helper", true),
            ("unused_helper", true),
            ("impl Probe", true),
            ("Probe::probe", true),
            ("shipped", false),
            ("featured", false),
            ("Probe", false),
        ],
        "{scope:?}"
    );
}

#[test]
fn typescript_interfaces_classes_and_heritage() {
    let facts = check("typescript/src/model.ts");
    assert!(qualified(&facts).contains(&"User.validate"));
    assert!(
        facts
            .refs
            .iter()
            .any(|r| r.role == RefRole::Implement && r.name == "Entity")
    );
    let facts = check("typescript/src/repo.ts");
    assert!(
        facts
            .refs
            .iter()
            .any(|r| r.role == RefRole::Inherit && r.name == "Repository")
    );
    let ns = facts
        .imports
        .iter()
        .find(|i| i.alias.as_deref() == Some("model"))
        .unwrap();
    assert_eq!((ns.module.as_str(), ns.name.as_deref()), ("./model", None));
    let facts = check("typescript/src/view.tsx");
    assert!(qualified(&facts).contains(&"App"));
    assert!(
        facts
            .refs
            .iter()
            .any(|r| r.role == RefRole::Call && r.name == "UserBadge")
    );
}

#[test]
fn javascript_require_and_arrow_functions() {
    check("javascript/src/lib.js");
    let facts = check("javascript/src/app.js");
    let run = facts.defs.iter().find(|d| d.name == "run").unwrap();
    assert_eq!(run.kind, SymbolKind::Function);
    assert!(
        facts
            .imports
            .iter()
            .any(|i| i.module == "./lib" && i.alias.as_deref() == Some("lib"))
    );
}

#[test]
fn go_methods_are_qualified_by_receiver() {
    let facts = check("go/store/store.go");
    let names = qualified(&facts);
    assert!(names.contains(&"Memory.Get"), "{names:?}");
    assert!(names.contains(&"Store.Get"), "{names:?}");
    assert_eq!(facts.package.as_deref(), Some("store"));
    let facts = check("go/main.go");
    let kv = facts
        .imports
        .iter()
        .find(|i| i.alias.as_deref() == Some("kv"))
        .unwrap();
    assert_eq!(kv.module, "example.com/kv/store");
}

#[test]
fn java_packages_imports_and_implements() {
    let facts = check("java/src/main/java/com/example/data/MemoryRepository.java");
    assert_eq!(facts.package.as_deref(), Some("com.example.data"));
    assert!(
        facts
            .refs
            .iter()
            .any(|r| r.role == RefRole::Implement && r.name == "Repository")
    );
    let list = facts
        .imports
        .iter()
        .find(|i| i.name.as_deref() == Some("List"))
        .unwrap();
    assert_eq!(list.module, "java.util");
    check("java/src/main/java/com/example/app/App.java");
}

#[test]
fn type_names_are_normalised() {
    for (text, expected) in [
        ("&mut dyn Shape", Some("Shape")),
        ("Optional[app.Flask]", Some("Flask")),
        ("Flask | None", Some("Flask")),
        ("None | Flask", Some("Flask")),
        ("List<User>", Some("List")),
        ("*Memory", Some("Memory")),
        ("Box<dyn Shape>", Some("Shape")),
        ("\"Cart\"", Some("Cart")),
        ("fmt::Formatter<'_>", Some("Formatter")),
        ("(a, b)", None),
    ] {
        assert_eq!(normalize_type(text).as_deref(), expected, "{text}");
    }
}

#[test]
fn bindings_type_receivers() {
    let (facts, _) = facts_of("python/shop/pricing.py");
    let cart = facts
        .bindings
        .iter()
        .find(|b| b.name == "cart" && b.type_name.is_some())
        .unwrap();
    assert_eq!(cart.type_name.as_deref(), Some("Cart"));
    assert_eq!(facts.defs[cart.scope.unwrap() as usize].name, "checkout");
    let source = "class Shop:\n    def __init__(self):\n        self.cart = Cart()\n";
    let facts = extract(Language::Python, source).unwrap();
    let cart = facts
        .bindings
        .iter()
        .find(|b| b.name == "self.cart")
        .unwrap();
    assert_eq!(cart.initializer.as_deref(), Some("Cart"));
    assert_eq!(
        facts.defs[cart.scope.unwrap() as usize].name,
        "Shop",
        "self attributes live in the class"
    );
    let (facts, _) = facts_of("typescript/src/model.ts");
    assert!(
        facts
            .bindings
            .iter()
            .any(|b| b.name == "this.email" && b.type_name.as_deref() == Some("string"))
    );
}

#[test]
fn a_call_is_returned_only_from_the_function_that_returns_its_name() {
    use crate::syntax::facts::site;
    let source = "\
rv = compute()

def wraps():
    rv = make()
    def inner():
        return rv
    return inner

def passes():
    rv = build()
    return rv
";
    let facts = extract(Language::Python, source).unwrap();
    let returned = |name: &str| {
        let call = facts
            .refs
            .iter()
            .find(|r| r.name == name)
            .unwrap_or_else(|| panic!("a call of {name}"));
        call.site_flags & site::RETURNED != 0
    };
    // Module-level code returns nothing, even a name some function returns.
    assert!(!returned("compute"));
    // `inner` returns `rv`, not `wraps`, which returns `inner`.
    assert!(!returned("make"));
    assert!(returned("build"));
}

#[test]
fn garbage_input_never_panics() {
    for language in Language::ALL {
        for source in [
            "",
            "\u{0}\u{1}",
            "}}}{{{((",
            "class def fn func (",
            "\u{feff}é😀 \n\t",
        ] {
            let facts = extract(language, source).expect("extraction never fails on input");
            // Whatever came out is consistent: spans ordered and inside the text, parents
            // and scopes within the definitions.
            if let Err(e) = facts.validate() {
                panic!("{language:?} {source:?}: inconsistent facts: {e}");
            }
            for def in &facts.defs {
                assert!(
                    def.span.end_byte as usize <= source.len(),
                    "{language:?} {source:?}"
                );
            }
            // Unbalanced brackets are never a clean parse.
            if source == "}}}{{{((" {
                assert_eq!(
                    facts.parse_status,
                    ParseStatus::Partial,
                    "{language:?}: {source:?} parsed cleanly"
                );
                assert!(
                    facts.error_count > 0,
                    "{language:?}: no syntax error counted"
                );
            }
        }
    }
}

/// Facts as tree-sitter's own query engine finds them: what the pattern engine
/// (`lang::pattern`) replaced, and must agree with.
fn extract_by_tree_sitter(language: Language, source: &str) -> FileFacts {
    use tree_sitter::{QueryCursor, StreamingIterator};
    let query = crate::syntax::lang::LanguageQuery::tree_sitter(language);
    let names = query.capture_names();
    extract_with(language, source, &|root, source, each| {
        let mut cursor = QueryCursor::new();
        cursor.set_max_start_depth(Some(MAX_NESTING));
        let mut matches = cursor.matches(&query, root, source.as_bytes());
        while let Some(m) = matches.next() {
            let captures: Vec<(&str, Node)> = m
                .captures()
                .iter()
                .map(|c| (names[c.index as usize], c.node))
                .collect();
            each(&captures);
        }
        drop(matches);
        cursor.did_exceed_match_limit()
    })
    .expect("the embedded queries compile")
}

/// Source files under `dir` (sorted, hidden directories and `target` skipped) with
/// their language.
fn sources_under(dir: &Path, out: &mut Vec<(std::path::PathBuf, Language)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" && name != "node_modules" {
                sources_under(&path, out);
            }
        } else if let Some(language) = Language::from_path(name) {
            out.push((path, language));
        }
    }
}

/// Where the two engines' facts for one file differ, if they do.
fn engines_disagree(language: Language, source: &str) -> Option<String> {
    let ours = extract(language, source).expect("extraction never fails");
    let theirs = extract_by_tree_sitter(language, source);
    if ours == theirs {
        return None;
    }
    let parts = |f: &FileFacts| -> Vec<String> {
        let mut out = vec![format!(
            "{:?} {:?} {} {:?} {:?}",
            f.parse_status, f.limit, f.error_count, f.error_lines, f.package
        )];
        out.extend(f.defs.iter().map(|d| format!("{d:?}")));
        out.extend(f.refs.iter().map(|r| format!("{r:?}")));
        out.extend(f.imports.iter().map(|i| format!("{i:?}")));
        out.extend(f.bindings.iter().map(|b| format!("{b:?}")));
        out
    };
    let (a, b) = (parts(&ours), parts(&theirs));
    let first = a
        .iter()
        .zip(&b)
        .find(|(x, y)| x != y)
        .map(|(x, y)| format!("ours:   {x}\ntheirs: {y}"))
        .unwrap_or_else(|| format!("{} facts against {}", a.len(), b.len()));
    Some(first)
}

#[test]
fn the_pattern_engine_extracts_what_tree_sitter_queries_extract() {
    // Every fixture and corpus source, the garbage inputs, and (for a wider check by
    // hand) every source under the tree named by ATLAS_PATTERN_TREE when the test is
    // compiled: see docs/PERFORMANCE.md.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources_under(&root.join("fixtures"), &mut files);
    sources_under(&root.join("corpus"), &mut files);
    if let Some(tree) = option_env!("ATLAS_PATTERN_TREE") {
        sources_under(Path::new(tree), &mut files);
    }
    assert!(files.len() >= 20, "the fixtures hold sources");
    let mut compared = 0;
    let mut disagreements = Vec::new();
    for (path, language) in &files {
        let Ok(source) = std::fs::read_to_string(path) else {
            continue;
        };
        compared += 1;
        if let Some(difference) = engines_disagree(*language, &source) {
            disagreements.push(format!("{}:\n{difference}", path.display()));
        }
    }
    for language in Language::ALL {
        for source in [
            "",
            "}}}{{{((",
            "class def fn func (",
            "import from export *",
        ] {
            if let Some(difference) = engines_disagree(language, source) {
                disagreements.push(format!("{language:?} {source:?}:\n{difference}"));
            }
        }
    }
    eprintln!("{compared} files compared");
    assert!(
        disagreements.is_empty(),
        "{} of {compared} files differ; first ones:\n{}",
        disagreements.len(),
        disagreements
            .iter()
            .take(8)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn a_node_matched_more_ways_than_the_cap_is_truncated_and_says_so() {
    use crate::syntax::lang::pattern::MAX_MATCHES_PER_NODE;
    let names: Vec<String> = (0..=MAX_MATCHES_PER_NODE)
        .map(|i| format!("n{i}"))
        .collect();
    let source = format!("from m import ({})\n", names.join(", "));
    let facts = extract(Language::Python, &source).expect("extraction never fails");
    assert_eq!(facts.parse_status, ParseStatus::Truncated);
    let limit = facts.limit.expect("the cut is reported");
    assert!(limit.contains(&MAX_MATCHES_PER_NODE.to_string()), "{limit}");
    assert_eq!(facts.imports.len(), MAX_MATCHES_PER_NODE);
}

/// Items written inside item-level macro calls (tokio's `cfg_rt! { … }`) are extracted
/// at their own positions and nested in what surrounds the call; a body that is not
/// items stays a token tree, and nesting past the limit is reported.
#[test]
fn rust_items_inside_item_level_macro_calls_are_extracted() {
    let source = "\
cfg_rt! {
    mod spawn;
    pub use spawn::spawn;

    /// Runs it.
    pub fn run(n: u32) -> u32 {
        helper(n)
    }

    cfg_inner! {
        pub struct Deep;
    }
}

pub struct Runtime;

impl Runtime {
    cfg_rt! {
        pub fn block_on(&self) {
            self.enter();
        }
    }
}

lazy_static! {
    static ref TABLE: u32 = 1;
}

impl_ops!(u8, u16);
impl_ops! { u32 => fn }

fn body() {
    assert_eq!(parse(vec![make()]), 3);
}
";
    let facts = extract(Language::Rust, source).expect("extraction never fails");
    assert_eq!(facts.parse_status, ParseStatus::Complete);
    let names = qualified(&facts);
    // tree-sitter reads `lazy_static!`'s `static ref` as a static: it is one.
    for expected in [
        "spawn",
        "run",
        "Deep",
        "Runtime",
        "Runtime::block_on",
        "TABLE",
    ] {
        assert!(names.contains(&expected), "missing {expected}: {names:?}");
    }
    for absent in ["u8", "u32"] {
        assert!(!names.contains(&absent), "{absent} extracted: {names:?}");
    }
    let run = facts.defs.iter().find(|d| d.name == "run").unwrap();
    assert_eq!(
        (run.kind, run.span.start_line, run.name_span.start_line),
        (SymbolKind::Function, 5, 5),
        "positions are the file's"
    );
    assert_eq!(
        run.doc.map(|d| d.start_line),
        Some(4),
        "its doc comment is found"
    );
    let block_on = facts.defs.iter().find(|d| d.name == "block_on").unwrap();
    assert_eq!(block_on.kind, SymbolKind::Method);
    let calls: Vec<_> = facts
        .refs
        .iter()
        .filter(|r| r.role == RefRole::Call)
        .map(|r| (r.name.as_str(), r.site.start_line))
        .collect();
    assert!(calls.contains(&("helper", 6)), "{calls:?}");
    assert!(calls.contains(&("enter", 19)), "{calls:?}");
    // Calls inside a call in expression position, and inside one nested in it, are
    // the enclosing function's.
    assert!(calls.contains(&("parse", 32)), "{calls:?}");
    assert!(calls.contains(&("make", 32)), "{calls:?}");
    let body = facts
        .defs
        .iter()
        .position(|d| d.name == "body")
        .map(|i| i as u32);
    for name in ["parse", "make"] {
        let call = facts.refs.iter().find(|r| r.name == name).unwrap();
        assert_eq!(call.from, body, "{name}");
    }
    let imports: Vec<_> = facts.imports.iter().map(|i| i.local_name()).collect();
    assert_eq!(imports, vec![Some("spawn")]);

    // Calls nested past the limit: the outer ones are extracted, the cut is reported.
    let depth = MAX_MACRO_NESTING as usize + 2;
    let mut nested = String::new();
    for level in 0..depth {
        nested.push_str(&format!("m{level}! {{ pub fn f{level}() {{}}\n"));
    }
    nested.push_str(&"}\n".repeat(depth));
    let facts = extract(Language::Rust, &nested).expect("extraction never fails");
    assert_eq!(facts.parse_status, ParseStatus::Truncated);
    assert!(
        facts.limit.as_deref().unwrap_or("").contains("macro"),
        "{:?}",
        facts.limit
    );
    let names = qualified(&facts);
    assert!(names.contains(&"f0") && names.contains(&"f7"), "{names:?}");
    assert!(!names.contains(&"f9"), "{names:?}");
}

/// Hostile Rust nesting: modules far deeper than a recursion's stack allows are walked
/// without one, and a macro body that nests deeper than the limit, in a file that does
/// not, is reported as cut.
#[test]
fn rust_macro_bodies_never_overflow_and_report_their_depth() {
    let depth = 30_000;
    let source = format!("{}{}", "mod a { ".repeat(depth), "} ".repeat(depth));
    let facts = extract(Language::Rust, &source).expect("extraction never fails");
    assert_eq!(facts.parse_status, ParseStatus::Truncated);

    let calls = 300;
    let source = format!(
        "fn f() {{\n    assert!({}x{});\n}}\n",
        "g(".repeat(calls),
        ")".repeat(calls)
    );
    let facts = extract(Language::Rust, &source).expect("extraction never fails");
    assert_eq!(
        facts.parse_status,
        ParseStatus::Truncated,
        "{:?}",
        facts.limit
    );
    assert!(
        facts.limit.as_deref().unwrap_or("").contains("nested"),
        "{:?}",
        facts.limit
    );
    assert!(
        facts.refs.iter().any(|r| r.name == "g"),
        "the outer calls are kept"
    );
}

/// A quoting macro's body is code it generates (`quote! { … }`), not code that runs
/// there: none of it is extracted.
#[test]
fn rust_quoted_code_is_not_extracted() {
    let source = "fn expand() -> TokenStream {\n    quote! { impl X { fn serialize(&self) { helper() } } }\n}\n";
    let facts = extract(Language::Rust, source).expect("extraction never fails");
    let names = qualified(&facts);
    assert_eq!(names, vec!["expand"]);
    assert!(
        !facts.refs.iter().any(|r| r.name == "helper"),
        "{:?}",
        facts.refs
    );
}
