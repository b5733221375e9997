//! `atlas context` end to end: each negative case of SPEC §5 is its own test.

mod common;

use common::{Run, Sandbox};
use serde_json::Value;

fn context(s: &Sandbox, args: &[&str]) -> Run {
    let mut full = vec!["context"];
    full.extend_from_slice(args);
    s.atlas(&full)
}

fn built(fixture: &str) -> Sandbox {
    let s = Sandbox::with_fixture(fixture);
    s.build_json();
    s
}

fn classes(output: &Value) -> Vec<String> {
    output["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["class"].as_str().unwrap().to_string())
        .collect()
}

fn without_timings(mut output: Value) -> Value {
    output["receipt"]["timings_ms"] = Value::Null;
    output["receipt"]["serialized_bytes"] = Value::Null;
    output
}

#[test]
fn symbol_profile_shows_declaration_callers_and_callees_with_provenance() {
    let s = built("python");
    let out = context(
        &s,
        &[
            "shop.pricing.checkout",
            "--profile",
            "symbol",
            "--frozen",
            "--format",
            "json",
        ],
    )
    .success()
    .json();
    assert_eq!(
        out["intent"]["anchors"][0]["symbol"],
        "shop/pricing.py::checkout"
    );
    assert_eq!(out["intent"]["anchors"][0]["tier"], "exact-id");
    let evidence = out["evidence"].as_array().unwrap();
    let declaration = &evidence[0];
    assert_eq!(
        (
            declaration["class"].as_str(),
            declaration["required"].as_bool()
        ),
        (Some("declaration"), Some(true))
    );
    assert!(
        declaration["source"]["text"]
            .as_str()
            .unwrap()
            .contains("def checkout")
    );
    let callee = evidence
        .iter()
        .find(|e| e["class"] == "callee" && e["symbol"] == "shop/util.py::apply_discount")
        .expect("callee");
    assert_eq!(callee["relation"]["provenance"], "tree-sitter");
    assert_eq!(callee["relation"]["resolution"], "import");
    assert_eq!(callee["relation"]["site"]["path"], "shop/pricing.py");
    assert!(
        evidence
            .iter()
            .any(|e| e["class"] == "caller" && e["symbol"] == "shop/pricing.py::quick_cart")
    );
}

#[test]
fn ambiguous_suffix_is_reported_with_candidates() {
    let s = built("python");
    let run = context(
        &s,
        &[
            "total",
            "--profile",
            "symbol",
            "--frozen",
            "--format",
            "json",
        ],
    )
    .failure(7, "atlas-context-ambiguous");
    let error = &run.json()["error"];
    assert_eq!(error["code"], "atlas-context-ambiguous");
    let candidates: Vec<&str> = error["details"]["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert!(
        candidates.contains(&"shop/models.py::Item.total"),
        "{candidates:?}"
    );
    assert!(
        candidates.contains(&"shop/models.py::Cart.total"),
        "{candidates:?}"
    );
    // Qualifying the name resolves it.
    context(&s, &["Cart.total", "--profile", "symbol", "--frozen"]).success();
}

#[test]
fn no_match_is_a_typed_outcome_not_an_empty_success() {
    let s = built("python");
    let run = context(
        &s,
        &[
            "zzz_nothing_here",
            "--profile",
            "symbol",
            "--frozen",
            "--format",
            "json",
        ],
    )
    .failure(7, "atlas-context-no-match");
    assert_eq!(run.json()["error"]["code"], "atlas-context-no-match");
}

#[test]
fn stale_source_keeps_the_skeleton_and_requires_read_back() {
    let s = built("python");
    s.write(
        "shop/util.py",
        "# edited after the build\ndef apply_discount(amount, rate):\n    return amount\n",
    );
    let out = context(
        &s,
        &[
            "apply_discount",
            "--profile",
            "symbol",
            "--frozen",
            "--format",
            "json",
        ],
    )
    .success()
    .json();
    let declaration = &out["evidence"][0];
    assert_eq!(declaration["projection"], "stale-skeleton");
    assert!(
        declaration.get("source").is_none(),
        "no text from a changed file"
    );
    assert_eq!(declaration["symbol"], "shop/util.py::apply_discount");
    assert_eq!(declaration["diagnostics"][0], "atlas-context-stale-source");
    assert_eq!(out["receipt"]["read_back_required"], true);
    assert!(
        out["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["code"] == "atlas-context-stale-source" && d["path"] == "shop/util.py")
    );
    // Without --frozen the graph is refreshed first and the text comes back.
    let fresh = context(
        &s,
        &["apply_discount", "--profile", "symbol", "--format", "json"],
    )
    .success()
    .json();
    assert_eq!(fresh["receipt"]["refreshed"], true);
    assert_eq!(fresh["evidence"][0]["projection"], "full");
    assert_eq!(fresh["receipt"]["read_back_required"], false);
}

#[test]
fn low_relevance_candidates_stay_omitted_while_bytes_remain() {
    let s = built("python");
    // Hop-2 callers score below the symbol profile's threshold of 300.
    let out = context(
        &s,
        &[
            "apply_discount",
            "--profile",
            "symbol",
            "--frozen",
            "--format",
            "json",
        ],
    )
    .success()
    .json();
    let receipt = &out["receipt"];
    assert!(
        receipt["projection"]["below_threshold"].as_u64().unwrap() > 0,
        "{receipt}"
    );
    assert!(
        receipt["serialized_bytes"].as_u64().unwrap()
            < receipt["limits"]["max_bytes"].as_u64().unwrap() / 2
    );
    let omission = out["omissions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["reason"] == "below-relevance")
        .expect("below-relevance group");
    let argv: Vec<&str> = omission["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let at = argv
        .iter()
        .position(|a| *a == "--min-score")
        .expect("--min-score lowered");
    assert!(argv[at + 1].parse::<u16>().unwrap() < 300);
    // Lowering the threshold admits them.
    let lowered = context(
        &s,
        &[
            "apply_discount",
            "--profile",
            "symbol",
            "--frozen",
            "--min-score",
            "0",
            "--format",
            "json",
        ],
    )
    .success()
    .json();
    assert_eq!(lowered["receipt"]["projection"]["below_threshold"], 0);
    assert_eq!(lowered["receipt"]["limits"]["overridden"][0], "min_score");
}

#[test]
fn byte_pressure_prunes_optional_evidence_under_the_ceiling() {
    let s = built("python");
    let out = context(
        &s,
        &[
            "shop/models.py",
            "--profile",
            "symbol",
            "--frozen",
            "--max-bytes",
            "3000",
            "--format",
            "json",
        ],
    )
    .success();
    let json = out.json();
    let receipt = &json["receipt"];
    assert!(receipt["serialized_bytes"].as_u64().unwrap() <= 3000);
    let pruned = receipt["projection"]["byte_omitted"].as_u64().unwrap()
        + receipt["projection"]["skeletonized"].as_u64().unwrap();
    assert!(pruned > 0, "{receipt}");
    let omission = json["omissions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["reason"] == "byte-ceiling")
        .expect("byte-ceiling group");
    let argv: Vec<&str> = omission["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(argv[0], "atlas");
    // A page is a page: the continuation keeps the ceiling and every flag as given, once.
    let at = argv.iter().position(|a| *a == "--max-bytes").unwrap();
    assert_eq!(argv[at + 1], "3000");
    for flag in [
        "--max-bytes",
        "--frozen",
        "--format",
        "--profile",
        "--after",
    ] {
        assert_eq!(
            argv.iter().filter(|a| **a == flag).count(),
            1,
            "{flag} once in {argv:?}"
        );
    }
    let at = argv.iter().position(|a| *a == "--format").unwrap();
    assert_eq!(argv[at + 1], "json");
}

#[test]
fn required_evidence_that_cannot_fit_is_a_typed_error() {
    let s = Sandbox::new();
    let body: String = (0..60)
        .map(|i| format!("    x{i} = {i}  # a long line of padding to make the body big\n"))
        .collect();
    s.write("big.py", format!("def big():\n{body}    return 1\n"));
    s.build_json();
    let run = context(
        &s,
        &[
            "big",
            "--profile",
            "symbol",
            "--frozen",
            "--max-bytes",
            "1024",
            "--format",
            "json",
        ],
    )
    .failure(8, "atlas-context-required-budget");
    let error = run.json();
    assert_eq!(error["error"]["code"], "atlas-context-required-budget");
    assert!(
        error["error"]["details"]["evidence_id"]
            .as_str()
            .unwrap()
            .starts_with("ev-declaration-")
    );
}

#[test]
fn required_runtime_boundaries_over_the_slice_cap_fail_typed() {
    let s = Sandbox::new();
    let opens: String = (0..20).map(|i| format!("    open('f{i}')\n")).collect();
    s.write("io_heavy.py", format!("def load_all():\n{opens}"));
    s.build_json();
    let run = context(
        &s,
        &[
            "load_all",
            "--profile",
            "flow",
            "--frozen",
            "--max-bytes",
            "1000000",
            "--format",
            "json",
        ],
    );
    let run = run.failure(8, "atlas-context-required-source-cap");
    assert_eq!(run.json()["error"]["details"]["limit"], "max_slices");
}

#[test]
fn required_evidence_beyond_the_retrieval_cap_fails_typed() {
    let s = Sandbox::new();
    let opens: String = (0..400).map(|i| format!("    open('f{i}')\n")).collect();
    s.write("io_heavy.py", format!("def load_all():\n{opens}"));
    s.build_json();
    context(
        &s,
        &[
            "load_all",
            "--profile",
            "flow",
            "--frozen",
            "--format",
            "json",
        ],
    )
    .failure(8, "atlas-context-required-candidate-cap");
}

fn argv_of(omission: &Value) -> Vec<String> {
    omission["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect()
}

fn ids_of(page: &Value) -> Vec<String> {
    page["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn continuation_argv_resumes_in_a_new_process() {
    let s = built("python");
    let first = context(
        &s,
        &[
            "shop/models.py",
            "--profile",
            "symbol",
            "--frozen",
            "--max-bytes",
            "3000",
            "--format",
            "json",
        ],
    )
    .success()
    .json();
    let total = first["receipt"]["retrieval"]["total"].as_u64().unwrap() as usize;
    let mut seen: Vec<String> = ids_of(&first);
    let mut page = first;
    // Follow byte-ceiling continuations, as-is, until every candidate was delivered: each
    // resumes right after its cursor and makes progress; a page keeps its ceiling unless
    // the item at its top could not fit (then the argv raises it).
    for _ in 0..8 {
        let Some(omission) = page["omissions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["reason"] == "byte-ceiling")
            .cloned()
        else {
            break;
        };
        let argv = argv_of(&omission);
        assert_eq!(argv[0], "atlas");
        assert!(argv.contains(&"--code".to_string()), "{argv:?}");
        assert!(argv.contains(&"--frozen".to_string()), "{argv:?}");
        let after = argv[argv.iter().position(|a| a == "--after").unwrap() + 1].clone();
        let args: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
        let next = s
            .run_bin(env!("CARGO_BIN_EXE_atlas"), &args)
            .success()
            .json();
        assert!(
            next["receipt"]["retrieval"]["cursor_prefix"]
                .as_u64()
                .unwrap()
                > 0
        );
        let ids = ids_of(&next);
        assert!(!ids.contains(&after), "the page starts after its cursor");
        // The same argv in another process gives the same page.
        let again = s
            .run_bin(env!("CARGO_BIN_EXE_atlas"), &args)
            .success()
            .json();
        assert_eq!(without_timings(next.clone()), without_timings(again));
        for id in ids {
            if !seen.contains(&id) {
                seen.push(id);
            }
        }
        page = next;
    }
    assert_eq!(seen.len(), total, "every candidate delivered: {seen:?}");
}

#[test]
fn start_cursor_is_the_explicit_beginning() {
    let s = built("python");
    let plain = context(
        &s,
        &[
            "checkout",
            "--profile",
            "symbol",
            "--frozen",
            "--format",
            "json",
        ],
    )
    .success()
    .json();
    let fp = plain["graph"]["fingerprint"].as_str().unwrap().to_string();
    let started = context(
        &s,
        &[
            "checkout",
            "--profile",
            "symbol",
            "--frozen",
            "--expect-graph",
            &fp,
            "--after",
            "START",
            "--format",
            "json",
        ],
    )
    .success()
    .json();
    assert_eq!(started["receipt"]["retrieval"]["cursor_prefix"], 0);
    assert_eq!(classes(&plain), classes(&started));
}

#[test]
fn a_continuation_on_another_graph_fails_with_graph_mismatch() {
    let s = built("python");
    let wrong = "0".repeat(64);
    let run = context(
        &s,
        &[
            "checkout",
            "--profile",
            "symbol",
            "--frozen",
            "--expect-graph",
            &wrong,
            "--after",
            "START",
            "--format",
            "json",
        ],
    )
    .failure(9, "atlas-context-graph-mismatch");
    assert_eq!(run.json()["error"]["details"]["expected"], wrong);
}

#[test]
fn an_unknown_cursor_fails_typed() {
    let s = built("python");
    let out = context(
        &s,
        &[
            "checkout",
            "--profile",
            "symbol",
            "--frozen",
            "--format",
            "json",
        ],
    )
    .success()
    .json();
    let fp = out["graph"]["fingerprint"].as_str().unwrap().to_string();
    context(
        &s,
        &[
            "checkout",
            "--profile",
            "symbol",
            "--frozen",
            "--expect-graph",
            &fp,
            "--after",
            "ev-caller-0000000000000000",
        ],
    )
    .failure(9, "atlas-context-cursor");
    // --after needs --expect-graph.
    let run = context(&s, &["checkout", "--profile", "symbol", "--after", "START"]);
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
        let ra = context(
            &a,
            &[query, "--profile", profile, "--frozen", "--format", "json"],
        )
        .success()
        .json();
        let rb = context(
            &b,
            &[query, "--profile", profile, "--frozen", "--format", "json"],
        )
        .success()
        .json();
        let rc = context(
            &a,
            &[query, "--profile", profile, "--frozen", "--format", "json"],
        )
        .success()
        .json();
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
        let run = context(
            &s,
            &[
                "Circle",
                "--profile",
                profile,
                "--frozen",
                "--format",
                "json",
            ],
        )
        .success();
        let printed = run.stdout.strip_suffix('\n').unwrap();
        let bytes = run.json()["receipt"]["serialized_bytes"].as_u64().unwrap();
        assert_eq!(bytes as usize, printed.len(), "{profile}");
    }
}

#[test]
fn frozen_never_builds_and_a_changed_tree_is_refreshed_otherwise() {
    let s = Sandbox::with_fixture("go");
    context(&s, &["NewMemory", "--profile", "symbol", "--frozen"])
        .failure(3, "atlas-graph-missing");
    assert!(!s.graph().exists(), "--frozen wrote nothing");
    context(&s, &["NewMemory", "--profile", "symbol", "--no-build"])
        .failure(3, "atlas-graph-missing");
    let first = context(
        &s,
        &["NewMemory", "--profile", "symbol", "--format", "json"],
    )
    .success()
    .json();
    assert_eq!(
        first["receipt"]["refreshed"], true,
        "a missing graph is built first"
    );
    let second = context(
        &s,
        &["NewMemory", "--profile", "symbol", "--format", "json"],
    )
    .success()
    .json();
    assert_eq!(second["receipt"]["refreshed"], false);
    s.write(
        "store/extra.go",
        "package store\n\nfunc Extra() *Memory { return NewMemory() }\n",
    );
    let third = context(
        &s,
        &["NewMemory", "--profile", "symbol", "--format", "json"],
    )
    .success()
    .json();
    assert_eq!(third["receipt"]["refreshed"], true);
    assert!(
        third["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["symbol"] == "store/extra.go::Extra")
    );
}

#[test]
fn test_bodies_are_skeletons_unless_named() {
    let s = built("python");
    let out = context(
        &s,
        &[
            "checkout",
            "--profile",
            "symbol",
            "--frozen",
            "--format",
            "json",
        ],
    )
    .success()
    .json();
    let test_caller = out["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["symbol"] == "tests/test_pricing.py::test_checkout_empty_cart")
        .expect("test caller");
    assert_eq!(test_caller["projection"], "policy-skeleton");
    assert!(
        out["receipt"]["projection"]["policy_skeletonized"]
            .as_u64()
            .unwrap()
            >= 1
    );
    let named = context(
        &s,
        &[
            "test_checkout_empty_cart",
            "--profile",
            "symbol",
            "--frozen",
            "--format",
            "json",
        ],
    )
    .success()
    .json();
    assert_eq!(named["evidence"][0]["projection"], "full");
}

#[test]
fn flow_between_two_anchors_follows_the_call_path() {
    let s = built("python");
    let out = context(
        &s,
        &[
            "quick_cart apply_discount",
            "--profile",
            "flow",
            "--frozen",
            "--format",
            "json",
        ],
    )
    .success()
    .json();
    let spine: Vec<&str> = out["spine"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["symbol"].as_str().unwrap())
        .collect();
    assert_eq!(
        spine,
        [
            "shop/pricing.py::quick_cart",
            "shop/pricing.py::checkout",
            "shop/util.py::apply_discount"
        ]
    );
    assert!(
        out["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["class"] == "spine")
            .all(|e| e["required"] == true)
    );
    // No path is failure evidence, not an empty success.
    let m = built("mixed");
    let no_path = context(
        &m,
        &[
            "handle_ping leftPad",
            "--profile",
            "flow",
            "--frozen",
            "--format",
            "json",
        ],
    )
    .success()
    .json();
    let failure = no_path["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["statement"]["code"] == "no-call-path")
        .expect("no-call-path");
    assert_eq!(failure["required"], true);
}

#[test]
fn flow_marks_runtime_boundaries_as_required() {
    let s = built("mixed");
    let out = context(
        &s,
        &[
            "HttpTransport.send",
            "--profile",
            "flow",
            "--frozen",
            "--format",
            "json",
        ],
    )
    .success()
    .json();
    let boundary = out["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["class"] == "runtime-boundary")
        .expect("fetch is a boundary");
    assert_eq!(boundary["required"], true);
    assert_eq!(boundary["statement"]["code"], "network-io");
}

#[test]
fn impact_lists_dependents_and_the_frontier() {
    let s = built("python");
    let out = context(
        &s,
        &[
            "Cart",
            "--profile",
            "impact",
            "--frozen",
            "--format",
            "json",
        ],
    )
    .success()
    .json();
    let evidence = out["evidence"].as_array().unwrap();
    assert!(
        evidence
            .iter()
            .any(|e| e["class"] == "dependent" && e["symbol"] == "shop/pricing.py::quick_cart")
    );
    assert!(evidence.iter().any(|e| e["class"] == "reverse-path"));
    let unknown = context(
        &s,
        &[
            "Item.total",
            "--profile",
            "impact",
            "--frozen",
            "--format",
            "json",
        ],
    )
    .success()
    .json();
    let ev = unknown["evidence"].as_array().unwrap();
    assert!(ev.iter().any(|e| e["class"] == "frontier"));
    assert!(
        ev.iter()
            .any(|e| e["statement"]["code"] == "dependents-unknown")
    );
}

#[test]
fn architecture_without_anchor_maps_the_repository() {
    // Without a search index (and --frozen never builds one), free words are reported.
    let s = Sandbox::with_fixture("mixed");
    s.atlas(&["build", "--no-search"]).success();
    let out = context(
        &s,
        &[
            "overview",
            "--profile",
            "architecture",
            "--frozen",
            "--format",
            "json",
        ],
    )
    .success()
    .json();
    let cls = classes(&out);
    assert!(cls.contains(&"module".to_string()));
    assert!(cls.contains(&"module-relation".to_string()));
    assert!(
        out["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["code"] == "atlas-context-unused-term")
    );
}

#[test]
fn text_format_renders_the_spine_and_shell_argv() {
    let s = built("python");
    let text = context(
        &s,
        &[
            "checkout calls",
            "--profile",
            "flow",
            "--frozen",
            "--max-bytes",
            "1400",
            "--format",
            "text",
        ],
    );
    let text = if text.code == 0 {
        text.stdout
    } else {
        context(
            &s,
            &[
                "checkout calls",
                "--profile",
                "flow",
                "--frozen",
                "--format",
                "text",
            ],
        )
        .success()
        .stdout
    };
    assert!(text.contains("spine"), "{text}");
    assert!(text.contains("└─"), "{text}");
    let byte_limited = context(
        &s,
        &[
            "shop/models.py",
            "--profile",
            "symbol",
            "--frozen",
            "--max-bytes",
            "2500",
            "--format",
            "text",
        ],
    )
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
    let repo = s.repo();
    let args = [
        "--code",
        repo.to_str().unwrap(),
        "context",
        "checkout",
        "--profile",
        "symbol",
        "--frozen",
        "--format",
        "json",
    ];
    let direct = s.run_bin(env!("CARGO_BIN_EXE_atlas"), &args).success();
    let mut alias_args = vec!["atlas"];
    alias_args.extend(args);
    let alias = s
        .run_bin(env!("CARGO_BIN_EXE_agent-spec"), &alias_args)
        .success();
    assert_eq!(
        without_timings(direct.json()),
        without_timings(alias.json())
    );
}

// ── Questions (issue 9) ─────────────────────────────────────────────────────────────

fn omission_reasons(out: &Value) -> Vec<String> {
    out["omissions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["reason"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn an_ambiguous_name_in_a_question_is_ranked_and_reported_not_fatal() {
    let s = built("python");
    let out = context(
        &s,
        &[
            "why is __init__ slow for a cart",
            "--profile",
            "symbol",
            "--frozen",
            "--format",
            "json",
        ],
    )
    .success()
    .json();
    let anchor = out["intent"]["anchors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["term"] == "__init__")
        .expect("`__init__` anchors");
    assert_eq!(anchor["anchor_reason"], "ranked");
    let diagnostic = out["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "atlas-context-ambiguous")
        .expect("an ambiguity diagnostic");
    let others = diagnostic["candidates"].as_array().unwrap();
    assert_eq!(others.len(), 1, "{diagnostic}");
    let other = others[0]["symbol"].as_str().unwrap();
    assert_ne!(other, anchor["symbol"].as_str().unwrap());
    // The listed argv asks the same question naming that candidate alone.
    let argv: Vec<String> = others[0]["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    assert!(argv.contains(&"--frozen".to_string()), "{argv:?}");
    let args: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
    let again = s
        .run_bin(env!("CARGO_BIN_EXE_atlas"), &args)
        .success()
        .json();
    assert!(
        again["intent"]["anchors"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["symbol"] == other && a["tier"] == "exact-id"),
        "{again}"
    );
}

#[test]
fn a_lone_ambiguous_code_name_is_a_typed_error_with_an_argv_per_candidate() {
    let s = built("python");
    let run = context(
        &s,
        &[
            "__init__",
            "--profile",
            "flow",
            "--frozen",
            "--format",
            "json",
        ],
    )
    .failure(7, "atlas-context-ambiguous");
    let details = &run.json()["error"]["details"];
    let choices = details["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 2);
    for choice in choices {
        let argv: Vec<&str> = choice["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        let out = s
            .run_bin(env!("CARGO_BIN_EXE_atlas"), &argv[1..])
            .success()
            .json();
        assert_eq!(out["intent"]["anchors"][0]["symbol"], choice["symbol"]);
    }
}

#[test]
fn plain_words_never_fail_a_question() {
    let s = built("python");
    // `total` names two methods, `the`/`is` are stop words: none of it is an error.
    let out = context(
        &s,
        &[
            "where is the total of the cart computed",
            "--profile",
            "flow",
            "--frozen",
            "--format",
            "json",
        ],
    )
    .success()
    .json();
    let free: Vec<&str> = out["intent"]["free_terms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(
        free.contains(&"total") && free.contains(&"where"),
        "{free:?}"
    );
    assert!(!out["spine"].as_array().unwrap().is_empty());
}

#[test]
fn a_flow_question_starts_its_spine_at_the_best_callable_hit() {
    let s = built("python");
    let out = context(
        &s,
        &[
            "how is a discount applied to the price",
            "--profile",
            "flow",
            "--frozen",
            "--format",
            "json",
        ],
    )
    .success()
    .json();
    assert_eq!(out["spine"][0]["symbol"], "shop/util.py::apply_discount");
    let anchor = &out["intent"]["anchors"][0];
    assert_eq!(anchor["anchor_reason"], "search");
    assert!(anchor.get("tier").is_none());
    // The next strong hit in another chain is an alternative, not a second anchor.
    assert_eq!(out["intent"]["anchors"].as_array().unwrap().len(), 1);
    let alternative = out["intent"]["alternative"]["symbol"].as_str().unwrap();
    assert!(
        out["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["class"] == "alternative" && e["symbol"] == alternative)
    );
}

#[test]
fn a_lone_code_name_that_matches_nothing_is_no_match_not_a_search_guess() {
    let s = built("python");
    context(
        &s,
        &["apply_discont_rate", "--profile", "symbol", "--frozen"],
    )
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
    let out = context(
        &s,
        &["run", "--profile", "symbol", "--frozen", "--format", "json"],
    )
    .success()
    .json();
    let callees: Vec<&Value> = out["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["class"] == "callee")
        .collect();
    assert_eq!(callees.len(), 1, "one entry for four calls: {callees:?}");
    assert_eq!(callees[0]["site_count"], 4);
    let lines: Vec<u64> = callees[0]["sites"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, [6, 7, 8, 9]);
    assert!(
        out["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["class"] == "caller" && e["symbol"] == "calc.py::main")
    );
}

#[test]
fn continuation_argv_replays_byte_for_byte_in_a_new_process() {
    let s = built("python");
    let first = context(
        &s,
        &[
            "shop/models.py",
            "--profile",
            "symbol",
            "--frozen",
            "--max-bytes",
            "3500",
            "--format",
            "json",
        ],
    )
    .success()
    .json();
    let omission = first["omissions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["reason"] == "byte-ceiling")
        .expect("a byte-ceiling group")
        .clone();
    let argv = argv_of(&omission);
    // The same request in this process, through the library.
    let request = atlas::query::context::ContextRequest::from_argv(&argv).unwrap();
    assert!(request.after.is_some() && request.freshness.frozen);
    let location =
        atlas::build::store::locate(None, Some(&s.repo()), s.path(), &Default::default());
    let in_process: Value = serde_json::from_str(
        &atlas::query::context::run(&location, &request, &Default::default())
            .unwrap()
            .json,
    )
    .unwrap();
    let args: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
    let replayed = s
        .run_bin(env!("CARGO_BIN_EXE_atlas"), &args)
        .success()
        .json();
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
    let out = context(
        &s,
        &[
            "target callers",
            "--profile",
            "symbol",
            "--frozen",
            "--format",
            "json",
        ],
    )
    .success()
    .json();
    let reasons = omission_reasons(&out);
    assert!(
        reasons.contains(&"retrieval-cap".to_string()),
        "{reasons:?}"
    );
    assert!(reasons.contains(&"item-cap".to_string()), "{reasons:?}");
    assert_eq!(out["receipt"]["retrieval"]["returned"], 256);
    assert!(
        out["receipt"]["projection"]["item_capped"]
            .as_u64()
            .unwrap()
            > 0
    );
    for omission in out["omissions"].as_array().unwrap() {
        let argv = argv_of(omission);
        assert!(argv.contains(&"--after".to_string()), "{argv:?}");
    }
}

#[test]
fn a_continuation_page_lists_what_earlier_pages_showed_as_after_cursor() {
    let s = crowded();
    let first = context(
        &s,
        &[
            "target callers",
            "--profile",
            "symbol",
            "--frozen",
            "--format",
            "json",
        ],
    )
    .success()
    .json();
    let omission = first["omissions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["reason"] == "item-cap")
        .unwrap()
        .clone();
    let argv = argv_of(&omission);
    let args: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
    let next = s
        .run_bin(env!("CARGO_BIN_EXE_atlas"), &args)
        .success()
        .json();
    let group = next["omissions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["reason"] == "after-cursor")
        .expect("an after-cursor group")
        .clone();
    let argv = argv_of(&group);
    let at = argv.iter().position(|a| a == "--after").unwrap();
    assert_eq!(argv[at + 1], "START");
    let shown: u64 = next["omissions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["reason"] == "after-cursor")
        .map(|o| o["count"].as_u64().unwrap())
        .sum();
    assert_eq!(
        shown,
        next["receipt"]["retrieval"]["cursor_prefix"]
            .as_u64()
            .unwrap()
    );
}

fn statement_codes(out: &Value) -> Vec<String> {
    out["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["statement"]["code"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn zero_callers_unknown_callers_and_zero_dependents_are_different_statements() {
    let s = Sandbox::new();
    s.write(
        "app.py",
        "def lonely():\n    return 1\n\n\nclass Port:\n    def ping(self):\n        return 2\n\n\ndef poke(thing):\n    return thing.ping()\n",
    );
    s.build_json();
    let lonely = context(
        &s,
        &[
            "lonely callers",
            "--profile",
            "symbol",
            "--frozen",
            "--format",
            "json",
        ],
    )
    .success()
    .json();
    assert!(statement_codes(&lonely).contains(&"no-callers".to_string()));
    let ping = context(
        &s,
        &[
            "Port.ping callers",
            "--profile",
            "symbol",
            "--frozen",
            "--format",
            "json",
        ],
    )
    .success()
    .json();
    assert!(
        statement_codes(&ping).contains(&"callers-unknown".to_string()),
        "{ping}"
    );
    let impact = context(
        &s,
        &[
            "lonely",
            "--profile",
            "impact",
            "--frozen",
            "--format",
            "json",
        ],
    )
    .success()
    .json();
    assert!(statement_codes(&impact).contains(&"no-dependents".to_string()));
}

#[test]
fn slices_never_reach_past_the_last_line_of_a_file() {
    let s = Sandbox::new();
    s.write(
        "short.py",
        "def f():\n    return 1\n\n\ndef g():\n    return f()\n",
    );
    s.build_json();
    let out = context(
        &s,
        &[
            "f callers",
            "--profile",
            "symbol",
            "--frozen",
            "--format",
            "json",
        ],
    )
    .success()
    .json();
    let caller = out["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["class"] == "caller")
        .unwrap();
    // The call is on line 6, the file's last: the slice is lines 4–6, not 4–8.
    assert_eq!(caller["source"]["lines"], serde_json::json!([4, 6]));
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
    let out = context(
        &s,
        &[
            "overview",
            "--profile",
            "architecture",
            "--frozen",
            "--max-bytes",
            "6000",
            "--format",
            "json",
        ],
    )
    .success()
    .json();
    let representatives: Vec<&Value> = out["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["class"] == "representative")
        .collect();
    assert!(!representatives.is_empty(), "{out}");
    for r in representatives {
        assert_eq!(r["projection"], "full", "{r}");
    }
}
