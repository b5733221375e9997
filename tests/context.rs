//! `atlas context` end to end: each negative case of SPEC §5 is its own test.

mod common;

use common::{ContextOut, Sandbox};
use serde_json::Value;

fn built(fixture: &str) -> Sandbox {
    let s = Sandbox::with_fixture(fixture);
    s.build_json();
    s
}

/// `atlas context <query> --profile symbol --frozen`, which must be a no-match.
#[track_caller]
fn no_match(s: &Sandbox, query: &str) {
    s.context(query)
        .profile("symbol")
        .frozen()
        .run()
        .failure(7, "atlas-context-no-match");
}

fn without_timings(mut output: Value) -> Value {
    output["receipt"]["timings_ms"] = Value::Null;
    output["receipt"]["serialized_bytes"] = Value::Null;
    output
}

/// `atlas context <query> --profile <profile> --frozen --format json`, which must succeed.
fn frozen_json(s: &Sandbox, query: &str, profile: &str) -> ContextOut {
    s.context(query)
        .profile(profile)
        .frozen()
        .json()
        .run()
        .success()
        .context()
}

#[test]
fn symbol_profile_shows_declaration_callers_and_callees_with_provenance() {
    let s = built("python");
    let out = frozen_json(&s, "shop.pricing.checkout", "symbol");
    let anchor = &out.intent.anchors[0];
    assert_eq!(anchor.symbol, "shop/pricing.py::checkout");
    assert_eq!(anchor.tier.as_deref(), Some("exact-id"));
    let declaration = &out.evidence[0];
    assert_eq!(
        (declaration.class.as_str(), declaration.required),
        ("declaration", true)
    );
    let source = declaration.source.as_ref().expect("declaration source");
    assert!(source.text.contains("def checkout"), "{}", source.text);
    let callee = out
        .of_class("callee")
        .find(|e| e.symbol.as_deref() == Some("shop/util.py::apply_discount"))
        .expect("callee");
    let relation = callee.relation.as_ref().expect("callee relation");
    assert_eq!(relation.provenance, "tree-sitter");
    assert_eq!(relation.resolution, "import");
    assert_eq!(
        relation.site.as_ref().map(|s| s.path.as_str()),
        Some("shop/pricing.py")
    );
    assert!(out.has("caller", "shop/pricing.py::quick_cart"));
}

#[test]
fn ambiguous_suffix_is_reported_with_candidates() {
    let s = built("python");
    let run = s
        .context("total")
        .profile("symbol")
        .frozen()
        .json()
        .run()
        .failure(7, "atlas-context-ambiguous");
    let error = run.error();
    assert_eq!(error.code, "atlas-context-ambiguous");
    let candidates = &error.details().candidates;
    for wanted in ["shop/models.py::Item.total", "shop/models.py::Cart.total"] {
        assert!(
            candidates.iter().any(|c| c == wanted),
            "{wanted} in {candidates:?}"
        );
    }
    // Qualifying the name resolves it.
    s.context("Cart.total")
        .profile("symbol")
        .frozen()
        .run()
        .success();
}

#[test]
fn no_match_is_a_typed_outcome_not_an_empty_success() {
    let s = built("python");
    let run = s
        .context("zzz_nothing_here")
        .profile("symbol")
        .frozen()
        .json()
        .run()
        .failure(7, "atlas-context-no-match");
    assert_eq!(run.error().code, "atlas-context-no-match");
    // An empty query is a wrong call, as an empty search is: no match was looked for.
    for empty in ["", "  ", "\t\n"] {
        s.context(empty)
            .profile("symbol")
            .frozen()
            .json()
            .run()
            .failure(2, "atlas-invalid-input");
    }
    // A pasted 60 KB query is not printed back whole, on stderr or in the JSON.
    let pasted = "zzqq".repeat(15_000);
    let long = s
        .context(&pasted)
        .profile("symbol")
        .frozen()
        .json()
        .run()
        .failure(7, "atlas-context-no-match");
    assert!(long.stderr.len() < 1000, "{} bytes", long.stderr.len());
    assert!(
        long.stderr.contains("(60000 bytes in all)"),
        "{}",
        long.stderr
    );
    assert!(long.stdout.len() < 2000, "{} bytes", long.stdout.len());
    // Beyond 64 KiB it is refused before anything is read, the limit named, not echoed.
    let over = s
        .context(&"zzqq".repeat(30_000))
        .profile("symbol")
        .frozen()
        .json()
        .run()
        .failure(2, "atlas-invalid-input");
    assert!(over.stderr.len() < 1000, "{} bytes", over.stderr.len());
    assert!(over.stdout.len() < 1000, "{} bytes", over.stdout.len());
}

#[test]
fn stale_source_keeps_the_skeleton_and_requires_read_back() {
    let s = built("python");
    s.write(
        "shop/util.py",
        "# edited after the build\ndef apply_discount(amount, rate):\n    return amount\n",
    );
    let out = frozen_json(&s, "apply_discount", "symbol");
    let declaration = &out.evidence[0];
    assert_eq!(declaration.projection, "stale-skeleton");
    assert!(declaration.source.is_none(), "no text from a changed file");
    assert_eq!(
        declaration.symbol.as_deref(),
        Some("shop/util.py::apply_discount")
    );
    assert_eq!(
        declaration.diagnostics.first().map(String::as_str),
        Some("atlas-context-stale-source")
    );
    assert!(out.receipt.read_back_required);
    assert!(out.diagnostics.iter().any(|d| {
        d.code == "atlas-context-stale-source" && d.path.as_deref() == Some("shop/util.py")
    }));
    // Without --frozen the graph is refreshed first and the text comes back.
    let fresh = s
        .context("apply_discount")
        .profile("symbol")
        .json()
        .run()
        .success()
        .context();
    assert!(fresh.receipt.refreshed);
    assert_eq!(fresh.evidence[0].projection, "full");
    assert!(!fresh.receipt.read_back_required);
}

#[test]
fn low_relevance_candidates_stay_omitted_while_bytes_remain() {
    let s = built("python");
    // Hop-2 callers score below the symbol profile's threshold of 300.
    let out = frozen_json(&s, "apply_discount", "symbol");
    let receipt = &out.receipt;
    assert!(receipt.projection.below_threshold > 0, "{receipt:?}");
    assert!(receipt.serialized_bytes < receipt.limits.max_bytes / 2);
    let omission = out
        .omission("below-relevance")
        .expect("below-relevance group");
    let min_score = omission.flag("--min-score").expect("--min-score lowered");
    assert!(min_score.parse::<u16>().unwrap() < 300, "{omission:?}");
    // Lowering the threshold admits them.
    let lowered = s
        .context("apply_discount")
        .profile("symbol")
        .frozen()
        .min_score(0)
        .json()
        .run()
        .success()
        .context();
    assert_eq!(lowered.receipt.projection.below_threshold, 0);
    assert_eq!(
        lowered
            .receipt
            .limits
            .overridden
            .first()
            .map(String::as_str),
        Some("min_score")
    );
}

#[test]
fn byte_pressure_prunes_optional_evidence_under_the_ceiling() {
    let s = built("python");
    let out = s
        .context("shop/models.py")
        .profile("symbol")
        .frozen()
        .max_bytes(3200)
        .json()
        .run()
        .success()
        .context();
    let receipt = &out.receipt;
    assert!(receipt.serialized_bytes <= 3200);
    let pruned = receipt.projection.byte_omitted + receipt.projection.skeletonized;
    assert!(pruned > 0, "{receipt:?}");
    let omission = out.omission("byte-ceiling").expect("byte-ceiling group");
    let argv = &omission.argv;
    assert_eq!(argv[0], "atlas");
    // A page is a page: the continuation keeps the ceiling and every flag as given, once.
    assert_eq!(omission.flag("--max-bytes"), Some("3200"));
    for flag in [
        "--max-bytes",
        "--frozen",
        "--format",
        "--profile",
        "--after",
    ] {
        assert_eq!(
            argv.iter().filter(|a| *a == flag).count(),
            1,
            "{flag} once in {argv:?}"
        );
    }
    assert_eq!(omission.flag("--format"), Some("json"));
}

#[test]
fn required_evidence_that_cannot_fit_is_a_typed_error() {
    let s = Sandbox::new();
    let body: String = (0..60)
        .map(|i| format!("    x{i} = {i}  # a long line of padding to make the body big\n"))
        .collect();
    s.write("big.py", format!("def big():\n{body}    return 1\n"));
    s.build_json();
    let run = s
        .context("big")
        .profile("symbol")
        .frozen()
        .max_bytes(1024)
        .json()
        .run()
        .failure(8, "atlas-context-required-budget");
    let error = run.error();
    assert_eq!(error.code, "atlas-context-required-budget");
    let id = error.details().evidence_id.as_deref().expect("evidence_id");
    assert!(id.starts_with("ev-declaration-"), "{id}");
    // It says the ceiling that holds the answer, and that ceiling does.
    let needs = error.details().needs_bytes.expect("needs_bytes");
    assert!(needs > 1024, "{needs}");
    assert!(
        error.message.contains(&format!("--max-bytes {needs}")),
        "{}",
        error.message
    );
    let fits = s
        .context("big")
        .profile("symbol")
        .frozen()
        .max_bytes(needs)
        .json()
        .run()
        .success()
        .context();
    assert_eq!(fits.evidence[0].id, id);
    assert!(fits.receipt.serialized_bytes <= needs);
    let below = s
        .context("big")
        .profile("symbol")
        .frozen()
        .max_bytes(needs - 100)
        .json()
        .run()
        .failure(8, "atlas-context-required-budget");
    assert_eq!(below.error().details().needs_bytes, Some(needs));
}

/// A long query (a pasted traceback, an issue's text) is repeated in the answer's `query`
/// and in every continuation argv. Under the profile's default ceiling those echoes are
/// not charged to the required evidence: the ceiling is raised by them, and the answer
/// says so. A ceiling given by `--max-bytes` is kept, and its error names a ceiling that
/// holds the answer when asked for.
#[test]
fn a_long_query_raises_the_default_ceiling_by_its_echoes_and_a_given_one_is_kept() {
    let s = built("python");
    let prose = "why is the amount due wrong when the cart holds many items ".repeat(110);
    let query = format!("checkout {prose}");
    assert!(query.len() > 6_000, "{}", query.len());
    let out = frozen_json(&s, &query, "symbol");
    assert_eq!(out.anchor_symbols(), ["shop/pricing.py::checkout"]);
    let raised = out
        .diagnostic("atlas-context-ceiling-raised")
        .expect("a raised ceiling is said");
    assert!(raised.message.contains("16000"), "{}", raised.message);
    let limits = &out.receipt.limits;
    assert!(limits.max_bytes > 16_000, "{}", limits.max_bytes);
    assert!(limits.overridden.is_empty(), "{:?}", limits.overridden);
    assert!(out.receipt.serialized_bytes <= limits.max_bytes);
    assert!(out.receipt.serialized_bytes > 16_000);
    // Each continuation asks the same query under the same rule.
    assert!(!out.omissions.is_empty());
    for omission in &out.omissions {
        if omission.reason != "policy" {
            assert_eq!(omission.argv[2], query);
        }
        s.replay(&omission.argv).success();
    }
    // A short question is never raised.
    let short = frozen_json(&s, "checkout", "symbol");
    assert!(short.diagnostic("atlas-context-ceiling-raised").is_none());
    assert_eq!(short.receipt.limits.max_bytes, 16_000);

    // Given, the ceiling is kept: a typed error, whose ceiling then holds the answer.
    let over = s
        .context(&query)
        .profile("symbol")
        .frozen()
        .max_bytes(16_000)
        .json()
        .run()
        .failure(8, "atlas-context-required-budget");
    let needs = over.error().details().needs_bytes.expect("needs_bytes");
    let fits = s
        .context(&query)
        .profile("symbol")
        .frozen()
        .max_bytes(needs)
        .json()
        .run()
        .success()
        .context();
    assert!(fits.receipt.serialized_bytes <= needs);
    assert!(fits.diagnostic("atlas-context-ceiling-raised").is_none());
}

/// Required evidence over the default ceiling, raised or not: the error's ceiling is the
/// one `--max-bytes` then asks for, which every continuation argv carries too, so the
/// retry it advises holds the answer.
#[test]
fn the_ceiling_a_required_budget_error_advises_holds_the_answer() {
    let s = Sandbox::new();
    // Eight big functions, each called, referenced and calling: the page that holds all
    // eight declarations leaves out callers, callees and references, three groups whose
    // argv the retry lengthens with its `--max-bytes`.
    let body: String = (0..50)
        .map(|i| {
            format!(
                "    x{i} = helper_{}({i})  # padding to make each body big\n",
                i % 3
            )
        })
        .collect();
    let mut code: String = (0..3)
        .map(|i| format!("def helper_{i}(v):\n    return v\n\n"))
        .collect();
    for f in 0..8 {
        code.push_str(&format!("def big_{f}():\n{body}    return 1\n\n"));
        for c in 0..6 {
            code.push_str(&format!("def call_{f}_{c}():\n    return big_{f}()\n\n"));
            code.push_str(&format!(
                "def keep_{f}_{c}():\n    handler = big_{f}\n    return handler\n\n"
            ));
        }
    }
    s.write("big.py", code);
    s.build_json();
    let query: String = (0..8).map(|f| format!("big_{f} ")).collect();
    let over = s
        .context(&query)
        .profile("symbol")
        .frozen()
        .json()
        .run()
        .failure(8, "atlas-context-required-budget");
    let needs = over.error().details().needs_bytes.expect("needs_bytes");
    assert!(needs > 16_000, "{needs}");
    let fits = s
        .context(&query)
        .profile("symbol")
        .frozen()
        .max_bytes(needs)
        .json()
        .run()
        .success()
        .context();
    assert!(fits.receipt.serialized_bytes <= needs);
    assert!(fits.omissions.len() >= 3, "{:?}", fits.omissions);
    assert!(
        fits.omissions
            .iter()
            .all(|o| o.flag("--max-bytes").is_some()),
        "{:?}",
        fits.omissions
    );
}

#[test]
fn required_runtime_boundaries_over_the_slice_cap_fail_typed() {
    let s = Sandbox::new();
    let opens: String = (0..20).map(|i| format!("    open('f{i}')\n")).collect();
    s.write("io_heavy.py", format!("def load_all():\n{opens}"));
    s.build_json();
    let run = s
        .context("load_all")
        .profile("flow")
        .frozen()
        .max_bytes(1_000_000)
        .json()
        .run()
        .failure(8, "atlas-context-required-source-cap");
    assert_eq!(run.error().details().limit.as_deref(), Some("max_slices"));
}

#[test]
fn required_evidence_beyond_the_retrieval_cap_fails_typed() {
    let s = Sandbox::new();
    let opens: String = (0..400).map(|i| format!("    open('f{i}')\n")).collect();
    s.write("io_heavy.py", format!("def load_all():\n{opens}"));
    s.build_json();
    let run = s
        .context("load_all")
        .profile("flow")
        .frozen()
        .json()
        .run()
        .failure(8, "atlas-context-required-candidate-cap");
    assert_eq!(run.error().code, "atlas-context-required-candidate-cap");
}

#[test]
fn continuation_argv_resumes_in_a_new_process() {
    let s = built("python");
    let first = s
        .context("shop/models.py")
        .profile("symbol")
        .frozen()
        .max_bytes(3000)
        .json()
        .run()
        .success()
        .context();
    let total = first.receipt.retrieval.total;
    let mut seen: Vec<String> = first.ids().into_iter().map(str::to_string).collect();
    let mut page = first;
    // Follow byte-ceiling continuations, as-is, until every candidate was delivered: each
    // resumes right after its cursor and makes progress; a page keeps its ceiling unless
    // the item at its top could not fit (then the argv raises it).
    for _ in 0..8 {
        let Some(omission) = page.omission("byte-ceiling").cloned() else {
            break;
        };
        let argv = &omission.argv;
        assert!(argv.iter().any(|a| a == "--code"), "{argv:?}");
        assert!(argv.iter().any(|a| a == "--frozen"), "{argv:?}");
        let after = omission.flag("--after").expect("--after").to_string();
        let run = s.replay(argv).success();
        let next = run.context();
        assert!(next.receipt.retrieval.cursor_prefix > 0);
        let ids = next.ids();
        assert!(
            !ids.contains(&after.as_str()),
            "the page starts after its cursor"
        );
        // The same argv in another process gives the same page.
        let again = s.replay(argv).success();
        assert_eq!(without_timings(run.json()), without_timings(again.json()));
        for id in ids {
            if !seen.iter().any(|s| s == id) {
                seen.push(id.to_string());
            }
        }
        page = next;
    }
    assert_eq!(seen.len(), total, "every candidate delivered: {seen:?}");
}

#[test]
fn start_cursor_is_the_explicit_beginning() {
    let s = built("python");
    let plain = frozen_json(&s, "checkout", "symbol");
    let started = s
        .context("checkout")
        .profile("symbol")
        .frozen()
        .expect_graph(&plain.graph.fingerprint)
        .after("START")
        .json()
        .run()
        .success()
        .context();
    assert_eq!(started.receipt.retrieval.cursor_prefix, 0);
    assert_eq!(plain.classes(), started.classes());
}

#[test]
fn a_continuation_on_another_graph_fails_with_graph_mismatch() {
    let s = built("python");
    let wrong = "0".repeat(64);
    let run = s
        .context("checkout")
        .profile("symbol")
        .frozen()
        .expect_graph(&wrong)
        .after("START")
        .json()
        .run()
        .failure(9, "atlas-context-graph-mismatch");
    assert_eq!(
        run.error().details().expected.as_deref(),
        Some(wrong.as_str())
    );
}

#[test]
fn an_unknown_cursor_fails_typed() {
    let s = built("python");
    let out = frozen_json(&s, "checkout", "symbol");
    s.context("checkout")
        .profile("symbol")
        .frozen()
        .expect_graph(&out.graph.fingerprint)
        .after("ev-caller-0000000000000000")
        .run()
        .failure(9, "atlas-context-cursor");
    // --after needs --expect-graph.
    let run = s.context("checkout").profile("symbol").after("START").run();
    assert_eq!(run.code, 2, "{}", run.describe());
    assert!(run.stderr.contains("--expect-graph"), "{}", run.describe());
}

#[test]
fn ordering_is_deterministic_across_runs_and_directories() {
    let a = built("mixed");
    let b = built("mixed");
    for profile in ["symbol", "flow", "architecture", "impact"] {
        let query = if profile == "architecture" {
            "server"
        } else {
            "Handler"
        };
        let run = |s: &Sandbox| {
            s.context(query)
                .profile(profile)
                .frozen()
                .json()
                .run()
                .success()
                .json()
        };
        let (ra, rb, rc) = (run(&a), run(&b), run(&a));
        let strip_code = |mut v: Value| {
            v = without_timings(v);
            for o in v["omissions"].as_array_mut().unwrap() {
                o["argv"] = Value::Null;
            }
            v
        };
        assert_eq!(
            strip_code(ra.clone()),
            strip_code(rb),
            "{profile} differs between directories"
        );
        assert_eq!(
            without_timings(ra),
            without_timings(rc),
            "{profile} differs between runs"
        );
    }
}

#[test]
fn serialized_bytes_equals_the_printed_json() {
    let s = built("rust");
    for profile in ["symbol", "flow", "impact", "architecture"] {
        let run = s
            .context("Circle")
            .profile(profile)
            .frozen()
            .json()
            .run()
            .success();
        let printed = run.stdout.strip_suffix('\n').unwrap();
        assert_eq!(
            run.context().receipt.serialized_bytes,
            printed.len(),
            "{profile}"
        );
    }
}

#[test]
fn frozen_never_builds_and_a_changed_tree_is_refreshed_otherwise() {
    let s = Sandbox::with_fixture("go");
    s.context("NewMemory")
        .profile("symbol")
        .frozen()
        .run()
        .failure(3, "atlas-graph-missing");
    assert!(!s.graph().exists(), "--frozen wrote nothing");
    s.context("NewMemory")
        .profile("symbol")
        .no_build()
        .run()
        .failure(3, "atlas-graph-missing");
    let refreshing = || {
        s.context("NewMemory")
            .profile("symbol")
            .json()
            .run()
            .success()
            .context()
    };
    let first = refreshing();
    assert!(first.receipt.refreshed, "a missing graph is built first");
    let second = refreshing();
    assert!(!second.receipt.refreshed);
    s.write(
        "store/extra.go",
        "package store\n\nfunc Extra() *Memory { return NewMemory() }\n",
    );
    let third = refreshing();
    assert!(third.receipt.refreshed);
    assert!(
        third
            .evidence
            .iter()
            .any(|e| e.symbol.as_deref() == Some("store/extra.go::Extra"))
    );
}

#[test]
fn a_file_the_build_skipped_is_not_a_change_that_refreshes_every_read() {
    let s = Sandbox::with_fixture("python");
    // A `.py` file with binary content: inventoried, then skipped by the build.
    s.write("shop/blob.py", b"x\0y");
    let read = || {
        s.context("Cart.total")
            .profile("symbol")
            .json()
            .run()
            .success()
            .context()
    };
    assert!(read().receipt.refreshed, "a missing graph is built first");
    let second = read();
    assert!(
        !second.receipt.refreshed,
        "the skipped file made the graph look stale"
    );
    let status = s.atlas(&["status", "--format", "json"]).success().json();
    assert_eq!(status["coverage"]["files_skipped"], 1, "{status}");
    assert_eq!(status["staleness"]["stale"], false, "{status}");
}

#[test]
fn test_bodies_are_skeletons_unless_named() {
    let s = built("python");
    let out = frozen_json(&s, "checkout", "symbol");
    let test_caller = out
        .evidence
        .iter()
        .find(|e| e.symbol.as_deref() == Some("tests/test_pricing.py::test_checkout_empty_cart"))
        .expect("test caller");
    assert_eq!(test_caller.projection, "policy-skeleton");
    assert!(out.receipt.projection.policy_skeletonized >= 1);
    let named = frozen_json(&s, "test_checkout_empty_cart", "symbol");
    assert_eq!(named.evidence[0].projection, "full");
}

#[test]
fn flow_between_two_anchors_follows_the_call_path() {
    let s = built("python");
    let out = frozen_json(&s, "quick_cart apply_discount", "flow");
    let spine: Vec<&str> = out.spine.iter().map(|s| s.symbol.as_str()).collect();
    assert_eq!(
        spine,
        [
            "shop/pricing.py::quick_cart",
            "shop/pricing.py::checkout",
            "shop/util.py::apply_discount"
        ]
    );
    assert!(out.of_class("spine").all(|e| e.required));
    // The path between them whichever is named first: the callee first reads backwards.
    let reversed = frozen_json(&s, "apply_discount quick_cart", "flow");
    let reversed: Vec<&str> = reversed.spine.iter().map(|s| s.symbol.as_str()).collect();
    assert_eq!(reversed, spine);
    // No path is failure evidence, not an empty success.
    let m = built("mixed");
    let no_path = frozen_json(&m, "handle_ping leftPad", "flow");
    let failure = no_path
        .evidence
        .iter()
        .find(|e| {
            e.statement
                .as_ref()
                .is_some_and(|s| s.code == "no-call-path")
        })
        .expect("no-call-path");
    assert!(failure.required);
}

#[test]
fn flow_marks_runtime_boundaries_as_required() {
    let s = built("mixed");
    let out = frozen_json(&s, "HttpTransport.send", "flow");
    let boundary = out
        .of_class("runtime-boundary")
        .next()
        .expect("fetch is a boundary");
    assert!(boundary.required);
    assert_eq!(
        boundary.statement.as_ref().map(|s| s.code.as_str()),
        Some("network-io")
    );
}

#[test]
fn impact_lists_dependents_and_the_frontier() {
    let s = built("python");
    let out = frozen_json(&s, "Cart", "impact");
    assert!(out.has("dependent", "shop/pricing.py::quick_cart"));
    assert!(out.of_class("reverse-path").next().is_some());
    let unknown = frozen_json(&s, "Item.total", "impact");
    assert!(unknown.of_class("frontier").next().is_some());
    assert!(unknown.statement_codes().contains(&"dependents-unknown"));
}

#[test]
fn impact_of_a_file_or_a_directory_is_the_impact_of_what_it_defines() {
    // Imports name `Cart` and `Item`, not `shop/models.py`: the file's dependents are its
    // definitions' dependents, each said to come through the definition it uses.
    let s = built("python");
    let file = frozen_json(&s, "shop/models.py", "impact");
    let codes = file.statement_codes();
    assert!(!codes.contains(&"no-dependents"), "{codes:?}");
    assert!(file.has("dependent", "shop/pricing.py::checkout"));
    assert!(file.has("dependent", "tests/test_pricing.py"));
    let checkout = file
        .of_class("dependent")
        .find(|e| e.symbol.as_deref() == Some("shop/pricing.py::checkout"))
        .unwrap();
    assert!(
        checkout
            .reasons
            .iter()
            .any(|r| r == "via shop/models.py::Cart"),
        "{:?}",
        checkout.reasons
    );
    // Uses inside the file are not dependents of it.
    assert!(
        file.of_class("dependent").all(|e| !e
            .symbol
            .as_deref()
            .unwrap_or("")
            .starts_with("shop/models.py")),
        "{:?}",
        file.classes()
    );
    // A directory: the files directly in it.
    let directory = frozen_json(&s, "shop/", "impact");
    assert!(directory.has("dependent", "tests/test_pricing.py"));
    assert!(!directory.statement_codes().contains(&"no-dependents"));
    // A file nothing depends on still says so.
    let test_file = frozen_json(&s, "tests/test_pricing.py", "impact");
    assert!(test_file.statement_codes().contains(&"no-dependents"));
}

/// A module declared in a file (`mod tests { … }`) is a definition of that file, labelled
/// `path::name`, and its items are in scope inside it. It is never read as a directory:
/// not in its label, not as a module of the architecture map's relations.
#[test]
fn an_inline_module_is_a_definition_of_its_file_not_a_directory() {
    let s = Sandbox::new();
    s.write("Cargo.toml", "[package]\nname = \"demo\"\n");
    s.write(
        "src/lib.rs",
        "macro_rules! twice {\n    ($e:expr) => { $e + $e };\n}\n\n\
         pub fn parse(x: u32) -> u32 {\n    twice!(x)\n}\n\n\
         #[cfg(test)]\nmod tests {\n    use super::*;\n\n    twice!(1);\n\n\
         fn sample() -> u32 {\n        parse(1)\n    }\n\n\
         #[test]\n    fn parses() {\n        let n = sample();\n        assert_eq!(n, 4);\n    }\n}\n",
    );
    s.build_json();
    let module = frozen_json(&s, "src/lib.rs::tests", "symbol");
    assert_eq!(module.anchor_symbols(), ["src/lib.rs::tests"]);
    assert!(module.has("declaration", "src/lib.rs::tests"));
    assert!(module.has("member", "src/lib.rs::tests::parses"));
    // `sample` is the module's own item: a scope call, not a guess.
    let sample = frozen_json(&s, "src/lib.rs::tests::sample", "symbol");
    let caller = sample
        .of_class("caller")
        .find(|e| e.symbol.as_deref() == Some("src/lib.rs::tests::parses"))
        .expect("parses calls sample");
    assert_eq!(caller.relation.as_ref().unwrap().resolution, "scope");
    // One directory, `src/`: no relation between modules, where the inline module read
    // as a directory `tests/` calling `src/` (its `twice!`).
    let map = frozen_json(&s, "src/", "architecture");
    assert_eq!(
        map.of_class("module-relation").count(),
        0,
        "{:?}",
        map.ids()
    );
    let dump = s.atlas(&["graph", "dump"]).success().stdout;
    assert!(
        dump.contains("symbol module src/lib.rs::tests L10-24 internal test-scope"),
        "{dump}"
    );
    assert!(!dump.contains(" tests/"), "{dump}");
}

#[test]
fn a_walk_stopped_by_its_visit_cap_says_so() {
    // 20,050 callers of one function: more than a walk's 20,000 visited nodes.
    let s = Sandbox::new();
    // And `fan` (another file: one would pass the size limit) calls each of them, so it
    // reaches more than 20,000 functions.
    let mut code = String::from("def hub():\n    return 1\n");
    let mut fan = String::from("from many import *\n\n\ndef fan():\n");
    for i in 0..20_050 {
        code.push_str(&format!("\n\ndef caller_{i}():\n    return hub()\n"));
        fan.push_str(&format!("    caller_{i}()\n"));
    }
    s.write("many.py", &code);
    s.write("fan.py", &fan);
    s.write(
        "small.py",
        "def alone():\n    return 1\n\n\ndef user():\n    return alone()\n",
    );
    s.call("build").arg("--no-search").run().success();
    let capped = frozen_json(&s, "hub", "impact");
    assert!(
        capped.statement_codes().contains(&"walk-capped"),
        "{:?}",
        capped.statement_codes()
    );
    // The symbol profile's walk over callers has the same cap and says so too.
    let callers = frozen_json(&s, "hub callers", "symbol");
    assert!(
        callers.statement_codes().contains(&"walk-capped"),
        "{:?}",
        callers.statement_codes()
    );
    // Flow's search for the hop that breaks a call path has the same cap.
    let path = frozen_json(&s, "fan alone", "flow");
    let codes = path.statement_codes();
    assert!(codes.contains(&"no-call-path"), "{codes:?}");
    assert!(codes.contains(&"walk-capped"), "{codes:?}");
    let small = frozen_json(&s, "alone", "impact");
    assert!(!small.statement_codes().contains(&"walk-capped"));
    assert!(small.has("dependent", "small.py::user"));
}

#[test]
fn architecture_without_anchor_maps_the_repository() {
    // Without a search index (and --frozen never builds one), free words are reported.
    let s = Sandbox::with_fixture("mixed");
    s.call("build").arg("--no-search").run().success();
    let out = frozen_json(&s, "overview", "architecture");
    let classes = out.classes();
    assert!(classes.contains(&"module"), "{classes:?}");
    assert!(classes.contains(&"module-relation"), "{classes:?}");
    assert!(out.diagnostic("atlas-context-unused-term").is_some());
}

#[test]
fn text_format_renders_the_spine_and_shell_argv() {
    let s = built("python");
    let flow = || s.context("checkout calls").profile("flow").frozen();
    let text = flow().max_bytes(1400).text().run();
    let text = if text.code == 0 {
        text.stdout
    } else {
        flow().text().run().success().stdout
    };
    assert!(text.contains("spine"), "{text}");
    assert!(text.contains("└─"), "{text}");
    let byte_limited = s
        .context("shop/models.py")
        .profile("symbol")
        .frozen()
        .max_bytes(2500)
        .text()
        .run()
        .success()
        .stdout;
    assert!(
        byte_limited.contains("$ atlas context shop/models.py --profile symbol"),
        "{byte_limited}"
    );
}

#[test]
fn agent_spec_alias_runs_context() {
    let s = built("python");
    let call = || s.context("checkout").profile("symbol").frozen().json();
    let direct = call().run().success();
    // `agent-spec atlas --code <repo> context …`: the same argv after the word `atlas`.
    let alias = call().via_agent_spec();
    assert_eq!(alias.argv()[0], "atlas");
    assert_eq!(alias.argv()[1..], direct.argv[1..]);
    let alias = alias.run().success();
    assert_eq!(
        without_timings(direct.json()),
        without_timings(alias.json())
    );
}

// ── Questions (issue 9) ─────────────────────────────────────────────────────────────

#[test]
fn an_ambiguous_name_in_a_question_is_ranked_and_reported_not_fatal() {
    let s = built("python");
    let out = frozen_json(&s, "why is __init__ slow for a cart", "symbol");
    let anchor = out
        .intent
        .anchors
        .iter()
        .find(|a| a.term == "__init__")
        .expect("`__init__` anchors");
    assert_eq!(anchor.anchor_reason, "ranked");
    let diagnostic = out
        .diagnostic("atlas-context-ambiguous")
        .expect("an ambiguity diagnostic");
    let others = &diagnostic.candidates;
    assert_eq!(others.len(), 1, "{diagnostic:?}");
    let other = &others[0].symbol;
    assert_ne!(other, &anchor.symbol);
    // The listed argv asks the same question naming that candidate alone.
    let argv = &others[0].argv;
    assert!(argv.iter().any(|a| a == "--frozen"), "{argv:?}");
    let run = s.replay(argv).success();
    let again = run.context();
    assert!(
        again
            .intent
            .anchors
            .iter()
            .any(|a| &a.symbol == other && a.tier.as_deref() == Some("exact-id")),
        "{}",
        run.stdout
    );
}

/// The choices of `query`, which must be a lone ambiguous name (`atlas-context-ambiguous`).
#[track_caller]
fn ambiguous_choices(s: &Sandbox, query: &str, profile: &str) -> Vec<common::Choice> {
    let run = s
        .context(query)
        .profile(profile)
        .frozen()
        .json()
        .run()
        .failure(7, "atlas-context-ambiguous");
    run.error().details().choices.clone()
}

#[test]
fn a_lone_ambiguous_code_name_is_a_typed_error_with_an_argv_per_candidate() {
    let s = built("python");
    let choices = ambiguous_choices(&s, "__init__", "flow");
    assert_eq!(choices.len(), 2, "{choices:?}");
    for choice in &choices {
        let out = s.replay(&choice.argv).success().context();
        assert_eq!(out.intent.anchors[0].symbol, choice.symbol);
    }
    // A file whose name is no identifier (`search-stdin.rs`, `test-examples/`): its
    // dotted id would not read back as one name, so the argv names it by its label.
    let s = Sandbox::new();
    s.write("examples/search-stdin.py", "def main():\n    return 1\n");
    s.write("app/cli.py", "def main():\n    return 2\n");
    s.write("app/simple.py", "def search():\n    return 3\n");
    s.build_json();
    let choices = ambiguous_choices(&s, "main", "symbol");
    assert_eq!(choices.len(), 2, "{choices:?}");
    for choice in &choices {
        let out = s.replay(&choice.argv).success().context();
        assert_eq!(out.anchor_symbols(), [choice.symbol.as_str()], "{choice:?}");
    }
    // A ref that ends several files: each choice keeps the ref's line, and asked again
    // names the definition there, not the file.
    s.write("app/cli_tools.py", "X = 1\n\ndef second():\n    return 2\n");
    s.write("lib/cli_tools.py", "Y = 1\n\ndef other():\n    return 3\n");
    s.build_json();
    let choices = ambiguous_choices(&s, "cli_tools.py:3", "symbol");
    assert_eq!(choices.len(), 2, "{choices:?}");
    let mut anchored: Vec<String> = choices
        .iter()
        .map(|choice| {
            assert!(choice.argv[2].ends_with(".py:3"), "{choice:?}");
            let out = s.replay(&choice.argv).success().context();
            out.anchor_symbols()[0].to_string()
        })
        .collect();
    anchored.sort();
    assert_eq!(
        anchored,
        ["app/cli_tools.py::second", "lib/cli_tools.py::other"]
    );
}

#[test]
fn plain_words_never_fail_a_question() {
    let s = built("python");
    // `total` names two methods, `the`/`is` are stop words: none of it is an error.
    let out = frozen_json(&s, "where is the total of the cart computed", "flow");
    let free = &out.intent.free_terms;
    assert!(
        free.iter().any(|t| t == "total") && free.iter().any(|t| t == "where"),
        "{free:?}"
    );
    assert!(!out.spine.is_empty());
}

/// Questions name functions with inflected verbs and plural nouns, in either order:
/// two neighbouring words that are a name's two segments name it, where search, matching
/// words as written, found nothing (`applies discounts`) or anchored a word alone.
#[test]
fn two_words_of_a_question_spell_a_name_as_prose_inflects_it() {
    let s = built("python");
    for (question, symbol) in [
        (
            "which function applies discounts?",
            "shop/util.py::apply_discount",
        ),
        ("where is money rounded", "shop/util.py::round_money"),
        ("Rounds money to cents?", "shop/util.py::round_money"),
        // Portuguese, through the glossary's English (`desconto` discount, `aplicado` apply).
        (
            "onde o desconto é aplicado?",
            "shop/util.py::apply_discount",
        ),
    ] {
        let out = frozen_json(&s, question, "symbol");
        let anchor = &out.intent.anchors[0];
        assert_eq!(
            (anchor.symbol.as_str(), anchor.tier.as_deref()),
            (symbol, Some("segmented")),
            "{question}"
        );
        assert!(out.has("declaration", symbol), "{question}");
    }
    // `function` says what is asked for: it spells no name with its neighbour.
    let s = Sandbox::new();
    s.write(
        "reader.py",
        "def parse_function(text):\n    return text\n\n\ndef parse_latex(text):\n    return parse_function(text)\n\n\ndef factor_terms(e):\n    return e\n\n\ndef _term_factors(e):\n    return e\n",
    );
    s.build_json();
    let out = frozen_json(&s, "which function parses latex strings?", "symbol");
    assert_eq!(out.anchor_symbols(), ["reader.py::parse_latex"]);
    // Both orders spell a name: the words' own order is the one meant.
    let out = frozen_json(&s, "where are terms factored?", "symbol");
    assert_eq!(out.anchor_symbols(), ["reader.py::_term_factors"]);
    let out = frozen_json(&s, "which function factors terms?", "symbol");
    assert_eq!(out.anchor_symbols(), ["reader.py::factor_terms"]);
}

/// A question whose names search cannot change (written as code, a path) has them walked
/// beside its search (`context::understand`): the answer is the one a walk after the
/// search gives, in every profile. One that names a symbol by a plain word (`cart`) waits
/// for search, which may drop the word and anchor on its hits instead.
#[test]
fn a_question_walked_beside_its_search_answers_as_one_walked_after_it() {
    let s = built("python");
    let dropped = "how does the cart compute its total price";
    let answer = |question: &str, profile: &str, early: &str| -> Value {
        let run = s
            .context(question)
            .profile(profile)
            .frozen()
            .json()
            .env("ATLAS_EARLY_RETRIEVAL", early)
            .run()
            .success();
        without_timings(serde_json::from_str(&run.stdout).expect("json"))
    };
    for (question, profile) in [
        ("is apply_discount called with a rate", "symbol"),
        ("is apply_discount called with a rate", "impact"),
        ("why does `checkout` round the money", "flow"),
        ("o que `checkout` faz com o carrinho?", "symbol"),
        ("what in shop/util.py rounds money", "architecture"),
        ("what is a product in the cart", "symbol"),
        ("apply_discount rate", "symbol"),
        (dropped, "symbol"),
    ] {
        let (early, after) = (
            answer(question, profile, "1"),
            answer(question, profile, "0"),
        );
        assert!(
            early == after,
            "{question} ({profile}):\n{early:#}\n{after:#}"
        );
    }
    let out = frozen_json(&s, dropped, "symbol");
    assert!(out.intent.free_terms.iter().any(|t| t == "cart"));
    assert_eq!(out.intent.anchors[0].anchor_reason, "search");
}

#[test]
fn a_portuguese_question_about_english_code_is_searched_with_its_english_words() {
    let s = built("python");
    let english = frozen_json(&s, "how is a discount taken off the price", "flow");
    // No word of it is in the code: `desconto` and `preço` find it as `discount` and
    // `price` (`query::glossary`); no two of its words spell a name.
    let portuguese = frozen_json(&s, "como um desconto é tirado do preço?", "flow");
    for out in [&english, &portuguese] {
        assert_eq!(
            out.spine.first().map(|s| s.symbol.as_str()),
            Some("shop/util.py::apply_discount")
        );
    }
    let anchor = &portuguese.intent.anchors[0];
    assert_eq!(anchor.anchor_reason, "search");
    assert_eq!(
        anchor.term,
        "como um desconto é tirado do preço? discount price"
    );
}

/// A name written twice (as a traceback names each function in its frame and its source
/// line) is one anchor: the flow answer is the name's own, not a path from it to itself.
#[test]
fn a_name_written_twice_is_one_anchor_and_a_word_one_term() {
    let s = built("python");
    let once = frozen_json(&s, "checkout", "flow");
    let twice = frozen_json(
        &s,
        "checkout then checkout where is the money money spent",
        "flow",
    );
    assert_eq!(twice.intent.anchors.len(), 1);
    assert_eq!(twice.intent.anchors[0].symbol, "shop/pricing.py::checkout");
    let spine =
        |out: &ContextOut| -> Vec<String> { out.spine.iter().map(|s| s.symbol.clone()).collect() };
    assert_eq!(spine(&twice), spine(&once));
    assert!(spine(&once).len() > 1, "{:?}", spine(&once));
    let money = twice.intent.free_terms.iter().filter(|t| *t == "money");
    assert_eq!(money.count(), 1, "{:?}", twice.intent.free_terms);
}

#[test]
fn a_flow_question_starts_its_spine_at_the_best_callable_hit() {
    let s = built("python");
    // No two of its words spell a name: search anchors it.
    let out = frozen_json(&s, "how is a discount taken off the price", "flow");
    assert_eq!(
        out.spine.first().map(|s| s.symbol.as_str()),
        Some("shop/util.py::apply_discount")
    );
    let anchor = &out.intent.anchors[0];
    assert_eq!(anchor.anchor_reason, "search");
    assert!(anchor.tier.is_none());
    // The next strong hit in another chain is an alternative, not a second anchor.
    assert_eq!(out.intent.anchors.len(), 1);
    let alternative = &out.intent.alternative.as_ref().expect("alternative").symbol;
    assert!(out.has("alternative", alternative));
}

/// Refs pasted from other tools (a compiler's `path:line:column`, a GitHub `#L` link,
/// Atlas's own search ref, `path:Name`) anchor the definition they point into; a path
/// outside the inventory or a name the file does not define stays a no-match.
#[test]
fn a_pasted_ref_anchors_the_definition_it_points_into() {
    let s = built("python");
    for (query, symbol) in [
        ("shop/models.py:23", "shop/models.py::Item.total"),
        ("shop/models.py:23:9", "shop/models.py::Item.total"),
        ("shop/models.py#L23", "shop/models.py::Item.total"),
        (
            "shop/models.py#L22-L24@0123abcd",
            "shop/models.py::Item.total",
        ),
        ("./shop/models.py:Item.total", "shop/models.py::Item.total"),
        // GitHub's columns, tsc's `(line,col)`.
        ("shop/models.py#L23C9-L24C20", "shop/models.py::Item.total"),
        (
            "shop/models.py(23,9): error TS2345: Argument of type",
            "shop/models.py::Item.total",
        ),
        (
            "why is shop/models.py:23 wrong?",
            "shop/models.py::Item.total",
        ),
        ("shop/models.py:3", "shop/models.py::MAX_ITEMS"),
        // A line no definition holds, or no line: the file itself.
        ("shop/models.py:1", "shop/models.py"),
        ("shop/models.py:0", "shop/models.py"),
        ("shop/models.py#L", "shop/models.py"),
        ("shop/models.py#L99999999999999999999", "shop/models.py"),
    ] {
        let out = frozen_json(&s, query, "symbol");
        let anchor = &out.intent.anchors[0];
        assert_eq!(anchor.symbol, symbol, "{query}");
        assert_eq!(anchor.tier.as_deref(), Some("exact-id"), "{query}");
    }
    for query in ["/etc/passwd:1", "shop/models.py:NoSuchName"] {
        no_match(&s, query);
    }
    // A line past the file's end (a ref from another version of it) anchors the file, and
    // the answer says so; a line inside it that no definition holds is no such case.
    let lines = std::fs::read_to_string(s.repo().join("shop/models.py"))
        .unwrap()
        .lines()
        .count();
    for (query, past_end) in [
        ("shop/models.py:99999".to_string(), true),
        ("shop/models.py#L900-L910@0123abcd".to_string(), true),
        ("shop/models.py#L99999999999999999999".to_string(), true),
        (format!("shop/models.py:{}", lines + 1), true),
        // The last line (inside `Cart._audit`).
        (format!("shop/models.py:{lines}"), false),
        ("shop/models.py:1".to_string(), false),
        ("shop/models.py:0".to_string(), false),
    ] {
        let out = frozen_json(&s, &query, "symbol");
        if past_end {
            assert_eq!(out.anchor_symbols(), ["shop/models.py"], "{query}");
        }
        let diagnostic = out.diagnostic("atlas-context-line-past-end");
        assert_eq!(diagnostic.is_some(), past_end, "{query}");
        if let Some(diagnostic) = diagnostic {
            assert!(
                diagnostic.message.contains(&format!("({lines} lines")),
                "{}",
                diagnostic.message
            );
        }
    }
}

/// Paths pasted from elsewhere — absolute, another checkout's, a URL, Windows-style, an
/// import's spelling without extension, a traceback's frame — name the inventoried file
/// their tail is; a path whose tail is no inventoried file stays a no-match (nothing
/// outside the inventory is read).
#[test]
fn a_path_pasted_from_elsewhere_names_the_inventoried_file_it_ends_with() {
    let s = built("python");
    let here = s.repo().join("shop/models.py");
    let here = here.display();
    for (query, symbol) in [
        (format!("{here}:23"), "shop/models.py::Item.total"),
        (format!("{here}"), "shop/models.py"),
        (
            "/home/someone/checkout/shop/models.py#L23".into(),
            "shop/models.py::Item.total",
        ),
        ("../shop/models.py:23".into(), "shop/models.py::Item.total"),
        (
            "https://github.com/owner/repo/blob/main/shop/models.py#L22-L24".into(),
            "shop/models.py::Item.total",
        ),
        (
            "https://raw.githubusercontent.com/owner/repo/main/shop/models.py?plain=1".into(),
            "shop/models.py",
        ),
        ("file:///srv/build/shop/models.py".into(), "shop/models.py"),
        (
            r"C:\work\repo\shop\models.py:23".into(),
            "shop/models.py::Item.total",
        ),
        ("/elsewhere/repo/shop/".into(), "shop/"),
        // Relative to somewhere inside the repository: the one file it ends.
        ("models.py:24".into(), "shop/models.py::Item.total"),
        ("pricing.py".into(), "shop/pricing.py"),
        // An import's spelling: a module path without its extension.
        ("shop/models".into(), "shop/models.py"),
        ("./models".into(), "shop/models.py"),
        // A link's query string comes before its fragment (`?plain=1#L23`).
        (
            "https://github.com/o/r/blob/main/shop/models.py?plain=1#L23-L24".into(),
            "shop/models.py::Item.total",
        ),
        // A traceback's frame is its file and line; its `in total` names the same anchor.
        (
            r#"File "/home/someone/checkout/shop/models.py", line 24, in total"#.into(),
            "shop/models.py::Item.total",
        ),
    ] {
        let out = frozen_json(&s, &query, "symbol");
        let anchors = out.anchor_symbols();
        assert_eq!(anchors, [symbol], "{query}");
    }
    let trace = "Traceback (most recent call last):\n  File \"/ci/work/shop/models.py\", line 24, in total\n    return self.price * quantity\nTypeError: can't multiply sequence";
    let out = frozen_json(&s, trace, "symbol");
    let anchors = out.anchor_symbols();
    assert_eq!(anchors, ["shop/models.py::Item.total"]);
    for query in [
        "/etc/passwd",
        "/home/someone/checkout/shop/nowhere.py:3",
        "https://github.com/owner/repo/blob/main/README.md",
        "shop/nowhere",
    ] {
        no_match(&s, query);
    }
}

/// A traceback's frames: one outside the repository is the user's own code, so its
/// function's name (on its source line too) anchors nothing here; one in the repository
/// names its function, which outweighs a line drifted between versions (the line's class
/// first, then the nearest).
#[test]
fn a_traceback_anchors_the_repositorys_frames_and_not_the_users_functions() {
    let s = built("python");
    let trace = "Traceback (most recent call last):\n  File \"/home/me/tool/run.py\", line 4, in <module>\n    checkout(cart)\n  File \"/home/me/tool/run.py\", line 9, in checkout\n    cart.add(item)\n  File \"/ci/checkout/shop/models.py\", line 37, in add\n    raise ValueError(\"cart full\")\nValueError: cart full";
    let out = frozen_json(&s, trace, "symbol");
    assert_eq!(out.anchor_symbols(), ["shop/models.py::Cart.add"]);
    assert!(
        out.intent.free_terms.iter().any(|t| t == "checkout"),
        "{:?}",
        out.intent.free_terms
    );
    // `checkout` alone is the repository's.
    let alone = frozen_json(&s, "checkout", "symbol");
    assert_eq!(alone.anchor_symbols(), ["shop/pricing.py::checkout"]);
    for (frame, symbol) in [
        // Line 29 is `Cart.__init__`: `Cart.total` before the nearer `Item.total`.
        (
            r#"File "shop/models.py", line 29, in total"#,
            "shop/models.py::Cart.total",
        ),
        (
            r#"File "shop/models.py", line 20, in total"#,
            "shop/models.py::Item.total",
        ),
        // The line's definition has the frame's name: the line decides.
        (
            r#"File "shop/models.py", line 37, in total"#,
            "shop/models.py::Cart.total",
        ),
        // A function the file does not define: the line's definition.
        (
            r#"File "shop/models.py", line 24, in gone"#,
            "shop/models.py::Item.total",
        ),
        (
            r#"File "shop/models.py", line 24, in <module>"#,
            "shop/models.py::Item.total",
        ),
    ] {
        let out = frozen_json(&s, frame, "symbol");
        assert_eq!(out.anchor_symbols(), [symbol], "{frame}");
    }
}

/// A traceback's source lines are the code at its frames, not names the user asks about:
/// a call on one names the callee the graph has at its frame's line, and nothing else
/// (`apply_discount(…)` under a frame at another line, `print(…)`, `main()` are searched,
/// never anchors), indented or flattened. Without a search index, its many unused terms
/// are one diagnostic.
#[test]
fn a_tracebacks_source_lines_are_searched_and_never_anchor() {
    let s = Sandbox::with_fixture("python");
    s.call("build").arg("--no-search").run().success();
    let trace = "Traceback (most recent call last):\n  File \"/home/me/tool/run.py\", line 5, in <module>\n    main()\n  File \"/home/me/tool/run.py\", line 3, in main\n    print(quick_cart(names))\n  File \"/ci/checkout/shop/pricing.py\", line 10, in checkout\n    amount = apply_discount(amount, 0.1)\n  File \"/ci/checkout/shop/models.py\", line 37, in total\n    return round_money(sum(item.total(1) for item in self.items))\nTypeError: unsupported operand type(s) for +: 'int' and 'NoneType'";
    let flattened: String = trace
        .lines()
        .map(|line| format!("{}\n", line.trim_start()))
        .collect();
    for query in [trace, flattened.as_str()] {
        let out = frozen_json(&s, query, "flow");
        assert_eq!(
            out.anchor_symbols(),
            ["shop/pricing.py::checkout", "shop/models.py::Cart.total"],
            "{query}"
        );
        let free = &out.intent.free_terms;
        for term in ["print", "apply_discount", "round_money"] {
            assert!(free.iter().any(|t| t == term), "{term}: {free:?}");
        }
        let unused: Vec<_> = out
            .diagnostics
            .iter()
            .filter(|d| d.code == "atlas-context-unused-term")
            .collect();
        assert_eq!(unused.len(), 1, "{unused:?}");
        assert!(
            unused[0].message.contains("more terms"),
            "{}",
            unused[0].message
        );
    }
    // A source line's call that the graph has at its frame's line names that callee.
    let at_its_line = "Traceback (most recent call last):\n  File \"/ci/checkout/shop/pricing.py\", line 9, in checkout\n    amount = util.apply_discount(amount, 0.1)\nTypeError: unsupported operand";
    let out = frozen_json(&s, at_its_line, "flow");
    assert_eq!(
        out.anchor_symbols(),
        ["shop/pricing.py::checkout", "shop/util.py::apply_discount"]
    );
    // The same call asked as a question is a name.
    let asked = frozen_json(&s, "why does round_money(amount) round down", "symbol");
    assert_eq!(asked.anchor_symbols(), ["shop/util.py::round_money"]);
}

/// A Node.js stack: each `at f (path:line:column)` in the repository anchors its
/// definition; a frame of the user's own script anchors nothing, nor does its function's
/// name though the repository defines one (`isEmail`).
#[test]
fn a_node_stack_anchors_its_frames_in_the_repository() {
    let s = built("typescript");
    let stack = "Error: invalid\n    at UserRepository.add (/srv/app/src/repo.ts:9:13)\n    at UserRepository.register (/srv/app/src/repo.ts:28:10)\n    at isEmail (/home/me/script/check.js:3:1)\n    at Object.<anonymous> (/home/me/script/check.js:7:1)\n    at Module._compile (node:internal/modules/cjs/loader:1105:14)";
    let out = frozen_json(&s, stack, "symbol");
    assert_eq!(
        out.anchor_symbols(),
        [
            "src/repo.ts::Repository.add",
            "src/repo.ts::UserRepository.register"
        ]
    );
    let alone = frozen_json(&s, "isEmail", "symbol");
    assert_eq!(alone.anchor_symbols(), ["src/model.ts::isEmail"]);
}

/// A diff pasted into a question names the definitions its hunks change (on the new
/// side, as `git diff` of a working tree shows them), not the names its lines mention.
#[test]
fn a_pasted_diff_names_the_definitions_it_changes() {
    let s = built("python");
    let diff = "What does this change break?\n\
diff --git a/shop/models.py b/shop/models.py\n\
index 1111111..2222222 100644\n\
--- a/shop/models.py\n\
+++ b/shop/models.py\n\
@@ -22,3 +22,3 @@ class Item(Base):\n\
     def total(self, quantity):\n\
         \"\"\"Price for a quantity.\"\"\"\n\
-        return self.price * quantity * 1\n\
+        return self.price * quantity\n\
diff --git a/shop/pricing.py b/shop/pricing.py\n\
--- a/shop/pricing.py\n\
+++ b/shop/pricing.py\n\
@@ -8,3 +8,3 @@ def checkout(cart: Cart) -> float:\n\
     amount = cart.total()\n\
-    amount = util.apply_discount(amount, 0.2)\n\
+    amount = util.apply_discount(amount, 0.1)\n\
     return u.round_money(amount)";
    let out = frozen_json(&s, diff, "impact");
    assert_eq!(
        out.anchor_symbols(),
        ["shop/models.py::Item.total", "shop/pricing.py::checkout"]
    );
    // What calls the changed definitions is the impact.
    assert!(out.has("dependent", "shop/pricing.py::quick_cart"));
    // A bare patch begins with `---`: it is the query, not an option, and so is it in
    // the argv an omission prints.
    let patch = &diff[diff.find("--- a/shop/models.py").expect("the first hunk")..];
    let out = frozen_json(&s, patch, "impact");
    assert_eq!(
        out.anchor_symbols(),
        ["shop/models.py::Item.total", "shop/pricing.py::checkout"]
    );
    // Everything optional under the threshold: its continuation repeats the query.
    let out = s
        .context(patch)
        .profile("impact")
        .frozen()
        .json()
        .arg("--min-score")
        .arg("60000")
        .run()
        .success()
        .context();
    let argv = &out
        .omissions
        .iter()
        .find(|o| o.argv.get(2).map(String::as_str) == Some(patch))
        .expect("a continuation of the query")
        .argv;
    s.replay(argv).success();
}

/// A Rust panic and its backtrace: the frames in the crate anchor (a drifted line gives
/// way to the frame's function), the standard library's anchor nothing, and the quoted
/// `'main'` is the thread's name, not the crate's `main`.
#[test]
fn a_rust_backtrace_anchors_its_frames_and_not_its_threads_name() {
    let s = Sandbox::new();
    s.write(
        "Cargo.toml",
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\n",
    );
    s.write(
        "src/main.rs",
        "mod geometry;\n\nfn main() {\n    println!(\"{}\", geometry::area(2.0));\n}\n",
    );
    s.write(
        "src/geometry.rs",
        "pub fn area(r: f64) -> f64 {\n    let d = diameter(r);\n    d * d / 4.0\n}\n\npub fn diameter(r: f64) -> f64 {\n    r * 2.0\n}\n",
    );
    s.build_json();
    let trace = "thread 'main' panicked at src/geometry.rs:3:5:\nattempt to divide by zero\nstack backtrace:\n   1: app::geometry::diameter\n             at /home/me/app/src/geometry.rs:2:9\n   2: app::geometry::area\n             at ./src/geometry.rs:3:5\n   3: std::rt::lang_start\n             at /rustc/abc/library/std/src/rt.rs:195:17";
    let out = frozen_json(&s, trace, "symbol");
    assert_eq!(
        out.anchor_symbols(),
        ["src/geometry.rs::area", "src/geometry.rs::diameter"]
    );
    // A frame's owner and name outweigh a line that fell in another owner's method of
    // the same name (line 33 is `Circle::area`).
    let shapes = built("rust");
    for (frame, symbol) in [
        (
            "shapes::geometry::Square::area\n at src/geometry.rs:33:9",
            "src/geometry.rs::Square::area",
        ),
        (
            "shapes::geometry::Circle::area\n at src/geometry.rs:33:9",
            "src/geometry.rs::Circle::area",
        ),
    ] {
        let out = frozen_json(&shapes, frame, "symbol");
        assert_eq!(out.anchor_symbols(), [symbol], "{frame}");
    }
}

/// A Rust path from the crate's root and a TypeScript import's spelling name what they
/// name in the code.
#[test]
fn rust_crate_paths_and_typescript_imports_name_their_symbols() {
    let rust = built("rust");
    for (query, symbol) in [
        ("crate::geometry::Shape", "src/geometry.rs::Shape"),
        (
            "self::geometry::Circle::new",
            "src/geometry.rs::Circle::new",
        ),
        ("super::super::geometry::UNIT", "src/geometry.rs::UNIT"),
        // As the crate's users, its docs and backtraces write it: from the crate's name.
        (
            "shapes::geometry::Circle::new",
            "src/geometry.rs::Circle::new",
        ),
        (
            "   3: shapes::geometry::Circle::new\n             at ./src/geometry.rs",
            "src/geometry.rs::Circle::new",
        ),
    ] {
        let out = frozen_json(&rust, query, "symbol");
        assert_eq!(out.intent.anchors[0].symbol, symbol, "{query}");
    }
    // A crate's name is not a licence to guess from the words left.
    no_match(&rust, "shapes::nowhere::circle");
    let typescript = built("typescript");
    for (query, symbol) in [("./model", "src/model.ts"), ("../src/repo", "src/repo.ts")] {
        let out = frozen_json(&typescript, query, "symbol");
        assert_eq!(out.intent.anchors[0].symbol, symbol, "{query}");
    }
}

/// Rust paths as backtraces and panics print them — a qualified self type, generic
/// arguments, closures, a symbol hash — name what their plain path names; the standard
/// library's words in a panic (`` `Result::unwrap()` on an `Err` value ``) name nothing.
#[test]
fn a_rust_path_printed_by_a_backtrace_names_its_definition() {
    let rust = built("rust");
    for (query, symbol) in [
        (
            "<shapes::geometry::Circle as shapes::geometry::Shape>::area",
            "src/geometry.rs::Circle::area",
        ),
        (
            "<shapes::geometry::Circle>::new",
            "src/geometry.rs::Circle::new",
        ),
        (
            "shapes::geometry::Circle::new::{{closure}}::{{closure}}",
            "src/geometry.rs::Circle::new",
        ),
        (
            "shapes::geometry::Circle::new::h0123456789abcdef",
            "src/geometry.rs::Circle::new",
        ),
        (
            "shapes::geometry::Circle::new::<f64>",
            "src/geometry.rs::Circle::new",
        ),
        (
            "   4: <shapes::geometry::Square as shapes::geometry::Shape>::area\n             at ./src/geometry.rs:43:9",
            "src/geometry.rs::Square::area",
        ),
    ] {
        let out = frozen_json(&rust, query, "symbol");
        assert_eq!(out.anchor_symbols(), [symbol], "{query}");
    }
    // A repository whose own enum has an `Err`: the panic's words are the standard
    // library's `Result`, not it.
    let s = Sandbox::new();
    s.write("Cargo.toml", "[package]\nname = \"app\"\n");
    s.write(
        "src/lib.rs",
        "pub enum Parsed {\n    Ok(u32),\n    Err(String),\n}\n\npub fn parse(text: &str) -> u32 {\n    text.parse().unwrap()\n}\n",
    );
    s.build_json();
    let panic = "thread 'main' panicked at src/lib.rs:7:19:\ncalled `Result::unwrap()` on an `Err` value: ParseIntError { kind: InvalidDigit }";
    let out = frozen_json(&s, panic, "symbol");
    assert_eq!(out.anchor_symbols(), ["src/lib.rs::parse"]);
}

/// A Rust path as the crate's users, docs and backtraces write it starts with the crate's
/// name, which its `Cargo.toml` gives (`[lib] name`, else the package's with `-` as `_`):
/// the rest is read from that crate's root, among its files only. A first segment that is
/// no crate of the repository (`fs::`, a package renamed by `[lib]`), or a manifest edited
/// since the build, names nothing.
/// A facade crate (`grep` re-exports `grep_searcher as searcher`): its users' paths
/// (`grep::searcher::Searcher`) are read in the crate it re-exports, as the compiler
/// reads them; a path through no re-export, or through one of a crate the repository
/// does not hold, matches nothing. Of two items of one name, `krate::Name` is the one the
/// crate's root re-exports.
#[test]
fn a_facade_crates_path_is_read_in_the_crate_it_re_exports() {
    let s = Sandbox::new();
    s.write("Cargo.toml", "[workspace]\nmembers = [\"crates/*\"]\n");
    s.write(
        "crates/searcher/Cargo.toml",
        "[package]\nname = \"grep-searcher\"\n",
    );
    s.write(
        "crates/searcher/src/lib.rs",
        "pub mod sink;\nmod buffer;\nmod detect;\npub use crate::detect::Mode;\n\
         pub struct Searcher;\nimpl Searcher {\n    pub fn search_path(&self) {}\n}\n\
         #[cfg(test)]\nmod tests {\n    fn helper() {}\n}\n",
    );
    s.write("crates/searcher/src/sink.rs", "pub struct SinkMatch;\n");
    // Two `Mode`s: the crate's root re-exports one, the other is internal.
    s.write("crates/searcher/src/detect.rs", "pub struct Mode;\n");
    s.write("crates/searcher/src/buffer.rs", "pub struct Mode;\n");
    s.write(
        "crates/printer/Cargo.toml",
        "[package]\nname = \"printer\"\n",
    );
    s.write("crates/printer/src/lib.rs", "pub struct Standard;\n");
    s.write("crates/grep/Cargo.toml", "[package]\nname = \"grep\"\n");
    s.write(
        "crates/grep/src/lib.rs",
        "//! A facade.\npub extern crate grep_searcher as searcher;\npub use printer;\npub extern crate serde_json as json;\n",
    );
    s.build_json();
    for (query, symbol) in [
        (
            "grep::searcher::Searcher",
            "crates/searcher/src/lib.rs::Searcher",
        ),
        (
            "grep::searcher::Searcher::search_path",
            "crates/searcher/src/lib.rs::Searcher::search_path",
        ),
        (
            "grep::searcher::sink::SinkMatch",
            "crates/searcher/src/sink.rs::SinkMatch",
        ),
        (
            "grep::printer::Standard",
            "crates/printer/src/lib.rs::Standard",
        ),
        ("grep_searcher::Mode", "crates/searcher/src/detect.rs::Mode"),
        (
            "grep::searcher::Mode",
            "crates/searcher/src/detect.rs::Mode",
        ),
    ] {
        let out = frozen_json(&s, query, "symbol");
        assert_eq!(out.anchor_symbols(), [symbol], "{query}");
    }
    for query in [
        "grep::sink::SinkMatch",
        "grep::json::Value",
        "grep::grep_searcher::Searcher",
        "grep::searcher::Standard",
        // An inline module's item is not at the crate's root.
        "grep_searcher::helper",
    ] {
        no_match(&s, query);
    }
}

#[test]
fn a_rust_path_from_a_crates_name_is_read_in_that_crate() {
    let s = Sandbox::new();
    let shape = |area: &str| {
        format!(
            "pub struct Shape;\nimpl Shape {{\n    pub fn area(&self) -> f64 {{ {area} }}\n}}\n"
        )
    };
    s.write("Cargo.toml", "[workspace]\nmembers = [\"crates/*\"]\n");
    s.write(
        "crates/core/Cargo.toml",
        "[package]\nname = \"shape-core\"\nversion = \"0.1.0\"\n\n[[bin]]\nname = \"shaper\"\npath = \"src/main.rs\"\n",
    );
    s.write(
        "crates/core/src/lib.rs",
        "pub mod geometry;\npub use geometry::Shape;\n",
    );
    s.write("crates/core/src/main.rs", "fn main() {}\n");
    // Crates of their own, which the package's names do not reach.
    s.write("crates/core/build.rs", "fn main() {}\n");
    s.write("crates/core/tests/it.rs", "pub fn area_check() {}\n");
    s.write("crates/core/src/geometry.rs", shape("0.0"));
    s.write(
        "crates/draw/Cargo.toml",
        "[package]\nname = \"draw\"\n\n[lib]\nname = \"canvas\"\n",
    );
    s.write("crates/draw/src/lib.rs", "pub mod geometry;\n");
    s.write("crates/draw/src/geometry.rs", shape("1.0"));
    s.build_json();
    for (query, symbol) in [
        (
            "shape_core::geometry::Shape::area",
            "crates/core/src/geometry.rs::Shape::area",
        ),
        (
            "canvas::geometry::Shape::area",
            "crates/draw/src/geometry.rs::Shape::area",
        ),
        // Re-exported at the crate's root, as its docs print it.
        ("shape_core::Shape", "crates/core/src/geometry.rs::Shape"),
        ("canvas::geometry", "crates/draw/src/geometry.rs"),
        // A binary's name, as its backtraces print it.
        ("shaper::main", "crates/core/src/main.rs::main"),
    ] {
        let out = frozen_json(&s, query, "symbol");
        assert_eq!(out.anchor_symbols(), [symbol], "{query}");
    }
    for query in [
        "fs::geometry::Shape::area",
        "draw::geometry::Shape::area",
        "shape_core::geometry::Circle",
        "Shape_core::Shape",
        "shape_core::area_check",
        // An item at the crate's root, not a method anywhere in it.
        "shape_core::area",
    ] {
        no_match(&s, query);
    }
    // Edited since the build, a manifest is not the generation's: it names no crate, under
    // either name, until the next build reads it.
    s.write(
        "crates/draw/Cargo.toml",
        "[package]\nname = \"draw\"\n\n[lib]\nname = \"easel\"\n",
    );
    no_match(&s, "canvas::geometry::Shape::area");
    no_match(&s, "easel::geometry::Shape::area");
    let out = s
        .context("easel::geometry::Shape::area")
        .profile("symbol")
        .json()
        .run()
        .success()
        .context();
    assert_eq!(
        out.anchor_symbols(),
        ["crates/draw/src/geometry.rs::Shape::area"]
    );
}

/// A dotted name as a package's users write it reaches what the package re-exports:
/// `pkg.Engine` through `pkg/__init__.py`'s import, then members down the rest.
#[test]
fn a_dotted_name_reaches_what_its_module_re_exports() {
    let s = Sandbox::new();
    s.write("pkg/__init__.py", "from .core import Engine\n");
    s.write(
        "pkg/core.py",
        "class Engine:\n    def start(self):\n        return 1\n",
    );
    s.write(
        "app/cli.py",
        "from pkg import Engine\n\n\ndef run():\n    return Engine().start()\n",
    );
    s.write("app/main.py", "from pkg.core import Engine\n");
    s.write("app/core.py", "def helper():\n    return 2\n");
    s.build_json();
    // A relative path two files end is an ambiguity naming both, never a guess.
    let error = s
        .context("core.py")
        .profile("symbol")
        .frozen()
        .format("json")
        .run()
        .failure(7, "atlas-context-ambiguous")
        .error();
    assert_eq!(error.details().candidates, ["app/core.py", "pkg/core.py"]);
    for (query, symbol) in [
        ("pkg.Engine", "pkg/core.py::Engine"),
        ("pkg.Engine.start", "pkg/core.py::Engine.start"),
        ("app.cli.Engine", "pkg/core.py::Engine"),
        // `main.py` is a module named `main`, not its package.
        ("app.main.Engine", "pkg/core.py::Engine"),
        ("app.main", "app/main.py"),
        (
            "why does pkg.Engine.start() return 1",
            "pkg/core.py::Engine.start",
        ),
    ] {
        let out = frozen_json(&s, query, "symbol");
        let anchors = out.anchor_symbols();
        assert_eq!(anchors, [symbol], "{query}");
    }
    for query in ["pkg.Motor", "pkg.Engine.stop"] {
        no_match(&s, query);
    }
}

/// An error message's quoted names are code (`'Item'`), and a lower-case word that is code
/// only by its call (`type(s)`) is not a class of another case (`Type`).
#[test]
fn an_error_messages_quoted_names_anchor_and_its_calls_keep_their_case() {
    let s = Sandbox::new();
    s.write(
        "kinds.py",
        "class Type:\n    pass\n\n\nclass Item:\n    def total(self, n):\n        return n * 2\n",
    );
    s.build_json();
    let out = frozen_json(
        &s,
        "TypeError: unsupported operand type(s) for *: 'Item' and 'str'",
        "symbol",
    );
    let anchors = out.anchor_symbols();
    assert_eq!(anchors, ["kinds.py::Item"]);
}

/// A JVM stack frame names its file and line in its call's parentheses; the file is found
/// under the source root the frame does not print.
#[test]
fn a_jvm_stack_frame_anchors_the_method_at_its_line() {
    let s = built("java");
    let out = frozen_json(
        &s,
        "Exception in thread main java.lang.IllegalStateException\n\tat com.example.data.MemoryRepository.save(MemoryRepository.java:12)",
        "symbol",
    );
    let anchors = out.anchor_symbols();
    assert_eq!(
        anchors,
        ["src/main/java/com/example/data/MemoryRepository.java::MemoryRepository.save"]
    );
}

/// A misspelt name is still a no-match, never a guess; the error offers the nearest
/// names, each with the argv that asks again with it.
#[test]
fn a_misspelt_name_is_no_match_with_the_nearest_names_and_their_argv() {
    let s = built("python");
    let run = s
        .context("Item.totl callers")
        .profile("symbol")
        .frozen()
        .format("json")
        .run()
        .failure(7, "atlas-context-no-match");
    let error = run.error();
    assert!(
        error.message.ends_with("did you mean `Item.total`?"),
        "{}",
        error.message
    );
    let suggestions = &error.details().suggestions;
    assert_eq!(suggestions.len(), 1, "{suggestions:?}");
    assert_eq!(suggestions[0].term, "Item.totl");
    assert_eq!(suggestions[0].name, "Item.total");
    assert!(
        suggestions[0]
            .argv
            .contains(&"Item.total callers".to_string())
    );
    let out = s.replay(&suggestions[0].argv).success().context();
    assert_eq!(out.intent.anchors[0].symbol, "shop/models.py::Item.total");
    // A plain word asked alone: the nearest simple names, nearest first.
    let error = s
        .context("Cartt")
        .profile("symbol")
        .frozen()
        .format("json")
        .run()
        .failure(7, "atlas-context-no-match")
        .error();
    assert_eq!(error.details().suggestions[0].name, "Cart");
    // Nothing near: no suggestion, and the message says only what failed.
    let error = s
        .context("xyzzy_frobnicate")
        .profile("symbol")
        .frozen()
        .format("json")
        .run()
        .failure(7, "atlas-context-no-match")
        .error();
    assert!(error.details().suggestions.is_empty());
    assert!(!error.message.contains("did you mean"), "{}", error.message);
    // Only the first eight names that matched nothing are looked up: a pasted log of
    // thousands of names took seconds. A typo after them gets no suggestion.
    let far: Vec<String> = (0..8).map(|i| format!("xyzzy_frob_{i}")).collect();
    for (before, suggested) in [(7, true), (8, false)] {
        let query = format!("{} Item.totl", far[..before].join(" "));
        let error = s
            .context(&query)
            .profile("symbol")
            .frozen()
            .format("json")
            .run()
            .failure(7, "atlas-context-no-match")
            .error();
        let names: Vec<&str> = error
            .details()
            .suggestions
            .iter()
            .map(|n| n.name.as_str())
            .collect();
        assert_eq!(
            names.contains(&"Item.total"),
            suggested,
            "{query}: {names:?}"
        );
    }
}

#[test]
fn a_lone_code_name_that_matches_nothing_is_no_match_not_a_search_guess() {
    let s = built("python");
    s.context("apply_discont_rate")
        .profile("symbol")
        .frozen()
        .run()
        .failure(7, "atlas-context-no-match");
}

#[test]
fn one_entry_per_callee_carries_every_call_site() {
    let s = Sandbox::new();
    s.write(
        "calc.py",
        "def step(x):\n    return x + 1\n\n\ndef run(x):\n    x = step(x)\n    x = step(x)\n    x = step(x)\n    return step(x)\n\n\ndef main():\n    return run(1)\n",
    );
    s.build_json();
    let out = frozen_json(&s, "run", "symbol");
    let callees: Vec<_> = out.of_class("callee").collect();
    assert_eq!(callees.len(), 1, "one entry for four calls: {callees:?}");
    assert_eq!(callees[0].site_count, Some(4));
    let lines: Vec<u32> = callees[0].sites.iter().map(|s| s.line).collect();
    assert_eq!(lines, [6, 7, 8, 9]);
    assert!(out.has("caller", "calc.py::main"));
}

#[test]
fn continuation_argv_replays_byte_for_byte_in_a_new_process() {
    let s = built("python");
    let first = s
        .context("shop/models.py")
        .profile("symbol")
        .frozen()
        .max_bytes(3500)
        .json()
        .run()
        .success()
        .context();
    let argv = &first
        .omission("byte-ceiling")
        .expect("a byte-ceiling group")
        .argv;
    // The same request in this process, through the library.
    let request = atlas::query::context::ContextRequest::from_argv(argv).unwrap();
    assert!(request.after.is_some() && request.freshness.frozen);
    let location =
        atlas::build::store::locate(None, Some(&s.repo()), s.path(), &Default::default());
    let in_process: Value = serde_json::from_str(
        &atlas::query::context::run(&location, &request, &Default::default())
            .unwrap()
            .json,
    )
    .unwrap();
    let replayed = s.replay(argv).success().json();
    assert_eq!(without_timings(in_process), without_timings(replayed));
}

/// A repository where `target` has 300 callers spread over 12 files.
fn crowded() -> Sandbox {
    let s = Sandbox::new();
    s.write("lib/core.py", "def target(x):\n    return x\n");
    for file in 0..12 {
        let body: String = (0..25)
            .map(|i| format!("def caller_{file}_{i}(x):\n    return target(x)\n\n\n"))
            .collect();
        s.write(
            &format!("lib/use_{file}.py"),
            format!("from lib.core import target\n\n\n{body}"),
        );
    }
    s.build_json();
    s
}

#[test]
fn retrieval_cap_and_item_cap_omissions_are_grouped_with_argv() {
    let s = crowded();
    let out = frozen_json(&s, "target callers", "symbol");
    let reasons = out.omission_reasons();
    assert!(reasons.contains(&"retrieval-cap"), "{reasons:?}");
    assert!(reasons.contains(&"item-cap"), "{reasons:?}");
    assert_eq!(out.receipt.retrieval.returned, 256);
    assert!(out.receipt.projection.item_capped > 0);
    for omission in &out.omissions {
        let argv = &omission.argv;
        assert!(argv.iter().any(|a| a == "--after"), "{argv:?}");
    }
}

/// Candidates beyond the retrieval cap that all score under the page's threshold (hop-2
/// callers behind a window of direct ones) are fetched with the threshold lowered to
/// their best: following the group's argv shows them, not an empty page.
#[test]
fn a_retrieval_cap_continuation_under_the_threshold_shows_its_group() {
    let s = Sandbox::new();
    s.write("lib/core.py", "def target(x):\n    return x\n");
    let direct: String = (0..250)
        .map(|i| format!("def caller_{i}(x):\n    return target(x)\n\n\n"))
        .collect();
    s.write(
        "lib/direct.py",
        format!("from lib.core import target\n\n\n{direct}"),
    );
    let outer: String = (0..30)
        .map(|i| format!("def outer_{i}(x):\n    return caller_0(x)\n\n\n"))
        .collect();
    s.write(
        "lib/outer.py",
        format!("from lib.direct import caller_0\n\n\n{outer}"),
    );
    s.build_json();
    let first = frozen_json(&s, "target callers", "symbol");
    let capped = first
        .omissions
        .iter()
        .find(|o| o.reason == "retrieval-cap" && o.class == "caller")
        .expect("callers beyond the retrieval cap");
    let min_score = first.receipt.limits.min_score;
    assert!(capped.top.score < min_score, "{capped:?}");
    assert_eq!(
        capped.flag("--min-score"),
        Some(capped.top.score.to_string().as_str())
    );
    let next = s.replay(&capped.argv).success().context();
    assert!(
        next.evidence
            .iter()
            .any(|e| e.class == "caller"
                && e.symbol.as_deref().is_some_and(|s| s.contains("outer_"))),
        "{:?}",
        next.evidence.iter().map(|e| &e.symbol).collect::<Vec<_>>()
    );
}

#[test]
fn a_continuation_page_lists_what_earlier_pages_showed_as_after_cursor() {
    let s = crowded();
    let first = frozen_json(&s, "target callers", "symbol");
    let omission = first.omission("item-cap").expect("an item-cap group");
    let next = s.replay(&omission.argv).success().context();
    let group = next
        .omission("after-cursor")
        .expect("an after-cursor group");
    assert_eq!(group.flag("--after"), Some("START"));
    let shown: usize = next
        .omissions
        .iter()
        .filter(|o| o.reason == "after-cursor")
        .map(|o| o.count)
        .sum();
    assert_eq!(shown, next.receipt.retrieval.cursor_prefix);
}

#[test]
fn zero_callers_unknown_callers_and_zero_dependents_are_different_statements() {
    let s = Sandbox::new();
    s.write(
        "app.py",
        "def lonely():\n    return 1\n\n\nclass Port:\n    def ping(self):\n        return 2\n\n\ndef poke(thing):\n    return thing.ping()\n",
    );
    s.build_json();
    let lonely = frozen_json(&s, "lonely callers", "symbol");
    assert!(lonely.statement_codes().contains(&"no-callers"));
    let ping = frozen_json(&s, "Port.ping callers", "symbol");
    let codes = ping.statement_codes();
    assert!(codes.contains(&"callers-unknown"), "{codes:?}");
    let impact = frozen_json(&s, "lonely", "impact");
    assert!(impact.statement_codes().contains(&"no-dependents"));
}

#[test]
fn slices_never_reach_past_the_last_line_of_a_file() {
    let s = Sandbox::new();
    s.write(
        "short.py",
        "def f():\n    return 1\n\n\ndef g():\n    return f()\n",
    );
    s.build_json();
    let out = frozen_json(&s, "f callers", "symbol");
    let caller = out.of_class("caller").next().expect("a caller");
    // The call is on line 6, the file's last: the slice is lines 4–6, not 4–8.
    assert_eq!(caller.source.as_ref().map(|s| s.lines), Some([4, 6]));
}

#[test]
fn a_representative_implementation_is_never_a_skeleton() {
    let s = Sandbox::new();
    let body: String = (0..30)
        .map(|i| format!("    value_{i} = {i} * 2  # padding so that bodies are large\n"))
        .collect();
    for module in ["alpha", "beta", "gamma"] {
        let functions: String = (0..4)
            .map(|f| format!("def {module}_{f}():\n{body}    return {f}\n\n\n"))
            .collect();
        s.write(&format!("{module}/core.py"), functions);
    }
    s.build_json();
    let run = s
        .context("overview")
        .profile("architecture")
        .frozen()
        .max_bytes(6000)
        .json()
        .run()
        .success();
    let out = run.context();
    let representatives: Vec<_> = out.of_class("representative").collect();
    assert!(!representatives.is_empty(), "{}", run.stdout);
    for r in representatives {
        assert_eq!(r.projection, "full", "{r:?}");
    }
}

/// Format 4 cuts a graph into segments, each interning its own strings: relations that
/// match members by name must compare text, not string ids, across segments.
#[test]
fn implementations_are_found_across_segments() {
    let s = Sandbox::with_fixture("python");
    s.write(
        "aaa/base.py",
        "class Base:\n    def run(self):\n        raise NotImplementedError\n",
    );
    s.write(
        "zzz/impl.py",
        "from aaa.base import Base\n\n\nclass Impl(Base):\n    def run(self):\n        return 1\n",
    );
    // Enough files between them that the base and the implementor land in different
    // segments (a group ends at a directory change after 16 files).
    for dir in ["a", "b"] {
        for i in 0..70 {
            s.write(
                &format!("bulk/{dir}/m{i}.py"),
                format!("def f_{dir}_{i}(x):\n    return x\n"),
            );
        }
    }
    s.build_json();
    let segments = std::fs::read_dir(s.graph_file().parent().unwrap().join("segments"))
        .unwrap()
        .count();
    assert!(segments >= 3, "{segments} segments");
    let out = s
        .atlas(&[
            "context",
            "Base.run",
            "--profile",
            "symbol",
            "--frozen",
            "--format",
            "json",
        ])
        .success()
        .json();
    let implementations: Vec<&str> = out["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["class"] == "implementation")
        .filter_map(|e| e["symbol"].as_str())
        .collect();
    assert_eq!(implementations, ["zzz/impl.py::Impl.run"], "{out}");
}

/// Follows every continuation of `first` (depth first, as-is), checking that no page shows
/// an optional item its ancestors showed; returns every id delivered.
fn follow_continuations(s: &Sandbox, first: &ContextOut) -> std::collections::BTreeSet<String> {
    let ids = |page: &ContextOut| -> Vec<String> {
        page.evidence
            .iter()
            .filter(|e| !e.required)
            .map(|e| e.id.clone())
            .collect()
    };
    let mut delivered: std::collections::BTreeSet<String> =
        first.ids().into_iter().map(str::to_string).collect();
    let mut pending = vec![(first.clone(), Vec::<String>::new())];
    let mut asked = std::collections::BTreeSet::new();
    while let Some((page, mut shown)) = pending.pop() {
        shown.extend(ids(&page));
        for omission in &page.omissions {
            // Earlier pages, stale sources and policy re-ask rather than continue.
            if ["after-cursor", "source-unavailable", "policy"].contains(&omission.reason.as_str())
                || !asked.insert(omission.argv.clone())
            {
                continue;
            }
            assert!(asked.len() < 200, "continuations do not end");
            let next = s.replay(&omission.argv).success().context();
            for id in ids(&next) {
                assert!(
                    !shown.contains(&id),
                    "{id} shown again by the {} continuation {:?}",
                    omission.reason,
                    omission.argv
                );
                delivered.insert(id);
            }
            delivered.extend(next.ids().into_iter().map(str::to_string));
            pending.push((next, shown.clone()));
        }
    }
    delivered
}

#[test]
fn a_continuation_never_shows_again_what_its_page_showed() {
    let s = built("python");
    let cases: [(&str, &str, Option<usize>); 6] = [
        ("checkout", "symbol", None),
        ("checkout", "impact", Some(4000)),
        ("how is a discount applied", "symbol", None),
        ("Cart", "symbol", Some(6000)),
        ("shop/models.py", "symbol", Some(3000)),
        ("shop/models.py", "impact", Some(5000)),
    ];
    for (query, profile, max_bytes) in cases {
        let mut call = s.context(query).profile(profile).frozen().json();
        if let Some(bytes) = max_bytes {
            call = call.max_bytes(bytes);
        }
        let first = call.run().success().context();
        let delivered = follow_continuations(&s, &first);
        assert_eq!(
            delivered.len(),
            first.receipt.retrieval.total,
            "{query} / {profile}: every candidate delivered once: {delivered:?}"
        );
    }
    // Item caps: a page ends where it meets a file beyond its cap, so the next page
    // starts there and repeats none of the 8 files' callers it showed.
    let crowded = crowded();
    let first = frozen_json(&crowded, "target callers", "symbol");
    assert!(first.omission("item-cap").is_some());
    let item_cap = first.omission("item-cap").unwrap();
    let next = crowded.replay(&item_cap.argv).success().context();
    let shown = first.ids();
    assert!(
        !next
            .evidence
            .iter()
            .any(|e| !e.required && shown.contains(&e.id.as_str()))
    );
    assert!(next.evidence.iter().any(|e| e.class == "caller"));
}

#[test]
fn a_below_relevance_continuation_shows_the_band_under_the_threshold() {
    let s = built("python");
    let first = frozen_json(&s, "checkout", "symbol");
    let omission = first
        .omission("below-relevance")
        .expect("a below-relevance group");
    let threshold = first.receipt.limits.min_score;
    let band = (
        omission
            .flag("--min-score")
            .unwrap()
            .parse::<u16>()
            .unwrap(),
        omission
            .flag("--max-score")
            .unwrap()
            .parse::<u16>()
            .unwrap(),
    );
    assert_eq!(band, (omission.top.score, threshold - 1));
    let next = s.replay(&omission.argv).success().context();
    let optional: Vec<_> = next.evidence.iter().filter(|e| !e.required).collect();
    assert!(!optional.is_empty(), "{:?}", next.ids());
    assert!(
        optional
            .iter()
            .all(|e| (band.0..=band.1).contains(&e.score)),
        "{optional:?}"
    );
    assert!(next.evidence.iter().any(|e| e.id == omission.top.id));
    // What the first page showed is an earlier page's, fetched again from the start
    // without the band.
    let earlier = next
        .omission("after-cursor")
        .expect("an after-cursor group");
    assert_eq!(earlier.flag("--after"), Some("START"));
    assert_eq!(earlier.flag("--max-score"), None);
}

/// A policy group's argv names its top symbol: asked again, in any profile, that test's
/// body comes back whole.
#[test]
fn a_policy_groups_argv_shows_its_top_symbols_body() {
    let s = built("python");
    let mut seen = 0;
    for profile in ["symbol", "flow", "impact", "architecture"] {
        let first = frozen_json(&s, "checkout", profile);
        let Some(policy) = first.omission("policy") else {
            continue;
        };
        seen += 1;
        let top = policy.top.symbol.as_deref().expect("a top symbol");
        assert!(top.starts_with("tests/test_pricing.py::"), "{top}");
        assert_eq!(policy.argv[2], top, "{profile}");
        let named = s.replay(&policy.argv).success().context();
        let shown = named
            .evidence
            .iter()
            .find(|e| e.symbol.as_deref() == Some(top))
            .unwrap_or_else(|| panic!("{profile}: {top} not in {:?}", named.ids()));
        assert_eq!(shown.projection, "full", "{profile}: {shown:?}");
    }
    assert!(seen >= 1, "no profile left a test body out by policy");
}

#[test]
fn a_continuation_whose_first_item_cannot_fit_at_its_top_raises_the_ceiling() {
    let s = built("python");
    let first = s
        .context("shop/models.py")
        .profile("symbol")
        .frozen()
        .max_bytes(3000)
        .json()
        .run()
        .success()
        .context();
    let omission = first
        .omission("byte-ceiling")
        .expect("a byte-ceiling group");
    let raised: usize = omission.flag("--max-bytes").unwrap().parse().unwrap();
    assert!(raised > 3000, "{:?}", omission.argv);
    let next = s.replay(&omission.argv).success().context();
    assert_eq!(
        next.evidence.first().map(|e| e.id.as_str()),
        Some(omission.top.id.as_str())
    );
    // At the page's own ceiling, the next page would hold nothing.
    let mut same = omission.argv.clone();
    let at = same.iter().position(|a| a == "--max-bytes").unwrap();
    same[at + 1] = "3000".into();
    let empty = s.replay(&same).success().context();
    assert!(empty.evidence.is_empty(), "{:?}", empty.ids());
}
