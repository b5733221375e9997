//! Hybrid search end to end: the output contract, both arms, RRF, rerank, the frozen rule
//! and free words in `atlas context`.

mod common;

use common::Sandbox;

/// The `hits` of a search response.
fn hits_of(out: &serde_json::Value) -> &[serde_json::Value] {
    out["hits"].as_array().map_or(&[], Vec::as_slice)
}

/// The arms that found a hit.
fn arms_of(hit: &serde_json::Value) -> Vec<&str> {
    hit["match_arms"].as_array().map_or(Vec::new(), |a| {
        a.iter().filter_map(|v| v.as_str()).collect()
    })
}

fn search(s: &Sandbox, args: &[&str]) -> serde_json::Value {
    let mut full = vec!["search"];
    full.extend_from_slice(args);
    full.extend(["--format", "json"]);
    s.atlas(&full).success().json()
}

#[test]
fn search_output_contract_and_both_arms() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let out = search(&s, &["apply discount to the amount", "--top-k", "5"]);
    let hits = hits_of(&out);
    assert!(!hits.is_empty() && hits.len() <= 5);
    let top = &hits[0];
    assert_eq!(top["path"], "shop/util.py");
    assert_eq!(top["symbol"], "apply_discount");
    assert_eq!(top["kind"], "function");
    assert_eq!(top["lines"], serde_json::json!([1, 2]));
    assert!(
        top["ref"]
            .as_str()
            .unwrap()
            .starts_with("shop/util.py#L1-L2@")
    );
    let score = top["score"].as_f64().unwrap();
    assert!(
        score > 0.0 && score <= 3.0 / 60.0 + 1e-9,
        "score is the RRF score: {score}"
    );
    let arms: Vec<&str> = arms_of(top);
    assert!(arms.contains(&"bm25"), "{arms:?}");
    assert!(hits.iter().any(|h| { arms_of(h).contains(&"vector") }));
    // Python symbols are in-file qualified names.
    let methods = search(&s, &["cart total price", "--top-k", "10"]);
    assert!(
        hits_of(&methods)
            .iter()
            .any(|h| h["symbol"] == "Cart.total")
    );
}

#[test]
fn exact_symbol_matches_stay_first_unless_rerank_is_off() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let out = search(&s, &["checkout"]);
    assert_eq!(out["hits"][0]["symbol"], "checkout");
    assert_eq!(out["reranked"], true);
    let repo = s.repo();
    let raw = s
        .run_bin_env(
            env!("CARGO_BIN_EXE_atlas"),
            &[
                "--code",
                repo.to_str().unwrap(),
                "search",
                "checkout",
                "--format",
                "json",
            ],
            &[("ATLAS_RERANK", "0")],
        )
        .success()
        .json();
    assert_eq!(raw["reranked"], false);
    let scores: Vec<f64> = hits_of(&raw)
        .iter()
        .map(|h| h["score"].as_f64().unwrap())
        .collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "without rerank the order is RRF order: {scores:?}"
    );
}

#[test]
fn frozen_search_never_builds_the_index() {
    let s = Sandbox::with_fixture("python");
    s.atlas(&["build", "--no-search"]).success();
    s.atlas(&["search", "checkout", "--frozen"])
        .failure(3, "atlas-search-unavailable");
    // Without --frozen the index is built on first use; `atlas build` builds it by default.
    search(&s, &["checkout"]);
    let out = search(&s, &["checkout", "--frozen"]);
    assert_eq!(out["hits"][0]["symbol"], "checkout");
    let other = Sandbox::with_fixture("python");
    other.build_json();
    let out = search(&other, &["checkout", "--frozen"]);
    assert_eq!(out["hits"][0]["symbol"], "checkout");
}

#[test]
fn free_words_in_context_become_search_hits() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    // A name among free words anchors; the free words add search hits as candidates.
    let out = s
        .atlas(&[
            "context",
            "checkout with a discount rate",
            "--profile",
            "symbol",
            "--format",
            "json",
        ])
        .success()
        .json();
    assert_eq!(
        out["intent"]["anchors"][0]["symbol"],
        "shop/pricing.py::checkout"
    );
    assert_eq!(out["intent"]["anchors"][0]["anchor_reason"], "name");
    let evidence = out["evidence"].as_array().unwrap();
    let hit = evidence
        .iter()
        .find(|e| e["class"] == "search-hit" && e["symbol"] == "shop/util.py::apply_discount")
        .expect("a search-hit candidate");
    assert!(
        hit["reasons"][0]
            .as_str()
            .unwrap()
            .starts_with("search: bm25 rank")
    );
    assert!(
        !out["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["code"] == "atlas-context-unused-term")
    );
}

#[test]
fn a_question_without_a_name_is_anchored_on_its_best_search_hit() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let out = s
        .atlas(&[
            "context",
            "discount rate",
            "--profile",
            "symbol",
            "--frozen",
            "--format",
            "json",
        ])
        .success()
        .json();
    let anchor = &out["intent"]["anchors"][0];
    assert_eq!(anchor["symbol"], "shop/util.py::apply_discount");
    assert_eq!(anchor["anchor_reason"], "search");
    assert!(anchor["arms"].as_array().unwrap().contains(&"bm25".into()));
    let declaration = &out["evidence"][0];
    assert_eq!(declaration["class"], "declaration");
    assert_eq!(declaration["symbol"], "shop/util.py::apply_discount");
    assert!(
        declaration["reasons"][0]
            .as_str()
            .unwrap()
            .starts_with("anchored by search")
    );
    // The anchor is not repeated as a search hit; its callers are there.
    let evidence = out["evidence"].as_array().unwrap();
    assert!(
        !evidence
            .iter()
            .any(|e| e["class"] == "search-hit" && e["symbol"] == "shop/util.py::apply_discount")
    );
    assert!(
        evidence
            .iter()
            .any(|e| e["class"] == "caller" && e["symbol"] == "shop/pricing.py::checkout")
    );
}

#[test]
fn search_output_snapshot() {
    let s = Sandbox::with_fixture("mixed");
    s.build_json();
    let out = search(&s, &["ping handler", "--top-k", "5"]);
    insta::assert_json_snapshot!("search_mixed_ping_handler", out);
}

fn expand(s: &Sandbox, refs: &[&str]) -> common::Run {
    let mut args = vec!["expand"];
    args.extend_from_slice(refs);
    args.extend(["--format", "json"]);
    s.atlas(&args)
}

#[test]
fn expand_returns_hash_verified_source_for_a_search_ref() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let out = search(&s, &["apply discount", "--top-k", "1"]);
    let reference = out["hits"][0]["ref"].as_str().unwrap().to_string();
    let expanded = expand(&s, &[&reference]).success().json();
    let item = &expanded["items"][0];
    assert_eq!(
        item["content"],
        "def apply_discount(amount, rate):\n    return amount * (1 - rate)"
    );
    assert_eq!(item["content_complete"], true);
    let chars = item["content"].as_str().unwrap().chars().count();
    assert_eq!(item["content_range"], serde_json::json!([0, chars]));
    // The file changed: the ref is stale, a typed error.
    s.write(
        "shop/util.py",
        "def apply_discount(amount, rate):\n    return amount\n",
    );
    expand(&s, &[&reference]).failure(9, "atlas-expand-stale");
    // More than five refs is a usage error.
    let many = vec![reference.as_str(); 6];
    expand(&s, &many).failure(2, "atlas-invalid-input");
}

#[test]
fn expand_paginates_and_opens_large_classes_as_an_outline() {
    let s = Sandbox::new();
    let methods: String = (0..40)
        .map(|i| format!("    def method_{i}(self, value):\n        \"\"\"Method number {i}, documented at some length to make the class large.\"\"\"\n        return value * {i} + self.offset\n\n"))
        .collect();
    s.write("big.py", format!("class Big:\n    offset = 1\n\n{methods}"));
    s.build_json();
    let hit = search(&s, &["Big", "--top-k", "1"]);
    let reference = hit["hits"][0]["ref"].as_str().unwrap().to_string();
    let outlined = expand(&s, &[&reference]).success().json();
    let item = &outlined["items"][0];
    assert_eq!(item["warnings"][0], "expand_class_outline");
    assert_eq!(item["outline"].as_array().unwrap().len(), 40);
    assert_eq!(item["outline"][0]["symbol"], "Big.method_0");
    assert_eq!(item["content_complete"], false);
    // With the outline off, the class is paginated by characters instead.
    let repo = s.repo();
    let paged = s
        .run_bin_env(
            env!("CARGO_BIN_EXE_atlas"),
            &[
                "--code",
                repo.to_str().unwrap(),
                "expand",
                &reference,
                "--format",
                "json",
            ],
            &[("ATLAS_EXPAND_OUTLINE", "0")],
        )
        .success()
        .json();
    let first = &paged["items"][0];
    assert_eq!(first["content_range"][0], 0);
    assert_eq!(first["content_range"][1], 6000);
    let next = first["next_ref"].as_str().unwrap().to_string();
    let second = expand(&s, &[&next]).success().json();
    assert_eq!(second["items"][0]["content_range"][0], 6000);
    assert_eq!(second["items"][0]["content_complete"], true);
}

#[test]
fn compact_profile_has_fewer_fields_and_the_same_ranking() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let full = search(
        &s,
        &["cart item total", "--top-k", "8", "--profile", "full"],
    );
    let compact = search(
        &s,
        &["cart item total", "--top-k", "8", "--profile", "compact"],
    );
    assert_eq!(compact["profile"], "compact");
    let first = &compact["hits"][0];
    let keys: Vec<&str> = first
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["lines", "path", "ref", "symbol"]);
    assert!(
        compact.get("budget").is_none(),
        "no budget block when nothing was cut"
    );
    // Same order: compact only drops hits nested in an earlier hit of the same file.
    let order = |v: &serde_json::Value| -> Vec<String> {
        hits_of(v)
            .iter()
            .map(|h| format!("{}::{}", h["path"], h["symbol"]))
            .collect()
    };
    let full_order = order(&full);
    let compact_order = order(&compact);
    let mut position = 0;
    for hit in &compact_order {
        let at = full_order[position..]
            .iter()
            .position(|h| h == hit)
            .expect("compact hits appear in full order");
        position += at + 1;
    }
    // ATLAS_CONTEXT_OPTIMIZATION=1 makes compact the default; --profile full overrides.
    let repo = s.repo();
    let env = [("ATLAS_CONTEXT_OPTIMIZATION", "1")];
    let default = s
        .run_bin_env(
            env!("CARGO_BIN_EXE_atlas"),
            &[
                "--code",
                repo.to_str().unwrap(),
                "search",
                "cart",
                "--format",
                "json",
            ],
            &env,
        )
        .success()
        .json();
    assert_eq!(default["profile"], "compact");
    let forced = s
        .run_bin_env(
            env!("CARGO_BIN_EXE_atlas"),
            &[
                "--code",
                repo.to_str().unwrap(),
                "search",
                "cart",
                "--profile",
                "full",
                "--format",
                "json",
            ],
            &env,
        )
        .success()
        .json();
    assert_eq!(forced["profile"], "full");
}

#[test]
fn the_token_ceiling_cuts_whole_results_from_the_tail() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let run = s
        .atlas(&[
            "search",
            "cart item total price",
            "--top-k",
            "10",
            "--profile",
            "compact",
            "--max-tokens",
            "150",
            "--format",
            "json",
        ])
        .success();
    let out = run.json();
    let budget = &out["budget"];
    assert_eq!(budget["mode"], "tokens");
    assert_eq!(budget["tokenizer"], "o200k_base");
    assert_eq!(budget["max_tokens"], 150);
    assert_eq!(
        budget["budget"], 105,
        "compact budget is 70% of the ceiling"
    );
    assert!(budget["cut"].as_u64().unwrap() > 0);
    assert!(budget["used"].as_u64().unwrap() <= 105);
    let untouched = search(
        &s,
        &[
            "cart item total price",
            "--top-k",
            "10",
            "--profile",
            "compact",
        ],
    );
    let kept = hits_of(&out).len();
    assert_eq!(
        hits_of(&out)[..],
        hits_of(&untouched)[..kept],
        "a prefix of the uncut results"
    );
}

#[test]
fn issue_text_names_and_traceback_frames_feed_the_graph_arm() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    // A bug report: prose, a traceback through the repository, a quoted identifier.
    let report = "Totals are wrong after a discount.\n\
        Traceback (most recent call last):\n  \
        File \"/home/me/venv/lib/python3.12/site-packages/shop/pricing.py\", line 8, in checkout\n    \
        amount = cart.total()\n\
        ValueError: negative\n\
        It seems `round_money` is never reached.";
    let graph_only = s
        .atlas_env(
            &["search", report, "--format", "json", "--top-k", "5"],
            &[("ATLAS_SEARCH_ARMS", "graph")],
        )
        .success()
        .json();
    let symbols: Vec<&str> = hits_of(&graph_only)
        .iter()
        .map(|h| h["symbol"].as_str().unwrap())
        .collect();
    // The frame (line 8 of shop/pricing.py is inside `checkout`) outweighs a mention.
    assert_eq!(symbols.first(), Some(&"checkout"), "{symbols:?}");
    assert!(symbols.contains(&"round_money"), "{symbols:?}");
    assert_eq!(graph_only["arms"]["bm25"], 0);
    assert_eq!(graph_only["arms"]["vector"], 0);
    let all = search(&s, &[report, "--top-k", "3"]);
    let top = &all["hits"][0];
    assert_eq!(top["symbol"], "checkout");
    assert!(arms_of(top).contains(&"graph"), "{top}");
}

#[test]
fn an_unknown_arm_is_a_typed_error() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    s.atlas_env(
        &["search", "checkout", "--format", "json"],
        &[("ATLAS_SEARCH_ARMS", "bm25,telepathy")],
    )
    .failure(2, "atlas-invalid-input");
}

#[test]
fn observability_records_sizes_never_queries_paths_or_code() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let env = [("ATLAS_OBSERVABILITY", "1")];
    let secret_query = "zanzibar apply_discount";
    let out = s
        .atlas_env(&["search", secret_query, "--format", "json"], &env)
        .success();
    let reference = out.json()["hits"][0]["ref"].as_str().unwrap().to_string();
    s.atlas_env(&["expand", &reference, "--format", "json"], &env)
        .success();
    s.atlas_env(
        &[
            "context",
            "checkout",
            "--profile",
            "symbol",
            "--format",
            "json",
        ],
        &env,
    )
    .success();
    // An error is observed too, by its code.
    s.atlas_env(
        &[
            "context",
            "no_such_symbol_anywhere",
            "--profile",
            "symbol",
            "--format",
            "json",
        ],
        &env,
    );
    // Without the variable nothing is recorded.
    s.atlas(&["search", "checkout", "--format", "json"])
        .success();

    let log = std::fs::read_to_string(s.graph().join("observability/events.jsonl")).unwrap();
    let events: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let tools: Vec<&str> = events.iter().map(|e| e["tool"].as_str().unwrap()).collect();
    assert_eq!(tools, ["search", "expand", "context", "context"]);
    assert_eq!(events[0]["outcome"], "ok");
    assert_ne!(events[3]["outcome"], "ok");
    for event in &events {
        assert!(event["chars"].as_u64().unwrap() > 0);
        assert!(event["bytes"].as_u64().unwrap() >= event["chars"].as_u64().unwrap());
        assert!(event["tokens"].as_u64().unwrap() > 0);
        assert_eq!(event["tokenizer"]["name"], "o200k_base");
        assert_eq!(event["tokenizer"]["sha256"].as_str().unwrap().len(), 64);
    }
    for forbidden in [
        "zanzibar",
        "apply_discount",
        "checkout",
        "no_such_symbol",
        "shop/",
        ".py",
        "def ",
        "return",
    ] {
        assert!(
            !log.contains(forbidden),
            "event log leaks `{forbidden}`: {log}"
        );
    }
    let status = s.atlas(&["status", "--format", "json"]).success().json();
    assert_eq!(status["observability"]["events"], 4);
    assert_eq!(status["observability"]["dropped_events"], 0);
}

#[test]
fn markdown_sections_are_searchable_and_expandable() {
    let s = Sandbox::with_fixture("python");
    s.write(
        "docs/GUIDE.md",
        "# Shop guide\n\nOverview.\n\n## Refund policy\n\nRefunds are credited within quarantine windows.\n\n```python\n# not a heading\n```\n",
    );
    s.build_json();
    let out = search(&s, &["quarantine windows refund"]);
    let hit = hits_of(&out)
        .iter()
        .find(|h| h["kind"] == "section")
        .unwrap_or_else(|| panic!("a section hit: {out}"));
    assert_eq!(hit["path"], "docs/GUIDE.md");
    assert_eq!(hit["symbol"], "Shop guide > Refund policy");
    assert_eq!(hit["lines"], serde_json::json!([5, 11]));
    let reference = hit["ref"].as_str().unwrap();
    let expanded = expand(&s, &[reference]).success().json();
    let content = expanded["items"][0]["content"].as_str().unwrap();
    assert!(content.starts_with("## Refund policy"), "{content}");
    // Sections are not graph evidence: free words in `context` keep to symbols.
    assert!(!out["hits"][0]["path"].as_str().unwrap().is_empty());
}

fn git(s: &Sandbox, args: &[&str]) {
    let status = std::process::Command::new("git")
        .arg("-C")
        .arg(s.repo())
        .args([
            "-c",
            "user.name=Atlas Test",
            "-c",
            "user.email=atlas@example.invalid",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git runs");
    assert!(status.status.success(), "git {args:?}: {status:?}");
}

#[test]
fn commit_messages_fill_only_the_slots_the_pool_left_empty() {
    let s = Sandbox::with_fixture("python");
    git(&s, &["init", "-q"]);
    git(&s, &["add", "."]);
    git(&s, &["commit", "-q", "-m", "Initial shop"]);
    s.write(
        "shop/util.py",
        std::fs::read_to_string(s.repo().join("shop/util.py")).unwrap() + "\n# rounding\n",
    );
    git(
        &s,
        &["commit", "-q", "-am", "Fix xylophone rounding regression"],
    );
    s.build_json();
    let meta: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            s.graph()
                .join("search")
                .join(s.current())
                .join("index.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(meta["commits"], 2, "{meta}");
    assert_eq!(meta["head"].as_str().unwrap().len(), 40);

    // Only the commit message says "xylophone": the pool is empty, history fills it.
    let out = search(&s, &["xylophone", "--top-k", "3"]);
    let hits = hits_of(&out);
    let commit = hits
        .iter()
        .find(|h| h["kind"] == "commit")
        .unwrap_or_else(|| panic!("a commit hit: {out}"));
    assert_eq!(commit["path"], "shop/util.py");
    assert_eq!(
        commit["commit"]["subject"],
        "Fix xylophone rounding regression"
    );
    assert_eq!(commit["match_arms"], serde_json::json!(["history"]));
    assert!(commit["symbol"].as_str().unwrap().starts_with("commit:"));
    // A full pool leaves no slot for history.
    let full = search(&s, &["rounding money", "--top-k", "1"]);
    assert_eq!(hits_of(&full).len(), 1);
    assert_ne!(full["hits"][0]["kind"], "commit");
}

#[test]
fn the_index_is_updated_incrementally_and_matches_a_full_build() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let first = s.current();
    s.write(
        "shop/util.py",
        std::fs::read_to_string(s.repo().join("shop/util.py")).unwrap()
            + "\n\ndef marmalade_tax(amount):\n    \"\"\"Tax on marmalade.\"\"\"\n    return amount * 1.2\n",
    );
    s.write("docs/NOTES.md", "# Notes\n\n## Marmalade\n\nSticky.\n");
    s.build_json();
    let second = s.current();
    assert_ne!(first, second);
    let meta: serde_json::Value = serde_json::from_slice(
        &std::fs::read(s.graph().join("search").join(&second).join("index.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(meta["mode"], "incremental", "{meta}");
    assert_eq!(meta["base"], first.as_str());
    assert_eq!(meta["files_indexed"], 2, "{meta}");
    let symbols = meta["symbols"].as_u64().unwrap();
    let embedded = meta["embedded"].as_u64().unwrap();
    assert!(embedded < symbols / 2, "{meta}");

    // The same tree indexed from scratch answers identically.
    let fresh = Sandbox::new();
    common::copy_dir(&s.repo(), &fresh.repo());
    std::fs::remove_dir_all(fresh.graph()).unwrap();
    fresh.build_json();
    let fresh_meta: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            fresh
                .graph()
                .join("search")
                .join(fresh.current())
                .join("index.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(fresh_meta["mode"], "full");
    for query in [
        "marmalade tax",
        "cart total",
        "apply discount",
        "notes marmalade",
    ] {
        let a = search(&s, &[query, "--top-k", "8"]);
        let b = search(&fresh, &[query, "--top-k", "8"]);
        assert_eq!(a["hits"], b["hits"], "{query}");
    }
    let top = search(&s, &["marmalade_tax"]);
    assert_eq!(top["hits"][0]["symbol"], "marmalade_tax");
}

#[test]
fn a_path_in_the_text_names_its_file_to_the_graph_arm() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let out = s
        .atlas_env(
            &[
                "search",
                "Totals look wrong, I think the culprit lives in /home/me/src/shop/models.py (or so).",
                "--format",
                "json",
            ],
            &[("ATLAS_SEARCH_ARMS", "graph")],
        )
        .success()
        .json();
    let hits = hits_of(&out);
    assert!(!hits.is_empty(), "{out}");
    assert!(hits.iter().all(|h| h["path"] == "shop/models.py"), "{out}");
    // A partial path that fits several files names none of them.
    s.write("other/models.py", "def unrelated():\n    pass\n");
    s.build_json();
    let ambiguous = s
        .atlas_env(
            &[
                "search",
                "see models.py and x/models.py",
                "--format",
                "json",
            ],
            &[("ATLAS_SEARCH_ARMS", "graph")],
        )
        .success()
        .json();
    assert_eq!(hits_of(&ambiguous).len(), 0, "{ambiguous}");
}

#[test]
fn on_prose_the_vector_arm_only_reorders_lexical_candidates() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let prose = "When I check out a cart with several products the amount that comes back is \
        not what the discount should give me, it looks like the rate is applied twice or the \
        rounding happens before the discount is taken, which makes the total a few cents off \
        for every order we have processed this week";
    assert!(prose.split_whitespace().count() > 32);
    let out = search(&s, &[prose, "--top-k", "50"]);
    assert!(out["arms"]["vector"].as_u64().unwrap() > 0, "{out}");
    // Every vector match is a lexical candidate: on prose the arm reorders, never adds.
    for hit in hits_of(&out) {
        let arms = hit["match_arms"].as_array().unwrap();
        if arms.iter().any(|a| a == "vector") {
            assert!(arms.iter().any(|a| a == "bm25" || a == "graph"), "{hit}");
        }
    }
    // Alone, the vector arm searches everything.
    let alone = s
        .atlas_env(
            &["search", prose, "--format", "json", "--top-k", "50"],
            &[("ATLAS_SEARCH_ARMS", "vector")],
        )
        .success()
        .json();
    let bm25_only = s
        .atlas_env(
            &["search", prose, "--format", "json", "--top-k", "50"],
            &[("ATLAS_SEARCH_ARMS", "bm25")],
        )
        .success()
        .json();
    let lexical: Vec<&serde_json::Value> = bm25_only["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| &h["ref"])
        .collect();
    assert!(
        hits_of(&alone)
            .iter()
            .any(|h| !lexical.contains(&&h["ref"])),
        "alone, the vector arm finds what BM25 did not: {alone}"
    );
}

#[test]
fn one_process_runs_searches_with_different_configurations() {
    // The MCP server and daemon answer each request with its own configuration: the arms
    // are a setting passed down, not a process-wide variable.
    use atlas::config::{Arms, Config, SearchConfig};
    use atlas::query::search::{SearchIndex, embed::Embedder};
    let s = Sandbox::with_fixture("python");
    s.atlas(&["build"]).success();
    let store = atlas::build::store::Store::new(s.graph());
    let fingerprint = s.current();
    let graph = atlas::graph::reader::Graph::open(&store.graph_path(&fingerprint)).unwrap();
    let query = |arms: Arms| {
        let config = Config {
            search: SearchConfig::with_arms(arms),
            ..Config::default()
        };
        let embedder = Embedder::load(&config.embed).unwrap();
        SearchIndex::query(
            &store,
            &fingerprint,
            &graph,
            &s.repo(),
            &embedder,
            true,
            "apply discount to the amount",
            10,
            &config,
        )
        .unwrap()
    };
    let lexical = query(Arms {
        bm25: true,
        vector: false,
        graph: false,
    });
    let semantic = query(Arms {
        bm25: false,
        vector: true,
        graph: false,
    });
    assert!(!lexical.hits.is_empty() && !semantic.hits.is_empty());
    for hit in lexical.hits.iter().filter(|h| h.kind != "commit") {
        assert_eq!(hit.match_arms, ["bm25"], "{hit:?}");
    }
    for hit in semantic.hits.iter().filter(|h| h.kind != "commit") {
        assert_eq!(hit.match_arms, ["vector"], "{hit:?}");
    }
    // And a wrong arm list fails only the search that uses it.
    let broken =
        Config::from_lookup(&|name| (name == "ATLAS_SEARCH_ARMS").then(|| "bm25,colbert".into()));
    let embedder = Embedder::load(&broken.embed).unwrap();
    let err = SearchIndex::query(
        &store,
        &fingerprint,
        &graph,
        &s.repo(),
        &embedder,
        true,
        "discount",
        10,
        &broken,
    )
    .unwrap_err();
    assert_eq!(err.code(), "atlas-invalid-input");
}
