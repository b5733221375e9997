//! The inspection helpers (R-MCP-2) end to end: `find-all`, `file-api`, `repo-map`,
//! `trace-calls`, `check-freshness` over fixture repositories — their JSON shapes, their
//! ceilings and pages (the next page's argv replayed in a new process), the confinement of
//! `file-api` to the committed inventory, and literal hits that are never calls.

mod common;
#[path = "common/inspect.rs"]
mod outputs;

use std::collections::BTreeSet;
use std::path::Path;

use common::{Run, Sandbox, value_after};
use outputs::*;

// ── Helpers ─────────────────────────────────────────────────────────────────────────

/// A sandbox with `fixture` (plus `extra` files) built without a search index.
fn built_with(fixture: &str, extra: &[(&str, &str)]) -> Sandbox {
    let s = Sandbox::with_fixture(fixture);
    for (path, text) in extra {
        s.write(path, text);
    }
    s.call("build").arg("--no-search").run().success();
    s
}

fn built(fixture: &str) -> Sandbox {
    built_with(fixture, &[])
}

/// `atlas <command> <args…> --format json`, successful, parsed.
#[track_caller]
fn ask<T: serde::de::DeserializeOwned>(s: &Sandbox, command: &str, args: &[&str]) -> T {
    s.call(command)
        .args(args.iter().copied())
        .json()
        .run()
        .success()
        .parse()
}

/// Every page from the first: the first run, then each `truncated.next` replayed in a new
/// process. Each page's stdout stays within `max_bytes` (plus the newline).
#[track_caller]
fn all_pages<T: serde::de::DeserializeOwned>(
    s: &Sandbox,
    first: Run,
    max_bytes: usize,
    truncated: impl Fn(&T) -> Option<Truncated>,
) -> Vec<T> {
    let mut pages = Vec::new();
    let mut run = first.success();
    loop {
        assert!(run.stdout.len() <= max_bytes + 1, "{}", run.describe());
        let page: T = run.parse();
        let next = truncated(&page);
        pages.push(page);
        match next {
            Some(t) => run = s.replay(&t.next).success(),
            None => return pages,
        }
        assert!(pages.len() < 200, "pages never end");
    }
}

/// The error envelope of a failed `--format json` call.
#[track_caller]
fn error_code(run: &Run) -> String {
    run.error().code
}

// ── find-all ────────────────────────────────────────────────────────────────────────

#[test]
fn find_all_reports_literal_hits_with_their_enclosing_definition() {
    let s = built("python");
    let out: FindAll = ask(&s, "find-all", &["round_money"]);
    assert_eq!((out.files_searched, out.files_matched), (6, 2));
    assert_eq!(out.hits_total, 2);
    assert!(out.truncated.is_none());
    let places: Vec<(&str, u32, u32, Option<&str>)> = out
        .hits
        .iter()
        .map(|h| (h.path.as_str(), h.line, h.column, h.enclosing.as_deref()))
        .collect();
    assert_eq!(
        places,
        [
            ("shop/pricing.py", 10, 14, Some("shop/pricing.py::checkout")),
            ("shop/util.py", 5, 5, Some("shop/util.py::round_money")),
        ]
    );
    assert!(out.hits.iter().all(|h| h.kind == "literal"));
    assert_eq!(out.hits[0].text, "    return u.round_money(amount)");
}

#[test]
fn find_all_is_literal_not_regex_and_case_is_an_option() {
    let s = built("python");
    // As a regex `Cart()` would match every `Cart`; as a literal only the two calls.
    let out: FindAll = ask(&s, "find-all", &["Cart()"]);
    let lines: Vec<(&str, u32)> = out.hits.iter().map(|h| (h.path.as_str(), h.line)).collect();
    assert_eq!(
        lines,
        [("shop/pricing.py", 14), ("tests/test_pricing.py", 6)]
    );
    let upper: FindAll = ask(&s, "find-all", &["CART()"]);
    assert_eq!(upper.hits_total, 0);
    // In any case it also finds `def test_quick_cart():` and `…_empty_cart():`.
    let any_case: FindAll = ask(&s, "find-all", &["CART()", "--case-insensitive"]);
    assert_eq!(any_case.hits_total, 4);
    assert_eq!(
        any_case
            .hits
            .iter()
            .filter(|h| h.text.starts_with("def test_"))
            .count(),
        2
    );
    // A literal that starts with a dash is still a literal, and its page argv guards it.
    let dashed: FindAll = s
        .call("find-all")
        .args(["--max-hits", "1", "--format", "json", "--", "- rate"])
        .run()
        .success()
        .parse();
    assert_eq!(dashed.hits_total, 1, "{dashed:?}");
}

#[test]
fn a_literal_in_a_comment_is_a_literal_not_a_call() {
    let notes = "def helper():\n    # checkout(cart) is what the web layer calls\n    return 1\n";
    let s = built_with("python", &[("shop/notes.py", notes)]);
    let out: FindAll = ask(&s, "find-all", &["checkout(cart)"]);
    let comment = out
        .hits
        .iter()
        .find(|h| h.path == "shop/notes.py")
        .expect("the comment is found");
    assert_eq!(comment.kind, "literal");
    assert_eq!(comment.enclosing.as_deref(), Some("shop/notes.py::helper"));
    // The graph has no call from `helper`: the occurrence is text, not a relation.
    let callers: Trace = ask(
        &s,
        "trace-calls",
        &["shop.pricing.checkout", "--depth", "1"],
    );
    assert!(callers.edges_total > 0);
    assert!(
        callers.edges.iter().all(|e| !e.caller.contains("helper")),
        "{callers:?}"
    );
}

#[test]
fn find_all_pages_by_hits_and_by_bytes_and_the_next_argv_returns_the_rest() {
    let many: String = (0..120)
        .map(|i| format!("NEEDLE_{i} = 'needle {i}'\n"))
        .collect();
    let s = built_with("python", &[("shop/many.py", &many)]);
    let expected: Vec<(u32, u32)> = (0..120u32)
        .flat_map(|i| {
            let second = format!("NEEDLE_{i} = '").len() as u32 + 1;
            [(i + 1, 1), (i + 1, second)]
        })
        .collect();
    let positions = |pages: &[FindAll]| -> Vec<(u32, u32)> {
        pages
            .iter()
            .flat_map(|p| p.hits.iter().map(|h| (h.line, h.column)))
            .collect()
    };

    let first = s.call("find-all").arg("needle").arg("-i").json().run();
    let pages: Vec<FindAll> = all_pages(&s, first, 16_000, |p: &FindAll| p.truncated.clone());
    assert_eq!(pages[0].hits.len(), 50);
    let t = pages[0].truncated.as_ref().unwrap();
    assert_eq!((t.reason.as_str(), t.omitted), ("max-items", 190));
    assert_eq!(value_after(&t.next, "--offset"), Some("50"));
    assert_eq!(positions(&pages), expected);

    // A byte ceiling cuts earlier, says so, and the pages still add up.
    let first = s
        .call("find-all")
        .args(["needle", "-i", "--max-bytes", "2000"])
        .json()
        .run();
    let pages: Vec<FindAll> = all_pages(&s, first, 2_000, |p: &FindAll| p.truncated.clone());
    let t = pages[0].truncated.as_ref().unwrap();
    assert_eq!(t.reason, "max-bytes");
    assert!(pages[0].hits.len() < 50 && !pages[0].hits.is_empty());
    assert_eq!(pages[1].offset, pages[0].hits.len());
    assert_eq!(positions(&pages), expected);
    assert!(pages.iter().all(|p| p.hits_total == 240));
}

#[test]
fn find_all_rejects_what_is_not_one_line_of_text() {
    let s = built("python");
    for literal in ["", "a\nb"] {
        let run = s.call("find-all").arg(literal).json().run();
        assert_eq!(
            error_code(&run),
            "atlas-invalid-input",
            "{}",
            run.describe()
        );
    }
    let run = s
        .call("find-all")
        .args(["x", "--max-bytes", "10"])
        .json()
        .run();
    assert_eq!(error_code(&run), "atlas-invalid-input");
}

#[test]
fn find_all_marks_hits_in_files_changed_since_the_build() {
    let s = built("python");
    s.write("shop/util.py", "# round_money moved\n");
    let out: FindAll = ask(&s, "find-all", &["round_money", "--frozen"]);
    assert_eq!(out.files_stale, 1);
    let moved = out.hits.iter().find(|h| h.path == "shop/util.py").unwrap();
    assert!(moved.stale && moved.enclosing.is_none(), "{moved:?}");
}

// ── file-api ────────────────────────────────────────────────────────────────────────

#[test]
fn file_api_outlines_a_file_with_signatures_docs_and_its_text() {
    let s = built("python");
    let out: FileApi = ask(&s, "file-api", &["shop/models.py"]);
    assert_eq!(out.path, "shop/models.py");
    assert!(!out.stale);
    assert_eq!(out.definitions_total, 12);
    let total = out
        .definitions
        .iter()
        .find(|d| d.symbol == "Item.total")
        .unwrap();
    assert_eq!(total.kind, "method");
    assert_eq!(total.lines, [22, 24]);
    assert_eq!(
        total.signature.as_deref(),
        Some("def total(self, quantity):")
    );
    assert_eq!(total.doc.as_deref(), Some("Price for a quantity."));
    let text = std::fs::read_to_string(s.repo().join("shop/models.py")).unwrap();
    assert_eq!(out.content.as_deref(), Some(text.as_str()));
    assert!(out.content_omitted.is_none() && out.truncated.is_none());
    // `./` is the same file.
    let dotted: FileApi = ask(&s, "file-api", &["./shop/models.py"]);
    assert_eq!(dotted.definitions_total, 12);
}

#[test]
fn file_api_leaves_out_text_over_half_the_budget_and_pages_its_outline() {
    let s = built("python");
    let first = s
        .call("file-api")
        .args(["shop/models.py", "--max-bytes", "1100"])
        .json()
        .run();
    let pages: Vec<FileApi> = all_pages(&s, first, 1_100, |p: &FileApi| p.truncated.clone());
    assert!(pages.len() > 1, "the outline needs several pages");
    assert_eq!(pages[0].truncated.as_ref().unwrap().reason, "max-bytes");
    let symbols: Vec<String> = pages
        .iter()
        .flat_map(|p| p.definitions.iter().map(|d| d.symbol.clone()))
        .collect();
    assert_eq!(symbols.len(), 12);
    assert_eq!(symbols.iter().collect::<BTreeSet<_>>().len(), 12);
    // The text is not there; its `expand` argv reads it, hash-verified.
    assert!(pages.iter().all(|p| p.content.is_none()));
    let omitted = pages[0].content_omitted.as_ref().unwrap();
    assert_eq!(omitted.reason, "over-half-budget");
    assert_eq!(
        pages[1].content_omitted.as_ref().unwrap().reason,
        "later-page"
    );
    let expand = omitted.expand.clone().unwrap();
    assert_eq!(expand[3], "expand", "{expand:?}");
    let expanded = s.replay(&expand).success().expand();
    let text = std::fs::read_to_string(s.repo().join("shop/models.py")).unwrap();
    assert_eq!(expanded.items[0].content, text.trim_end());
}

#[cfg(unix)]
#[test]
fn file_api_refuses_every_path_outside_the_inventory_with_one_error_and_no_content() {
    let s = Sandbox::with_fixture("python");
    std::fs::write(s.path().join("secret.py"), "SECRET = 'outside'\n").unwrap();
    std::os::unix::fs::symlink(s.path().join("secret.py"), s.repo().join("link.py")).unwrap();
    s.call("build").arg("--no-search").run().success();
    let generation = format!(".agent-spec/graph/generations/{}/graph.atlas", s.current());
    let outside = s.path().join("secret.py").display().to_string();
    for path in [
        "/etc/passwd",
        outside.as_str(),
        "../secret.py",
        "shop/../../secret.py",
        "link.py",
        ".agent-spec/graph/CURRENT",
        generation.as_str(),
        "shop",
        "shop/missing.py",
    ] {
        let run = s.call("file-api").arg(path).json().run();
        assert_eq!(run.code, 9, "{}", run.describe());
        assert_eq!(error_code(&run), "atlas-ref-unknown", "{}", run.describe());
        for leaked in ["SECRET", "root:", "outside"] {
            assert!(!run.stdout.contains(leaked), "{}", run.describe());
        }
    }
}

#[test]
fn file_api_of_a_changed_file_is_stale_and_shows_no_text() {
    let s = built("python");
    s.write("shop/util.py", "def replaced():\n    return 0\n");
    let out: FileApi = ask(&s, "file-api", &["shop/util.py", "--frozen"]);
    assert!(out.stale);
    assert!(out.content.is_none());
    assert_eq!(out.content_omitted.unwrap().reason, "stale");
    // The outline is the generation's, without text that no longer matches it.
    let symbols: Vec<&str> = out.definitions.iter().map(|d| d.symbol.as_str()).collect();
    assert_eq!(symbols, ["apply_discount", "round_money", "_unused"]);
    assert!(out.definitions.iter().all(|d| d.signature.is_none()));
    // Without --frozen the read refreshes the graph first.
    let fresh: FileApi = ask(&s, "file-api", &["shop/util.py"]);
    assert!(!fresh.stale);
    assert_eq!(fresh.definitions[0].symbol, "replaced");
}

// ── trace-calls ─────────────────────────────────────────────────────────────────────

#[test]
fn trace_calls_follows_callers_to_a_depth_with_provenance_and_sites() {
    let s = built("python");
    let one: Trace = ask(&s, "trace-calls", &["checkout", "--depth", "1"]);
    assert_eq!(one.root.symbol, "shop/pricing.py::checkout");
    let callers: Vec<&str> = one.edges.iter().map(|e| e.caller.as_str()).collect();
    assert_eq!(
        callers,
        [
            "tests/test_pricing.py::test_checkout_empty_cart",
            "shop/pricing.py::quick_cart"
        ]
    );
    let quick = &one.edges[1];
    assert_eq!(quick.callee, "shop/pricing.py::checkout");
    assert_eq!(
        (quick.provenance.as_str(), quick.resolution.as_str()),
        ("tree-sitter", "scope")
    );
    assert!(quick.confidence > 0);
    assert_eq!(quick.sites, ["shop/pricing.py:17"]);
    assert_eq!(quick.beyond_depth, 1, "test_quick_cart calls quick_cart");

    let two: Trace = ask(&s, "trace-calls", &["checkout", "--depth", "2"]);
    assert_eq!(two.edges_total, 3);
    let deep = two.edges.iter().find(|e| e.depth == 2).unwrap();
    assert_eq!(
        (deep.caller.as_str(), deep.callee.as_str()),
        (
            "tests/test_pricing.py::test_quick_cart",
            "shop/pricing.py::quick_cart"
        )
    );
}

#[test]
fn trace_calls_follows_callees_and_marks_the_frontier() {
    let s = built("python");
    let out: Trace = ask(
        &s,
        "trace-calls",
        &["checkout", "--direction", "callees", "--depth", "3"],
    );
    let callees: BTreeSet<&str> = out.edges.iter().map(|e| e.callee.as_str()).collect();
    assert_eq!(
        callees,
        BTreeSet::from([
            "shop/models.py::Cart.total",
            "shop/util.py::apply_discount",
            "shop/util.py::round_money"
        ])
    );
    // `round(…)` inside round_money and `item.total(1)` inside Cart.total are unresolved.
    let round = out
        .edges
        .iter()
        .find(|e| e.callee.ends_with("round_money"))
        .unwrap();
    let frontier = round.frontier.as_ref().expect("round_money's frontier");
    assert!(
        frontier
            .sites
            .iter()
            .any(|f| f.name == "round" && f.site == "shop/util.py:6")
    );
    let cart = out
        .edges
        .iter()
        .find(|e| e.callee.ends_with("Cart.total"))
        .unwrap();
    let frontier = cart.frontier.as_ref().unwrap();
    assert!(
        frontier
            .sites
            .iter()
            .any(|f| f.name == "total" && f.candidates == 2)
    );
    // A leaf with nothing unresolved carries no frontier.
    let leaf = out
        .edges
        .iter()
        .find(|e| e.callee.ends_with("apply_discount"))
        .unwrap();
    assert!(leaf.frontier.is_none());
}

#[test]
fn trace_calls_says_callers_are_unknown_rather_than_absent() {
    let s = built("python");
    // `item.total(1)` could mean Item.total or Cart.total: no edge, a frontier entry.
    let out: Trace = ask(&s, "trace-calls", &["shop.models.Item.total"]);
    assert_eq!(out.edges_total, 0);
    assert_eq!(out.root.frontier.unresolved, 1);
    assert_eq!(out.root.frontier.sites[0].site, "shop/models.py:37");
}

#[test]
fn trace_calls_marks_cycles_caps_fan_out_and_pages() {
    let code = "def ping(n):\n    return pong(n)\n\n\ndef pong(n):\n    return ping(n - 1)\n\n\n\
                def hub():\n    a()\n    b()\n    c()\n    d()\n    e()\n\n\n\
                def a():\n    pass\n\n\ndef b():\n    pass\n\n\ndef c():\n    pass\n\n\n\
                def d():\n    pass\n\n\ndef e():\n    pass\n";
    let s = built_with("python", &[("loop.py", code)]);
    let cycle: Trace = ask(
        &s,
        "trace-calls",
        &["ping", "--direction", "callees", "--depth", "4"],
    );
    let back = cycle
        .edges
        .iter()
        .find(|e| e.caller == "loop.py::pong")
        .unwrap();
    assert_eq!(back.callee, "loop.py::ping");
    assert_eq!(back.revisit.as_deref(), Some("cycle"));
    assert_eq!(cycle.edges_total, 2, "the cycle is not followed");

    let capped: Trace = ask(
        &s,
        "trace-calls",
        &["hub", "--direction", "callees", "--max-fanout", "2"],
    );
    assert_eq!(capped.edges_total, 2);
    assert_eq!(capped.root.fanout_omitted, 3);

    let first = s
        .call("trace-calls")
        .args(["hub", "--direction", "callees", "--max-edges", "2"])
        .json()
        .run();
    let pages: Vec<Trace> = all_pages(&s, first, 16_000, |p: &Trace| p.truncated.clone());
    let callees: Vec<String> = pages
        .iter()
        .flat_map(|p| p.edges.iter().map(|e| e.callee.clone()))
        .collect();
    assert_eq!(pages.len(), 3);
    assert_eq!(
        callees,
        ["a", "b", "c", "d", "e"].map(|n| format!("loop.py::{n}"))
    );
}

#[test]
fn trace_calls_ambiguous_and_unknown_names_are_typed_errors() {
    let s = built("python");
    let run = s.call("trace-calls").arg("total").json().run();
    assert_eq!(run.code, 7);
    let body = run.error();
    assert_eq!(body.code, "atlas-context-ambiguous");
    let choices = &body.details().choices;
    assert_eq!(choices.len(), 2);
    for choice in choices {
        assert_eq!(choice.argv[..2], ["atlas", "--code"]);
        let out: Trace = s.replay(&choice.argv).success().parse();
        assert_eq!(out.root.symbol, choice.symbol);
    }
    let run = s.call("trace-calls").arg("nothing_here").json().run();
    assert_eq!(error_code(&run), "atlas-context-no-match");
    let run = s
        .call("trace-calls")
        .args(["checkout", "--depth", "6"])
        .json()
        .run();
    assert_eq!(error_code(&run), "atlas-invalid-input");
}

// ── repo-map ────────────────────────────────────────────────────────────────────────

#[test]
fn repo_map_maps_modules_with_counts_relations_and_representatives() {
    let s = built("python");
    let out: RepoMap = ask(&s, "repo-map", &[]);
    let modules: Vec<(&str, usize, usize)> = out
        .modules
        .iter()
        .map(|m| (m.module.as_str(), m.files, m.symbols))
        .collect();
    assert_eq!(modules, [("./", 1, 2), ("shop/", 4, 9), ("tests/", 1, 2)]);
    assert_eq!(out.modules_total, 3);
    let tests = &out.modules[2];
    let calls = tests.depends_on.iter().find(|r| r.kind == "calls").unwrap();
    assert_eq!((calls.module.as_str(), calls.count), ("shop/", 3));
    let shop = &out.modules[1];
    assert!(shop.used_by.iter().any(|r| r.module == "tests/"));
    assert!(
        shop.representatives
            .iter()
            .all(|r| r.symbol.starts_with("shop/")),
        "{shop:?}"
    );
    assert!(!shop.representatives.is_empty());
}

#[test]
fn repo_map_is_bounded_and_its_pages_cover_the_map() {
    let s = built("mixed");
    let whole: RepoMap = ask(&s, "repo-map", &[]);
    assert!(whole.modules_total >= 3, "{whole:?}");
    let first = s
        .call("repo-map")
        .args(["--max-bytes", "1024"])
        .json()
        .run();
    let pages: Vec<RepoMap> = all_pages(&s, first, 1_024, |p: &RepoMap| p.truncated.clone());
    assert!(pages.len() > 1);
    let paged: BTreeSet<String> = pages
        .iter()
        .flat_map(|p| p.modules.iter().map(|m| m.module.clone()))
        .collect();
    let all: BTreeSet<String> = whole.modules.iter().map(|m| m.module.clone()).collect();
    assert_eq!(paged, all);
}

// ── check-freshness ─────────────────────────────────────────────────────────────────

fn graph_dir_listing(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        out.push(entry.file_name().to_string_lossy().into_owned());
        if entry.file_type().unwrap().is_dir() {
            out.extend(graph_dir_listing(&entry.path()));
        }
    }
    out.sort();
    out
}

#[test]
fn check_freshness_reports_modified_added_and_deleted_files_and_never_writes() {
    let s = built("python");
    let fresh: Freshness = ask(&s, "check-freshness", &[]);
    assert!(!fresh.rebuild_needed);
    assert!(fresh.files.is_empty());

    s.write("shop/util.py", "def round_money(x):\n    return x\n");
    s.write("shop/extra.py", "def extra():\n    return 1\n");
    std::fs::remove_file(s.repo().join("broken.py")).unwrap();
    let before = graph_dir_listing(&s.graph());
    let changed: Freshness = ask(&s, "check-freshness", &[]);
    assert_eq!(
        graph_dir_listing(&s.graph()),
        before,
        "check-freshness wrote"
    );
    assert!(changed.rebuild_needed);
    assert_eq!(
        (changed.modified, changed.added, changed.deleted),
        (1, 1, 1)
    );
    let change = |path: &str, change: &str| ChangedFile {
        path: path.into(),
        change: change.into(),
    };
    assert_eq!(
        changed.files,
        [
            change("broken.py", "deleted"),
            change("shop/extra.py", "added"),
            change("shop/util.py", "modified")
        ]
    );
    let text = s.call("check-freshness").text().run().success().stdout;
    assert!(
        text.starts_with("rebuild needed: 1 modified, 1 added, 1 deleted"),
        "{text}"
    );

    s.call("build").arg("--no-search").run().success();
    let rebuilt: Freshness = ask(&s, "check-freshness", &[]);
    assert!(!rebuilt.rebuild_needed && rebuilt.files.is_empty());
}

// ── One document for the CLI and the MCP tools ─────────────────────────────────────

#[test]
fn the_library_json_is_exactly_what_the_cli_prints() {
    use atlas::cli::call::Call;
    use atlas::cli::inspect::{self, FileApiArgs, FindAllArgs};
    use atlas::cli::output::Format;

    let s = built("python");
    let call = Call {
        code: Some(s.repo()),
        graph: None,
        config: atlas::config::Config::from_lookup(&|_| None),
        started: std::time::Instant::now(),
        index_resolution: None,
    };
    let find = FindAllArgs {
        literal: "amount".into(),
        case_insensitive: false,
        offset: 0,
        max_hits: Some(3),
        max_bytes: None,
        frozen: true,
        format: Format::Json,
    };
    let printed = s
        .call("find-all")
        .args(["amount", "--max-hits", "3", "--frozen"])
        .json()
        .run()
        .success()
        .stdout;
    assert_eq!(inspect::json(&call, &find).unwrap() + "\n", printed);
    let outline = FileApiArgs {
        path: "shop/util.py".into(),
        offset: 0,
        max_definitions: None,
        max_bytes: Some(1024),
        frozen: true,
        format: Format::Json,
    };
    let printed = s
        .call("file-api")
        .args(["shop/util.py", "--max-bytes", "1024", "--frozen"])
        .json()
        .run()
        .success()
        .stdout;
    assert_eq!(inspect::json(&call, &outline).unwrap() + "\n", printed);
}

#[test]
fn text_renderings_show_the_same_answers() {
    let s = built("python");
    let find = s
        .call("find-all")
        .arg("round_money")
        .text()
        .run()
        .success()
        .stdout;
    assert!(
        find.contains("shop/pricing.py:10:14 [in shop/pricing.py::checkout]"),
        "{find}"
    );
    let outline = s
        .call("file-api")
        .arg("shop/util.py")
        .text()
        .run()
        .success()
        .stdout;
    assert!(
        outline.contains("L5-6 round_money (function)  def round_money(amount):"),
        "{outline}"
    );
    let map = s.call("repo-map").text().run().success().stdout;
    assert!(map.contains("shop/  4 file(s), 9 symbol(s)"), "{map}");
    let trace = s
        .call("trace-calls")
        .arg("checkout")
        .text()
        .run()
        .success()
        .stdout;
    assert!(
        trace.contains("shop/pricing.py::quick_cart → shop/pricing.py::checkout"),
        "{trace}"
    );
    let paged = s
        .call("find-all")
        .args(["amount", "--max-hits", "2"])
        .text()
        .run()
        .success()
        .stdout;
    assert!(paged.contains("$ atlas --code"), "{paged}");
}
