use super::*;

#[test]
fn rust_module_paths() {
    assert_eq!(rust_module_of("src/lib.rs"), ("src".into(), "".into()));
    assert_eq!(rust_module_of("src/a/b.rs"), ("src".into(), "a::b".into()));
    assert_eq!(
        rust_module_of("crates/x/src/a/mod.rs"),
        ("crates/x/src".into(), "a".into())
    );
    assert_eq!(rust_module_of("tests/it.rs"), ("tests".into(), "it".into()));
    assert_eq!(
        rust_module_of("crates/x/tests/common/mod.rs"),
        ("crates/x/tests".into(), "common".into())
    );
    assert_eq!(rust_module_of("build.rs"), ("".into(), "".into()));
}

#[test]
fn value_texts_name_their_types() {
    assert_eq!(asserted_type("p.Get().(*Context)"), Some("Context"));
    assert_eq!(asserted_type("raw as Request"), Some("Request"));
    assert_eq!(asserted_type("t.cast(Group, cmd)"), Some("Group"));
    assert_eq!(asserted_type("x as const"), None);
    assert_eq!(
        value_branches("[] if routes is None else list(routes)"),
        ["list(routes)"]
    );
    assert_eq!(value_branches("a or b"), ["a", "b"]);
    assert_eq!(value_branches("ok ? make() : null"), ["make()"]);
    assert_eq!(value_branches("f(a if b else c)"), ["f(a if b else c)"]);
    assert_eq!(arguments_of("f(a, g(b))"), Some("a, g(b)"));
    assert_eq!(
        callee_of("Server::builder().port(1)"),
        Some("Server::builder().port")
    );
}

#[test]
fn unclosed_and_multibyte_collection_texts_name_nothing() {
    // Found by `operator_shaped_texts_never_panic`.
    assert_eq!(crate::syntax::extract::element_type("list["), None);
    assert_eq!(crate::syntax::extract::element_type("listá"), None);
    assert_eq!(crate::syntax::extract::collection_items("Optional[á"), None);
    assert_eq!(
        crate::syntax::extract::collection_items("Sequence[Route] | None").as_deref(),
        Some("Route")
    );
}

/// Every helper that reads a value's text, on `text`.
fn exercise_value_text(text: &str) {
    let _ = strip_value_noise(text);
    let _ = callee_of(text);
    let _ = arguments_of(text);
    let _ = asserted_type(text);
    let _ = value_branches(text);
    let _ = crate::syntax::extract::collection_items(text);
    let _ = crate::syntax::extract::element_type(text);
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config {
        failure_persistence: None,
        ..proptest::test_runner::Config::default()
    })]
    // Value texts come from any source file: no text may panic the helpers (a
    // multi-byte character next to an operator once did).
    #[test]
    fn value_text_helpers_never_panic(text in "\\PC{0,40}") {
        exercise_value_text(&text);
    }

    #[test]
    fn operator_shaped_texts_never_panic(
        parts in proptest::collection::vec(
            proptest::sample::select(vec![
                "á", "é", " if ", " else ", " or ", " ? ", " : ", " ?? ", " as ", ".(", "(",
                ")", "[", "]", "<", ">", "*", "cast", "list", "x", ",", "|", "None",
            ]),
            0..12,
        )
    ) {
        exercise_value_text(&parts.concat());
    }
}

fn interface_facts(source: &str) -> FileFacts {
    crate::syntax::extract::extract(Language::Python, source).expect("python extracts")
}

#[test]
fn an_interface_ignores_shifted_offsets_and_other_references_but_not_definitions() {
    let base = "class A:\n    def f(self, x):\n        y = g(x)\n        return y\n\n    def h(self):\n        return 1\n";
    let digest = |source: &str| {
        let facts = interface_facts(source);
        incremental::interface_digest(Some(&facts), &facts.bindings)
    };
    let before = digest(base);
    // A line inside a body: every later offset moves, one call is added.
    let shifted = base.replace("        y = g(x)\n", "        print(x)\n        y = g(x)\n");
    assert_eq!(digest(&shifted), before);
    // A comment appended: nothing another file reads changed.
    assert_eq!(digest(&format!("{base}# note\n")), before);
    // A definition added, a binding's value changed, a base added: reshaped.
    assert_ne!(digest(&format!("{base}\ndef k():\n    pass\n")), before);
    assert_ne!(digest(&base.replace("y = g(x)", "y = k(x)")), before);
    assert_ne!(digest(&base.replace("class A:", "class A(B):")), before);
    assert_ne!(incremental::interface_digest(None, &[]), before);
}
