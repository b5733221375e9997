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
    let at = argv.iter().position(|a| *a == "--max-bytes").unwrap();
    assert_eq!(argv[at + 1], "6000");
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
            "2500",
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
        .expect("byte-ceiling omission")
        .clone();
    let argv: Vec<String> = omission["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    assert_eq!(argv[0], "atlas");
    assert!(
        argv.contains(&"--code".to_string()),
        "carries --code as given: {argv:?}"
    );
    let after = argv[argv.iter().position(|a| a == "--after").unwrap() + 1].clone();
    let mut args: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
    args.extend(["--frozen", "--format", "json"]);
    let second = s
        .run_bin(env!("CARGO_BIN_EXE_atlas"), &args)
        .success()
        .json();
    let prefix = second["receipt"]["retrieval"]["cursor_prefix"]
        .as_u64()
        .unwrap();
    assert!(prefix > 0);
    // The page starts right after the cursor: the omitted top candidate is delivered.
    let ids: Vec<&str> = second["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&omission["top"]["id"].as_str().unwrap()),
        "{ids:?}"
    );
    assert!(!ids.contains(&after.as_str()));
    // And it is stable: the same argv in another process gives the same page.
    let again = s
        .run_bin(env!("CARGO_BIN_EXE_atlas"), &args)
        .success()
        .json();
    assert_eq!(without_timings(second), without_timings(again));
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
