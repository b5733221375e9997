//! Hybrid search end to end: the output contract, both arms, RRF, rerank, the frozen rule
//! and free words in `atlas context`.

mod common;

use common::{Call, Sandbox, SearchOut};

/// Runs a search call with `--format json` last; it must succeed.
fn searched(call: Call) -> SearchOut {
    call.json().run().success().search()
}

#[test]
fn search_output_contract_and_both_arms() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let out = searched(s.search("apply discount to the amount").top_k(5));
    let hits = &out.hits;
    assert!(!hits.is_empty() && hits.len() <= 5);
    let top = &hits[0];
    assert_eq!(top.path, "shop/util.py");
    assert_eq!(top.symbol, "apply_discount");
    assert_eq!(top.kind.as_deref(), Some("function"));
    assert_eq!(top.lines, [1, 2]);
    assert!(
        top.reference.starts_with("shop/util.py#L1-L2@"),
        "{}",
        top.reference
    );
    let score = top.score.expect("score");
    assert!(
        score > 0.0 && score <= 3.0 / 60.0 + 1e-9,
        "score is the RRF score: {score}"
    );
    assert!(top.found_by("bm25"), "{:?}", top.match_arms);
    assert!(hits.iter().any(|h| h.found_by("vector")));
    // Python symbols are in-file qualified names.
    let methods = searched(s.search("cart total price").top_k(10));
    assert!(methods.symbols().contains(&"Cart.total"));
}

/// `atlas search` (and so the MCP search tool) reads a Portuguese question as `context`
/// does: with the English of its words (`query::glossary`), saying so in `searched`.
#[test]
fn a_portuguese_search_is_searched_with_its_english_words_and_says_so() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let asked = "como um desconto é aplicado ao preço?";
    // No word of it is in the code: without its English it finds nothing.
    let out = searched(s.search(asked).top_k(3));
    assert_eq!(out.query, asked, "the question is echoed as asked");
    assert_eq!(
        out.searched.as_deref(),
        Some("como um desconto é aplicado ao preço? discount apply price")
    );
    assert_eq!(out.hits[0].symbol, "apply_discount");
    let text = s.search(asked).top_k(3).run().success();
    assert!(
        text.stderr
            .contains("note[atlas-search-glossary]: a Portuguese question, searched as"),
        "{}",
        text.stderr
    );
    let english = searched(s.search("how is a discount applied to the price").top_k(3));
    assert_eq!(
        english.searched, None,
        "an English question is searched as asked"
    );
    assert_eq!(english.hits[0].symbol, "apply_discount");
}

/// A pasted bug report's sections on the reporter's environment are not searched, and
/// the answer says which were set aside (`query::environment`): their words (an OS line
/// that names a manylinux wheel) bring no code in, as they do outside such a section, and
/// the next section is searched.
#[test]
fn an_issues_environment_sections_are_set_aside_and_said() {
    let s = Sandbox::with_fixture("python");
    s.write(
        "ops/wheels.py",
        "def linux_wheel_tag(arch):\n    \"\"\"Manylinux wheel tag per arch.\"\"\"\n    return \"manylinux_\" + arch\n",
    );
    s.write(
        "ops/ledger.py",
        "def ledger_checksum(rows):\n    \"\"\"Ledger checksum.\"\"\"\n    return sum(rows)\n",
    );
    s.build_json();
    let issue = "Checkout applies the discount twice\n\
        **Describe the bug**\n\
        the cart total is discounted twice at checkout when a customer pays for a cart \
        with more than one item in it, and the price shown on the receipt is lower than \
        the price the shop expects to be paid for the whole order\n\
        \n\
        **Environment**\n\
        - OS: Linux, a manylinux wheel\n\
        - Python version: 3.12\n\
        **Expected behavior**\n\
        one discount, and the ledger checksum matches\n";
    let out = searched(s.search(issue).top_k(30));
    assert_eq!(out.query, issue, "the query is echoed as asked");
    assert_eq!(out.searched, None);
    assert_eq!(
        out.set_aside,
        vec![common::SetAside {
            heading: "Environment".into(),
            lines: 3
        }]
    );
    assert!(
        !out.symbols().contains(&"linux_wheel_tag"),
        "{:?}",
        out.hits
    );
    // The section ends at the next heading: what follows is searched.
    assert!(
        out.hits
            .iter()
            .any(|h| h.symbol == "ledger_checksum" && h.found_by("bm25")),
        "{:?}",
        out.symbols()
    );
    // The same words outside such a section are searched.
    let plain = issue.replace("**Environment**", "**Also seen**");
    let out = searched(s.search(&plain).top_k(30));
    assert!(out.set_aside.is_empty());
    assert!(
        out.hits
            .iter()
            .any(|h| h.symbol == "linux_wheel_tag" && h.found_by("bm25")),
        "{:?}",
        out.symbols()
    );
    let text = s.search(issue).top_k(3).run().success();
    assert!(
        text.stderr.contains(
            "note[atlas-search-environment]: sections on the environment were not searched: `Environment` (3 lines)"
        ),
        "{}",
        text.stderr
    );
}

/// An empty search, or one with no word in it, is a wrong call (typed, exit 2), never a
/// success with no hits or with the vector arm's arbitrary neighbours of punctuation.
#[test]
fn an_empty_search_is_a_typed_error() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    for text in ["", "   ", "\t\n", "?!.", "-- () {} ;"] {
        s.search(text)
            .frozen()
            .run()
            .failure(2, "atlas-invalid-input");
    }
}

/// A query beyond 64 KiB is a document, not a question: every command refuses it, typed,
/// naming the limit (the MCP tools refuse it alike); one at the limit is answered.
#[test]
fn a_query_beyond_64_kib_is_refused_by_search_and_context_alike() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let words = "checkout total discount price ";
    let at_limit: String = words.repeat(64 * 1024 / words.len() + 1)[..64 * 1024].to_string();
    let over = format!("{at_limit}x");
    for (args, limit) in [
        (
            vec!["search", over.as_str(), "--frozen", "--format", "json"],
            false,
        ),
        (
            vec![
                "context",
                over.as_str(),
                "--profile",
                "symbol",
                "--format",
                "json",
            ],
            false,
        ),
        (
            vec!["search", at_limit.as_str(), "--frozen", "--format", "json"],
            true,
        ),
    ] {
        let run = s.atlas(&args);
        if limit {
            run.success();
            continue;
        }
        let run = run.failure(2, "atlas-invalid-input");
        let message = run.json()["error"]["message"].as_str().unwrap().to_string();
        assert!(
            message.contains("65537 bytes; a query is at most 65536 bytes"),
            "{message}"
        );
    }
}

/// The text answer keeps the token ceiling as the JSON does and says what it cut; no hits
/// is said, not printed as nothing; a ceiling of zero is a wrong call.
#[test]
fn a_text_search_keeps_its_token_ceiling_and_says_what_it_cut() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let whole = s.search("cart total price").frozen().text().run().success();
    let all: Vec<&str> = whole.stdout.lines().collect();
    assert!(all.len() > 2, "{all:?}");
    let capped = s
        .search("cart total price")
        .frozen()
        .text()
        .max_tokens(60)
        .run()
        .success();
    let lines: Vec<&str> = capped.stdout.lines().collect();
    let (last, kept) = lines.split_last().expect("lines");
    assert!(!kept.is_empty() && kept.len() < all.len() - 1, "{lines:?}");
    assert_eq!(kept, &all[..kept.len()], "the head of the same ranking");
    assert_eq!(
        *last,
        format!(
            "… {} more hits cut to fit --max-tokens 60",
            all.len() - kept.len()
        )
    );
    let none = s.search("zzqqxxyy").frozen().text().run().success();
    assert_eq!(none.stdout, "no hits\n");
    s.search("cart")
        .frozen()
        .max_tokens(0)
        .run()
        .failure(2, "atlas-invalid-input");
}

#[test]
fn exact_symbol_matches_stay_first_unless_rerank_is_off() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let out = searched(s.search("checkout"));
    assert_eq!(out.hits[0].symbol, "checkout");
    assert_eq!(out.reranked, Some(true));
    let raw = searched(s.search("checkout").env("ATLAS_RERANK", "0"));
    assert_eq!(raw.reranked, Some(false));
    let scores: Vec<f64> = raw.hits.iter().map(|h| h.score.unwrap()).collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "without rerank the order is RRF order: {scores:?}"
    );
}

#[test]
fn frozen_search_never_builds_the_index() {
    let s = Sandbox::with_fixture("python");
    s.call("build").arg("--no-search").run().success();
    s.search("checkout")
        .frozen()
        .run()
        .failure(3, "atlas-search-unavailable");
    // Without --frozen the index is built on first use; `atlas build` builds it by default.
    searched(s.search("checkout"));
    let out = searched(s.search("checkout").frozen());
    assert_eq!(out.hits[0].symbol, "checkout");
    let other = Sandbox::with_fixture("python");
    other.build_json();
    let out = searched(other.search("checkout").frozen());
    assert_eq!(out.hits[0].symbol, "checkout");
}

/// Every file under `dir` with its length and modification time, in path order.
fn tree_state(dir: &std::path::Path) -> Vec<(String, u64, std::time::SystemTime)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let entry = entry.unwrap();
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                let path = entry.path().display().to_string();
                out.push((path, meta.len(), meta.modified().unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn the_warm_start_of_a_server_only_reads_and_leaves_no_trace() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let features = s.path().join("features.jsonl");
    let config = atlas::config::Config::from_lookup(&|name| {
        (name == "ATLAS_SEARCH_FEATURES").then(|| features.clone().into_os_string())
    });
    assert!(config.search.features_out.is_some());
    let location = atlas::build::store::Location {
        graph_dir: s.graph(),
        rule: atlas::build::store::GraphDirRule::Flag,
        code_root: s.repo(),
        code_given: true,
    };
    let before = tree_state(&s.repo());
    atlas::query::keep_warm(1 << 20);
    atlas::query::warm_start(&location, &config);
    // Its query is nobody's: no training record, and nothing in the repository or the
    // store changed (a frozen query builds nothing).
    assert!(!features.exists());
    assert_eq!(tree_state(&s.repo()), before);
    // Nothing to warm: no graph yet, and none is made.
    let empty = Sandbox::with_fixture("python");
    let location = atlas::build::store::Location {
        graph_dir: empty.graph(),
        code_root: empty.repo(),
        ..location
    };
    atlas::query::warm_start(&location, &config);
    assert!(!empty.graph().exists());
    // The store still answers.
    let out = searched(s.search("checkout").frozen());
    assert_eq!(out.hits[0].symbol, "checkout");
}

#[test]
fn an_index_of_an_older_version_is_refused_typed_and_rebuilt_by_the_next_build() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let current = std::fs::read_to_string(s.graph().join("CURRENT")).unwrap();
    let meta = s
        .graph()
        .join("search")
        .join(current.trim())
        .join("index.json");
    let text = std::fs::read_to_string(&meta).unwrap();
    let version = format!(
        "\"version\": {}",
        atlas::query::search::index::INDEX_VERSION
    );
    assert!(text.contains(&version), "{text}");
    // Version 5 had no file documents: a reader must not take it for this version.
    std::fs::write(&meta, text.replace(&version, "\"version\": 5")).unwrap();
    s.search("checkout")
        .frozen()
        .run()
        .failure(4, "atlas-search-corrupt");
    s.build_json();
    assert!(std::fs::read_to_string(&meta).unwrap().contains(&version));
    let out = searched(s.search("checkout").frozen());
    assert_eq!(out.hits[0].symbol, "checkout");
}

#[test]
fn free_words_in_context_become_search_hits() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    // A name among free words anchors; the free words add search hits as candidates.
    let out = s
        .context("checkout with a discount rate")
        .profile("symbol")
        .json()
        .run()
        .success()
        .context();
    let anchor = &out.intent.anchors[0];
    assert_eq!(anchor.symbol, "shop/pricing.py::checkout");
    assert_eq!(anchor.anchor_reason, "name");
    let hit = out
        .of_class("search-hit")
        .find(|e| e.symbol.as_deref() == Some("shop/util.py::apply_discount"))
        .expect("a search-hit candidate");
    assert!(
        hit.reasons[0].starts_with("search: bm25 rank"),
        "{:?}",
        hit.reasons
    );
    assert!(out.diagnostic("atlas-context-unused-term").is_none());
}

#[test]
fn a_question_without_a_name_is_anchored_on_its_best_search_hit() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let out = s
        .context("discount rate")
        .profile("symbol")
        .frozen()
        .json()
        .run()
        .success()
        .context();
    let anchor = &out.intent.anchors[0];
    assert_eq!(anchor.symbol, "shop/util.py::apply_discount");
    assert_eq!(anchor.anchor_reason, "search");
    assert!(anchor.arms.iter().any(|a| a == "bm25"), "{:?}", anchor.arms);
    let declaration = &out.evidence[0];
    assert_eq!(declaration.class, "declaration");
    assert_eq!(
        declaration.symbol.as_deref(),
        Some("shop/util.py::apply_discount")
    );
    assert!(
        declaration.reasons[0].starts_with("anchored by search"),
        "{:?}",
        declaration.reasons
    );
    // The anchor is not repeated as a search hit; its callers are there.
    assert!(!out.has("search-hit", "shop/util.py::apply_discount"));
    assert!(out.has("caller", "shop/pricing.py::checkout"));
}

#[test]
fn search_output_snapshot() {
    let s = Sandbox::with_fixture("mixed");
    s.build_json();
    let out = s
        .search("ping handler")
        .top_k(5)
        .json()
        .run()
        .success()
        .json();
    insta::assert_json_snapshot!("search_mixed_ping_handler", out);
}

#[test]
fn expand_returns_hash_verified_source_for_a_search_ref() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let out = searched(s.search("apply discount").top_k(1));
    let reference = out.hits[0].reference.clone();
    let expanded = s.expand(&[&reference]).json().run().success().expand();
    let item = &expanded.items[0];
    assert_eq!(
        item.content,
        "def apply_discount(amount, rate):\n    return amount * (1 - rate)"
    );
    assert!(item.content_complete);
    assert_eq!(item.content_range, [0, item.content.chars().count()]);
    // Lines past the end of the unchanged file: a wrong ref (exit 2), not a stale one.
    let (path_lines, hash) = reference.split_once('@').unwrap();
    let path = path_lines.split_once('#').unwrap().0;
    let past = format!("{path}#L500-L510@{hash}");
    let run = s
        .expand(&[&past])
        .json()
        .run()
        .failure(2, "atlas-invalid-input");
    assert!(run.stderr.contains("has 10 lines"), "{}", run.stderr);
    // A page offset at or past the range's end: a wrong ref too, not an empty page.
    let chars = item.content.chars().count();
    for offset in [chars, 999_999_999] {
        let run = s
            .expand(&[&format!("{reference}~{offset}")])
            .json()
            .run()
            .failure(2, "atlas-invalid-input");
        assert!(
            run.stderr.contains(&format!("hold {chars} characters")),
            "{}",
            run.stderr
        );
    }
    // The file changed: the ref is stale, a typed error.
    s.write(
        "shop/util.py",
        "def apply_discount(amount, rate):\n    return amount\n",
    );
    s.expand(&[&reference])
        .json()
        .run()
        .failure(9, "atlas-expand-stale");
    // More than five refs is a usage error.
    let many = vec![reference.as_str(); 6];
    s.expand(&many)
        .json()
        .run()
        .failure(2, "atlas-invalid-input");
}

#[test]
fn expand_paginates_and_opens_large_classes_as_an_outline() {
    let s = Sandbox::new();
    let methods: String = (0..40)
        .map(|i| format!("    def method_{i}(self, value):\n        \"\"\"Method number {i}, documented at some length to make the class large.\"\"\"\n        return value * {i} + self.offset\n\n"))
        .collect();
    s.write("big.py", format!("class Big:\n    offset = 1\n\n{methods}"));
    s.build_json();
    let hit = searched(s.search("Big").top_k(1));
    let reference = &hit.hits[0].reference;
    let outlined = s.expand(&[reference]).json().run().success().expand();
    let item = &outlined.items[0];
    assert_eq!(
        item.warnings.first().map(String::as_str),
        Some("expand_class_outline")
    );
    let outline = item.outline.as_ref().expect("an outline");
    assert_eq!(outline.len(), 40);
    assert_eq!(outline[0].symbol, "Big.method_0");
    assert!(!item.content_complete);
    // With the outline off, the class is paginated by characters instead.
    let paged = s
        .expand(&[reference])
        .json()
        .env("ATLAS_EXPAND_OUTLINE", "0")
        .run()
        .success()
        .expand();
    let first = &paged.items[0];
    assert_eq!(first.content_range, [0, 6000]);
    let next = first.next_ref.as_deref().expect("a next_ref");
    let second = s.expand(&[next]).json().run().success().expand();
    assert_eq!(second.items[0].content_range[0], 6000);
    assert!(second.items[0].content_complete);
}

#[test]
fn compact_profile_has_fewer_fields_and_the_same_ranking() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let ranked = |profile| s.search("cart item total").top_k(8).profile(profile);
    let full = searched(ranked("full"));
    let compact_run = ranked("compact").json().run().success();
    let compact = compact_run.search();
    assert_eq!(compact.profile, "compact");
    // The compact schema itself: exactly these keys on a hit.
    let raw = compact_run.json();
    let keys: Vec<&str> = raw["hits"][0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["lines", "path", "ref", "symbol"]);
    assert!(
        compact.budget.is_none() && raw.get("budget").is_none(),
        "no budget block when nothing was cut"
    );
    // Same order: compact only drops hits nested in an earlier hit of the same file.
    let order = |v: &SearchOut| -> Vec<String> {
        v.hits
            .iter()
            .map(|h| format!("{}::{}", h.path, h.symbol))
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
    let optimised = || s.search("cart").env("ATLAS_CONTEXT_OPTIMIZATION", "1");
    let default = searched(optimised());
    assert_eq!(default.profile, "compact");
    let forced = searched(optimised().profile("full"));
    assert_eq!(forced.profile, "full");
}

#[test]
fn the_token_ceiling_cuts_whole_results_from_the_tail() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let compact = || {
        s.search("cart item total price")
            .top_k(10)
            .profile("compact")
    };
    let out = searched(compact().max_tokens(150));
    let budget = out.budget.as_ref().expect("a budget block");
    assert_eq!(budget.mode, "tokens");
    assert_eq!(budget.tokenizer, "o200k_base");
    assert_eq!(budget.max_tokens, Some(150));
    assert_eq!(budget.budget, 105, "compact budget is 70% of the ceiling");
    assert!(budget.cut > 0);
    assert!(budget.used <= 105);
    let untouched = searched(compact());
    let kept = out.hits.len();
    assert_eq!(
        out.hits[..],
        untouched.hits[..kept],
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
        .search(report)
        .json()
        .top_k(5)
        .env("ATLAS_SEARCH_ARMS", "graph")
        .run()
        .success()
        .search();
    let symbols = graph_only.symbols();
    // The frame (line 8 of shop/pricing.py is inside `checkout`) outweighs a mention.
    assert_eq!(symbols.first(), Some(&"checkout"), "{symbols:?}");
    assert!(symbols.contains(&"round_money"), "{symbols:?}");
    assert_eq!(graph_only.arms().bm25, 0);
    assert_eq!(graph_only.arms().vector, 0);
    let all = searched(s.search(report).top_k(3));
    let top = &all.hits[0];
    assert_eq!(top.symbol, "checkout");
    assert!(top.found_by("graph"), "{top:?}");
}

/// A Rust path in a text (a crate's name first, as users write it) is a qualified
/// mention: the graph arm reads it by the longest tail the graph holds.
#[test]
fn a_rust_path_in_a_text_feeds_the_graph_arm() {
    let s = Sandbox::with_fixture("rust");
    s.build_json();
    let graph_only = s
        .search("since 0.2, geometry::Square::area returns the wrong value")
        .json()
        .top_k(3)
        .env("ATLAS_SEARCH_ARMS", "graph")
        .run()
        .success()
        .search();
    assert_eq!(graph_only.symbols(), ["Square::area"]);
}

#[test]
fn a_wrong_search_setting_is_a_typed_error() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    for (variable, value) in [
        ("ATLAS_SEARCH_ARMS", "bm25,telepathy"),
        ("ATLAS_SEARCH_ALLOCATION", "folders"),
        ("ATLAS_FUSION", "boosted"),
        ("ATLAS_FILE_ORDER", "alphabetical"),
    ] {
        let run = s
            .search("checkout")
            .json()
            .env(variable, value)
            .run()
            .failure(2, "atlas-invalid-input");
        assert_eq!(run.error().code, "atlas-invalid-input");
        let wrong = value.rsplit(',').next().unwrap();
        assert!(run.stderr.contains(wrong), "{variable}: {}", run.stderr);
    }
}

#[test]
fn observability_records_sizes_never_queries_paths_or_code() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let observed = "ATLAS_OBSERVABILITY";
    let secret_query = "zanzibar apply_discount";
    let out = s
        .search(secret_query)
        .json()
        .env(observed, "1")
        .run()
        .success()
        .search();
    let reference = &out.hits[0].reference;
    s.expand(&[reference])
        .json()
        .env(observed, "1")
        .run()
        .success();
    s.context("checkout")
        .profile("symbol")
        .json()
        .env(observed, "1")
        .run()
        .success();
    // An error is observed too, by its code.
    s.context("no_such_symbol_anywhere")
        .profile("symbol")
        .json()
        .env(observed, "1")
        .run()
        .failure(7, "atlas-context-no-match");
    // Without the variable nothing is recorded.
    s.search("checkout").json().run().success();

    let log = std::fs::read_to_string(s.graph().join("observability/events.jsonl")).unwrap();
    let events: Vec<common::ObservedEvent> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let tools: Vec<&str> = events.iter().map(|e| e.tool.as_str()).collect();
    assert_eq!(tools, ["search", "expand", "context", "context"]);
    assert_eq!(events[0].outcome, "ok");
    assert_ne!(events[3].outcome, "ok");
    for event in &events {
        assert!(event.chars > 0, "{event:?}");
        assert!(event.bytes >= event.chars, "{event:?}");
        assert!(event.tokens.is_some_and(|t| t > 0), "{event:?}");
        assert_eq!(event.tokenizer.name, "o200k_base");
        assert_eq!(event.tokenizer.sha256.len(), 64);
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
    let status = s.call("status").json().run().success().json();
    assert_eq!(status["observability"]["events"], 4);
    assert_eq!(status["observability"]["dropped_events"], 0);
}

#[test]
fn markdown_sections_are_searchable_and_expandable_but_never_context_evidence() {
    let s = Sandbox::with_fixture("python");
    s.write(
        "docs/GUIDE.md",
        "# Shop guide\n\nOverview.\n\n## Refund policy\n\nRefunds are credited within quarantine windows.\n\n```python\n# not a heading\n```\n",
    );
    s.build_json();
    let out = searched(s.search("quarantine windows refund"));
    let is_section = |h: &&common::Hit| h.kind.as_deref() == Some("section");
    let hit = out
        .hits
        .iter()
        .find(is_section)
        .unwrap_or_else(|| panic!("a section hit: {out:?}"));
    assert_eq!(hit.path, "docs/GUIDE.md");
    assert_eq!(hit.symbol, "Shop guide > Refund policy");
    assert_eq!(hit.lines, [5, 11]);
    let expanded = s.expand(&[&hit.reference]).json().run().success().expand();
    let content = &expanded.items[0].content;
    assert!(content.starts_with("## Refund policy"), "{content}");

    // Sections are not graph evidence: free words in `context` keep to symbols. The
    // question names `checkout`; its words go to search, whose hits handed to the context
    // compiler include the section (the same search: the whole text, a pool of 50, frozen).
    let question = "checkout quarantine windows refund";
    // The fused order without file allocation, whose `file` arm would lift every code
    // symbol of `shop/pricing.py` above the section: what is checked here is how context
    // treats a section between symbols.
    let pool = searched(
        s.search(question)
            .top_k(50)
            .frozen()
            .env("ATLAS_SEARCH_ALLOCATION", "none"),
    );
    let rank_of = |wanted: &str| {
        pool.hits
            .iter()
            .position(|h| format!("{}::{}", h.path, h.symbol) == wanted)
    };
    let section_rank = pool
        .hits
        .iter()
        .position(|h| h.reference == hit.reference)
        .unwrap_or_else(|| panic!("the section is in the pool: {pool:?}"));
    let run = s
        .context(question)
        .profile("symbol")
        .frozen()
        .env("ATLAS_SEARCH_ALLOCATION", "none")
        .json()
        .run()
        .success();
    let context = run.context();
    assert_eq!(
        context.intent.anchors[0].symbol, "shop/pricing.py::checkout",
        "{}",
        run.stdout
    );
    assert!(
        context.diagnostic("atlas-context-unused-term").is_none(),
        "the free words were searched: {}",
        run.stdout
    );
    // Symbol hits the pool ranks below the section do become evidence: the section is not
    // left out for its rank or score ...
    let admitted: Vec<&str> = context
        .of_class("search-hit")
        .filter_map(|e| e.symbol.as_deref())
        .collect();
    assert!(
        admitted
            .iter()
            .any(|symbol| rank_of(symbol).is_some_and(|rank| rank > section_rank)),
        "{admitted:?} vs the section at {section_rank} in {pool:?}"
    );
    // ... the section never: not as evidence, not as an omitted candidate, nowhere.
    for evidence in &context.evidence {
        assert_ne!(
            evidence.path.as_deref(),
            Some("docs/GUIDE.md"),
            "{evidence:?}"
        );
        assert!(
            !evidence
                .symbol
                .as_deref()
                .is_some_and(|s| s.contains("Refund policy") || s.starts_with("docs/")),
            "{evidence:?}"
        );
    }
    for omission in &context.omissions {
        assert!(
            !omission
                .top
                .symbol
                .as_deref()
                .is_some_and(|s| s.contains("Refund policy") || s.starts_with("docs/")),
            "{omission:?}"
        );
    }
    assert!(
        !run.stdout.contains("Refund policy") && !run.stdout.contains("GUIDE.md"),
        "{}",
        run.stdout
    );
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
    let meta = s.index_meta();
    assert_eq!(meta.commits, 2, "{meta:?}");
    assert_eq!(meta.head.as_deref().map(str::len), Some(40), "{meta:?}");

    // Only the commit message says "xylophone": the pool is empty, history fills it.
    let out = searched(s.search("xylophone").top_k(3));
    let commit = out
        .hits
        .iter()
        .find(|h| h.kind.as_deref() == Some("commit"))
        .unwrap_or_else(|| panic!("a commit hit: {out:?}"));
    assert_eq!(commit.path, "shop/util.py");
    assert_eq!(
        commit.commit.as_ref().map(|c| c.subject.as_str()),
        Some("Fix xylophone rounding regression")
    );
    assert_eq!(commit.match_arms, ["history"]);
    assert!(commit.symbol.starts_with("commit:"), "{}", commit.symbol);
    // A full pool leaves no slot for history.
    let full = searched(s.search("rounding money").top_k(1));
    assert_eq!(full.hits.len(), 1);
    assert_ne!(full.hits[0].kind.as_deref(), Some("commit"));
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
    let meta = s.index_meta();
    assert_eq!(meta.mode, "incremental", "{meta:?}");
    assert_eq!(meta.base.as_deref(), Some(first.as_str()));
    assert_eq!(meta.files_indexed, 2, "{meta:?}");
    assert!(meta.embedded < meta.symbols / 2, "{meta:?}");
    // Every recorded artifact matches its bytes, those shared with the base by hard
    // link (which keep the base's entries) as well as those written anew.
    let dir = s.graph().join("search").join(&second);
    for (name, artifact) in &meta.artifacts {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        assert_eq!(bytes.len() as u64, artifact.bytes, "{name}");
        assert_eq!(
            blake3::hash(&bytes).to_hex().to_string(),
            artifact.blake3,
            "{name}"
        );
    }
    // The base's tantivy segments are shared, not copied.
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let base = s.graph().join("search").join(&first);
        let inode = |p: std::path::PathBuf| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
        let shared = meta
            .artifacts
            .keys()
            .filter(|name| name.starts_with("tantivy/"))
            .filter(|name| inode(base.join(name)).is_some_and(|i| Some(i) == inode(dir.join(name))))
            .count();
        assert!(shared > 0, "no segment shared with {}", base.display());
    }

    // The same tree indexed from scratch answers identically.
    let fresh = Sandbox::new();
    common::copy_dir(&s.repo(), &fresh.repo());
    std::fs::remove_dir_all(fresh.graph()).unwrap();
    fresh.build_json();
    assert_eq!(fresh.index_meta().mode, "full");
    for query in [
        "marmalade tax",
        "cart total",
        "apply discount",
        "notes marmalade",
    ] {
        // Whole hits, every field, compared as printed.
        let hits =
            |s: &Sandbox| s.search(query).top_k(8).json().run().success().json()["hits"].clone();
        assert_eq!(hits(&s), hits(&fresh), "{query}");
    }
    let top = searched(s.search("marmalade_tax"));
    assert_eq!(top.hits[0].symbol, "marmalade_tax");
}

#[test]
fn updates_share_vector_packs_fold_small_ones_and_answer_as_a_full_build() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let packs = |s: &Sandbox| -> Vec<String> {
        let meta = s.index_meta();
        let dir = s.graph().join("search").join(s.current());
        for (name, artifact) in &meta.artifacts {
            let bytes = std::fs::read(dir.join(name)).unwrap();
            assert_eq!(
                blake3::hash(&bytes).to_hex().to_string(),
                artifact.blake3,
                "{name}"
            );
        }
        meta.artifacts
            .keys()
            .filter(|name| name.ends_with(".pack"))
            .cloned()
            .collect()
    };
    let first = packs(&s);
    assert_eq!(first.len(), 1, "a full build writes one pack");
    let mut most = 0;
    // Each update adds a file: a new pack each time, until they are folded.
    for n in 0..12 {
        s.write(
            &format!("shop/extra_{n}.py"),
            format!("def extra_quince_{n}(amount):\n    \"\"\"Quince {n}.\"\"\"\n    return amount + {n}\n"),
        );
        s.build_json();
        let meta = s.index_meta();
        assert_eq!(meta.mode, "incremental", "{n}: {meta:?}");
        let now = packs(&s);
        assert!(now.len() <= 8, "{n}: {now:?}");
        // The first build's pack, the largest, stays shared throughout.
        assert!(now.contains(&first[0]), "{n}: {now:?}");
        most = most.max(now.len());
    }
    assert_eq!(most, 8, "small packs accumulate up to the limit, then fold");

    let fresh = Sandbox::new();
    common::copy_dir(&s.repo(), &fresh.repo());
    std::fs::remove_dir_all(fresh.graph()).unwrap();
    fresh.build_json();
    // The vector arm, which the packs serve, answers as from a full build. (BM25 is not
    // compared after twelve updates: tantivy counts deleted documents in its statistics
    // until segments merge, so near-tied scores can reorder.)
    for query in [
        "quince amount",
        "extra quince 7",
        "cart total",
        "apply discount",
    ] {
        let hits = |s: &Sandbox| {
            s.search(query)
                .top_k(8)
                .json()
                .env("ATLAS_SEARCH_ARMS", "vector")
                .run()
                .success()
                .json()["hits"]
                .clone()
        };
        assert_eq!(hits(&s), hits(&fresh), "{query}");
    }
}

#[test]
fn a_path_in_the_text_names_its_file_to_the_graph_arm() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let graph_arm = |text: &str| {
        let run = s
            .search(text)
            .json()
            .env("ATLAS_SEARCH_ARMS", "graph")
            .run()
            .success();
        (run.search(), run.stdout)
    };
    let (out, printed) = graph_arm(
        "Totals look wrong, I think the culprit lives in /home/me/src/shop/models.py (or so).",
    );
    assert!(!out.hits.is_empty(), "{printed}");
    assert!(
        out.hits.iter().all(|h| h.path == "shop/models.py"),
        "{printed}"
    );
    // A partial path that fits several files names none of them.
    s.write("other/models.py", "def unrelated():\n    pass\n");
    s.build_json();
    let (ambiguous, printed) = graph_arm("see models.py and x/models.py");
    assert_eq!(ambiguous.hits.len(), 0, "{printed}");
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
    let out = searched(s.search(prose).top_k(50));
    assert!(out.arms().vector > 0, "{out:?}");
    // Every vector match is a lexical candidate: on prose the arm reorders, never adds.
    for hit in &out.hits {
        if hit.found_by("vector") {
            assert!(hit.found_by("bm25") || hit.found_by("graph"), "{hit:?}");
        }
    }
    // Alone, the vector arm searches everything.
    let only = |arm: &str| {
        s.search(prose)
            .json()
            .top_k(50)
            .env("ATLAS_SEARCH_ARMS", arm)
            .run()
            .success()
            .search()
    };
    let alone = only("vector");
    let bm25_only = only("bm25");
    let lexical: Vec<&str> = bm25_only
        .hits
        .iter()
        .map(|h| h.reference.as_str())
        .collect();
    assert!(
        alone
            .hits
            .iter()
            .any(|h| !lexical.contains(&h.reference.as_str())),
        "alone, the vector arm finds what BM25 did not: {alone:?}"
    );
}

#[test]
fn one_process_runs_searches_with_different_configurations() {
    // The MCP server and daemon answer each request with its own configuration: the arms
    // are a setting passed down, not a process-wide variable.
    use atlas::config::{Arms, Config, SearchConfig};
    use atlas::query::search::{SearchIndex, embed::Embedder};
    let s = Sandbox::with_fixture("python");
    s.call("build").run().success();
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
            false,
            &config,
        )
        .unwrap()
    };
    let lexical = query(Arms {
        bm25: true,
        vector: false,
        graph: false,
        propagate: false,
    });
    let semantic = query(Arms {
        bm25: false,
        vector: true,
        graph: false,
        propagate: false,
    });
    assert!(!lexical.hits.is_empty() && !semantic.hits.is_empty());
    // BM25 alone (split fusion's file arm, BM25 within the first files, may find the
    // same symbols again); no vector or graph arm.
    for hit in lexical.hits.iter().filter(|h| h.kind != "commit") {
        assert!(
            hit.match_arms.first() == Some(&"bm25")
                && hit.match_arms.iter().all(|a| ["bm25", "file"].contains(a)),
            "{hit:?}"
        );
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
        false,
        &broken,
    )
    .unwrap_err();
    assert_eq!(err.code(), "atlas-invalid-input");
}

#[test]
fn evidence_propagates_from_a_named_function_to_a_callee_that_matches_the_text() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    // `checkout` is named as code; "discount" matches `apply_discount`, its callee.
    let query = "`checkout` gives the wrong discount";
    let search = |arms: Option<&str>| {
        let mut env = vec![];
        if let Some(arms) = arms {
            env.push(("ATLAS_SEARCH_ARMS", arms));
        }
        s.atlas_env(
            &["search", query, "--top-k", "10", "--format", "json"],
            &env,
        )
        .success()
        .json()
    };
    let hit = |out: &serde_json::Value, symbol: &str| {
        out["hits"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["symbol"] == symbol)
            .cloned()
    };
    let on = search(None);
    let callee = hit(&on, "apply_discount").expect("the callee is a hit");
    assert!(
        callee["match_arms"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("propagate")),
        "{callee}"
    );
    assert_eq!(
        callee["via"], "callee of `checkout` named in the query",
        "{callee}"
    );
    assert!(
        on["arms"]["propagate"].as_u64().unwrap() >= 1,
        "{}",
        on["arms"]
    );
    // `round_money` is a callee too, but the text does not match it: nothing flows.
    if let Some(other) = hit(&on, "round_money") {
        assert!(other.get("via").is_none(), "{other}");
    }
    // Without the arm: no propagation, no reason.
    let off = search(Some("bm25,vector,graph"));
    assert_eq!(off["arms"]["propagate"], 0);
    if let Some(callee) = hit(&off, "apply_discount") {
        assert!(callee.get("via").is_none(), "{callee}");
    }
}

#[test]
fn evidence_never_flows_from_a_name_many_definitions_share() {
    let s = Sandbox::with_fixture("python");
    // Four definitions of `checkout`: which one the text means is unclear.
    for i in 0..3 {
        s.write(
            &format!("other/shop{i}.py"),
            "def checkout(cart):\n    return cart\n",
        );
    }
    s.build_json();
    let out = s
        .atlas(&[
            "search",
            "`checkout` gives the wrong discount",
            "--top-k",
            "10",
            "--format",
            "json",
        ])
        .success()
        .json();
    // The same query propagates from the one `checkout` (the test above); here nothing
    // flows from any of the four.
    let hits = out["hits"].as_array().unwrap();
    assert!(hits.iter().any(|h| h["symbol"] == "checkout"), "{out}");
    for hit in hits {
        let via = hit["via"].as_str().unwrap_or("");
        assert!(!via.contains("of `checkout`"), "{hit}");
    }
}

/// A tree where one file holds the behaviour a message describes across several
/// symbols, and eighty others (`ledger/invoice_N.py`) match its words better than that
/// file's helper `_scale` (whose body alone says `RATE`), which the global BM25 pool of
/// 50 therefore misses.
fn allocation_tree() -> Sandbox {
    let s = Sandbox::new();
    s.write(
        "billing/invoice.py",
        "class Invoice:\n    \"\"\"An invoice of line items with a tax rate.\"\"\"\n\n    def total(self):\n        return sum(self.lines) * (1 + self.tax_rate)\n\n    def add_line(self, amount):\n        self.lines.append(amount)\n\n    def rounding(self, value):\n        return round(value, 2)\n\n\ndef render_invoice(invoice):\n    return f\"total: {invoice.total()}\"\n\n\ndef _scale(value):\n    return value * RATE\n",
    );
    for i in 1..=80 {
        s.write(
            &format!("ledger/invoice_{i}.py"),
            format!("def total_tax_rate_{i}(value):\n    \"\"\"The total with the tax rate set.\"\"\"\n    return value\n"),
        );
    }
    s.write(
        "sync/mutex.py",
        "def lock_total(lock):\n    return lock.count\n",
    );
    s.write(
        "io/stream.py",
        "def stream_total(stream):\n    return stream.count\n",
    );
    s
}

#[test]
fn file_allocation_brings_the_best_files_symbols_and_groups_them_by_file() {
    let s = allocation_tree();
    s.build_json();
    let query = "invoice total is wrong when a tax rate is set";
    let allocated = s
        .search(query)
        .top_k(8)
        .arg("--group-by")
        .arg("file")
        .env("ATLAS_SEARCH_ALLOCATION", "file")
        .json()
        .run()
        .success()
        .json();
    let hits = allocated["hits"].as_array().unwrap();
    let groups = allocated["groups"]
        .as_array()
        .expect("--group-by file answers groups");
    // The groups partition the hits, in the order of each file's first hit.
    let mut positions: Vec<u64> = groups
        .iter()
        .flat_map(|g| {
            g["hits"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p.as_u64().unwrap())
        })
        .collect();
    positions.sort_unstable();
    assert_eq!(positions, (0..hits.len() as u64).collect::<Vec<_>>());
    for group in groups {
        for p in group["hits"].as_array().unwrap() {
            assert_eq!(hits[p.as_u64().unwrap() as usize]["path"], group["path"]);
        }
    }
    let firsts: Vec<u64> = groups
        .iter()
        .map(|g| g["hits"][0].as_u64().unwrap())
        .collect();
    assert!(firsts.windows(2).all(|w| w[0] < w[1]), "{firsts:?}");
    // The best file comes first and carries its evidence.
    assert_eq!(groups[0]["path"], "billing/invoice.py");
    assert!(groups[0]["evidence"].as_f64().unwrap() > 0.0);
    // BM25 within the best file adds the symbol the global pool missed (`file` arm).
    let out: common::SearchOut = serde_json::from_value(allocated.clone()).unwrap();
    assert_eq!(out.arms().file, 1, "{allocated}");
    let long = searched(
        s.search(query)
            .top_k(100)
            .env("ATLAS_SEARCH_ALLOCATION", "file"),
    );
    let scale = long.hits.iter().find(|h| h.symbol == "_scale");
    assert_eq!(
        scale.map(|h| h.match_arms.clone()),
        Some(vec!["file".to_string()]),
        "{:?}",
        long.hits
    );
    // A class keeps its methods right behind it.
    let symbols = out.symbols();
    if let Some(class) = symbols.iter().position(|s| *s == "Invoice") {
        let members: Vec<usize> = symbols
            .iter()
            .enumerate()
            .filter(|(_, s)| s.starts_with("Invoice."))
            .map(|(i, _)| i)
            .filter(|i| *i > class)
            .collect();
        let expected: Vec<usize> = (class + 1..class + 1 + members.len()).collect();
        assert_eq!(members, expected, "{symbols:?}");
    }
    // RRF without allocation: no file arm, the fused order.
    let plain = searched(s.search(query).top_k(8).env("ATLAS_FUSION", "rrf"));
    assert_eq!(plain.arms().file, 0);
    assert!(plain.hits.iter().all(|h| !h.found_by("file")));
    let plain_long = searched(s.search(query).top_k(100).env("ATLAS_FUSION", "rrf"));
    assert!(!plain_long.symbols().contains(&"_scale"));
    // Split fusion (the default) runs the file arm too, over the first files RRF shows;
    // what it adds carries no RRF score of its own.
    let split_long = searched(s.search(query).top_k(100));
    assert_eq!(split_long.arms().file, 1);
    let scale = split_long.hits.iter().find(|h| h.symbol == "_scale");
    assert_eq!(
        scale.map(|h| (h.match_arms.clone(), h.score)),
        Some((vec!["file".to_string()], Some(0.0))),
        "{:?}",
        split_long.hits
    );
    // Text output groups too.
    let text = s
        .search(query)
        .top_k(8)
        .arg("--group-by")
        .arg("file")
        .text()
        .run()
        .success();
    assert!(
        text.stdout.starts_with("billing/invoice.py (evidence "),
        "{}",
        text.stdout
    );
}

#[test]
fn the_scope_a_commit_message_names_weighs_its_directory_higher() {
    let s = allocation_tree();
    s.build_json();
    // Two files match `total` alike; the scope names one of them.
    let rank = |query: &str, path: &str| {
        searched(s.search(query).top_k(10))
            .hits
            .iter()
            .position(|h| h.path == path)
            .unwrap_or(usize::MAX)
    };
    assert!(
        rank("sync: the total is off by one", "sync/mutex.py")
            < rank("sync: the total is off by one", "io/stream.py")
    );
    assert!(
        rank("io: the total is off by one", "io/stream.py")
            < rank("io: the total is off by one", "sync/mutex.py")
    );
}

#[test]
fn ranked_output_grouped_by_file_snapshot() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let out = s
        .search("the order total is wrong after a discount")
        .top_k(8)
        .arg("--group-by")
        .arg("file")
        .env("ATLAS_SEARCH_ALLOCATION", "file")
        .json()
        .run()
        .success()
        .json();
    insta::assert_json_snapshot!("search_python_grouped_by_file", out);
}

#[test]
fn the_learned_scorer_ranks_and_its_features_are_written_for_training() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let features = s.path().join("features.jsonl");
    let query = "the order total is wrong after a discount";
    let out = searched(
        s.search(query)
            .env("ATLAS_FUSION", "learned")
            .env("ATLAS_SEARCH_FEATURES", features.to_str().unwrap()),
    );
    assert!(!out.hits.is_empty());
    let line = std::fs::read_to_string(&features).unwrap();
    assert_eq!(line.lines().count(), 1, "one line per search");
    let pool: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
    let names = pool["features"].as_array().unwrap();
    assert_eq!(names[0], "rrf");
    let candidates = pool["candidates"].as_array().unwrap();
    assert!(
        candidates.len()
            >= out
                .hits
                .iter()
                .filter(|h| h.kind.as_deref() != Some("commit"))
                .count()
    );
    for c in candidates {
        let x = c["x"].as_array().unwrap();
        assert_eq!(x.len(), names.len(), "{c}");
        assert!(
            x.iter().all(|v| v.as_f64().is_some_and(f64::is_finite)),
            "{c}"
        );
    }
    // Every hit of the learned order is a candidate of the pool the features describe.
    for hit in out
        .hits
        .iter()
        .filter(|h| h.kind.as_deref() != Some("commit"))
    {
        assert!(
            candidates
                .iter()
                .any(|c| c["path"] == hit.path.as_str() && c["symbol"] == hit.symbol.as_str()),
            "{hit:?}"
        );
    }
}

#[test]
fn a_partial_identifier_matches_the_longer_words_it_starts() {
    // A short query's word is also the prefix of a name's words (`discou` → `discount`),
    // and only of longer words: the term itself matches as a term, and a word it does
    // not start matches nothing.
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let bm25 = |query: &str| {
        s.search(query)
            .json()
            .top_k(5)
            .env("ATLAS_SEARCH_ARMS", "bm25")
            .run()
            .success()
            .search()
    };
    let partial = bm25("discou");
    assert_eq!(
        partial.symbols().first(),
        Some(&"apply_discount"),
        "{:?}",
        partial.symbols()
    );
    assert!(partial.hits[0].found_by("bm25"));
    let whole = bm25("discount");
    assert_eq!(
        whole.symbols().first(),
        Some(&"apply_discount"),
        "{:?}",
        whole.symbols()
    );
    let beyond = bm25("discountz");
    assert!(
        !beyond.symbols().contains(&"apply_discount"),
        "{:?}",
        beyond.symbols()
    );
    // A word sorted right after the real one's prefix is not its prefix either.
    let next = bm25("discouo");
    assert!(
        !next.symbols().contains(&"apply_discount"),
        "{:?}",
        next.symbols()
    );
}

/// Split fusion shows files where RRF shows them and orders each file's symbols by the
/// learned scorer, after the first files RRF shows brought their own symbols (the `file`
/// arm): over the whole pool (no cut), the first appearance of each file follows the RRF
/// run, the pool is RRF's plus `file`-arm finds, and within a file the learned scores of
/// the dumped features never rise.
#[test]
fn split_fusion_keeps_rrf_file_order_and_the_learned_order_within_files() {
    use atlas::query::search::learned;
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let query = "the order total is wrong after a discount and the shipping fee";
    let features = s.path().join("features.jsonl");
    let run = |fusion: &str| -> Vec<common::Hit> {
        searched(
            s.search(query)
                .top_k(500)
                .env("ATLAS_FUSION", fusion)
                // RRF's file order alone: the evidence-weighed order has a test of its own.
                .env("ATLAS_FILE_ORDER", "rrf")
                .env("ATLAS_SEARCH_FEATURES", features.to_str().unwrap()),
        )
        .hits
        .into_iter()
        .filter(|h| h.kind.as_deref() != Some("commit"))
        .collect()
    };
    let rrf = run("rrf");
    std::fs::remove_file(&features).unwrap();
    let split = run("split");
    let files = |hits: &[common::Hit]| -> Vec<String> {
        let mut seen: Vec<String> = Vec::new();
        for hit in hits {
            if !seen.contains(&hit.path) {
                seen.push(hit.path.clone());
            }
        }
        seen
    };
    assert!(files(&rrf).len() >= 3, "{rrf:?}");
    assert_eq!(files(&split), files(&rrf));
    let key = |h: &common::Hit| (h.path.clone(), h.symbol.clone());
    for hit in &rrf {
        assert!(split.iter().any(|h| key(h) == key(hit)), "{hit:?} kept");
    }
    let added: Vec<&common::Hit> = split
        .iter()
        .filter(|h| !rrf.iter().any(|r| key(r) == key(h)))
        .collect();
    // In a fixture this small BM25's own pool already holds every match, so the `file`
    // arm re-finds symbols rather than adding them; it ran all the same.
    assert!(split.iter().any(|h| h.found_by("file")), "{split:?}");
    assert!(!rrf.iter().any(|h| h.found_by("file")), "{rrf:?}");
    for hit in &added {
        assert_eq!(hit.match_arms, ["file"], "{hit:?}");
    }
    // The learned score of each symbol, from the features split fusion dumped.
    let line = std::fs::read_to_string(&features).unwrap();
    let pool: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
    let scores: std::collections::HashMap<(String, String), f64> = pool["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let x: Vec<f64> = serde_json::from_value(c["x"].clone()).unwrap();
            let x: [f64; learned::FEATURES.len()] = x.try_into().unwrap();
            let name = |k: &str| c[k].as_str().unwrap().to_string();
            ((name("path"), name("symbol")), learned::score(&x))
        })
        .collect();
    for file in files(&split) {
        let within: Vec<f64> = split
            .iter()
            .filter(|h| h.path == file && h.kind.as_deref() != Some("section"))
            .map(|h| scores[&key(h)])
            .collect();
        assert!(
            within.windows(2).all(|w| w[0] >= w[1]),
            "{file}: {within:?}"
        );
    }
    assert_ne!(
        split.iter().map(key).collect::<Vec<_>>(),
        rrf.iter().map(key).collect::<Vec<_>>(),
        "the fixture's pool must exercise a reordering"
    );
}

/// A search's code hits (commits left out) as `(path, symbol)`.
fn code_hits(out: SearchOut) -> Vec<(String, String)> {
    out.hits
        .into_iter()
        .filter(|h| h.kind.as_deref() != Some("commit"))
        .map(|h| (h.path, h.symbol))
        .collect()
}

/// Asserts that two rankings hold the same hits, each file's in the same order: they
/// differ at most in how files interleave.
fn assert_same_hits_and_order_within_files(a: &[(String, String)], b: &[(String, String)]) {
    let sorted = |hits: &[(String, String)]| {
        let mut hits = hits.to_vec();
        hits.sort();
        hits
    };
    assert_eq!(sorted(a), sorted(b));
    let within = |hits: &[(String, String)], file: &str| -> Vec<String> {
        hits.iter()
            .filter(|(path, _)| path == file)
            .map(|(_, symbol)| symbol.clone())
            .collect()
    };
    for (path, _) in a {
        assert_eq!(within(a, path), within(b, path), "{path}");
    }
}

/// `split-files` reorders files by the file scorer and nothing else: the same pool as
/// `split`, each file's symbols in the same order.
#[test]
fn split_files_moves_whole_files_and_keeps_each_files_order() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let query = "the order total is wrong after a discount and the shipping fee";
    let run = |fusion: &str| {
        code_hits(searched(
            s.search(query).top_k(500).env("ATLAS_FUSION", fusion),
        ))
    };
    let (split, files) = (run("split"), run("split-files"));
    assert!(split.len() >= 5, "{split:?}");
    assert_same_hits_and_order_within_files(&split, &files);
}

/// Split fusion weighs RRF's file order with each file's BM25 evidence (its best symbols'
/// scores among the best 200 symbol documents, `ATLAS_FILE_ORDER=fused`, the default). A
/// file the query names leads RRF's order; three files whose many symbols match the
/// text lead by evidence, and the first of them moves ahead. `rrf` keeps RRF's order, and
/// either way the hits and each file's own order are the same.
#[test]
fn split_fusion_weighs_rrfs_file_order_with_the_files_bm25_evidence() {
    let s = Sandbox::new();
    s.write(
        "net/tls.py",
        "def load_tls(settings):\n    return settings.tls\n",
    );
    for dir in ["auth", "store", "wire"] {
        let functions: Vec<String> = (0..6)
            .map(|i| {
                format!(
                    "def verify_certificate_bundle_path_{i}(session):\n    \"\"\"The session keeps the default certificate bundle path; the verify flag ignores it.\"\"\"\n    return session.bundle_path, session.verify\n"
                )
            })
            .collect();
        s.write(&format!("{dir}/handlers.py"), functions.join("\n\n"));
    }
    write_fillers(&s);
    s.build_json();
    let run = |order: &str| in_file_order(&s, order, 60);
    // `symbols`: RRF's order weighed with the symbols' evidence alone (`fused` adds the
    // files' whole text, `split_fusion_weighs_its_file_order_with_the_files_whole_text`).
    let (fused, rrf) = (run("symbols"), run("rrf"));
    assert_eq!(files_of(&rrf)[0], "net/tls.py", "{rrf:?}");
    assert!(files_of(&fused)[0].ends_with("/handlers.py"), "{fused:?}");
    assert_eq!(files_of(&fused)[1], "net/tls.py", "{fused:?}");
    assert_same_hits_and_order_within_files(&rrf, &fused);
}

/// Unrelated files, so that the matching words of the file-order tests are rare enough
/// to be evidence.
fn write_fillers(s: &Sandbox) {
    for i in 1..=100 {
        s.write(
            &format!("misc/filler_{i}.py"),
            format!("def filler_{i}(x):\n    return x + {i}\n"),
        );
    }
}

/// The file-order tests' query, searched without the vector arm (so that the orders
/// follow from the other two arms alone) under `ATLAS_FILE_ORDER=order`.
fn in_file_order(s: &Sandbox, order: &str, top_k: usize) -> Vec<(String, String)> {
    let query = "load_tls() ignores the certificate bundle path and the verify flag, the session keeps the default";
    code_hits(searched(
        s.search(query)
            .top_k(top_k)
            .env("ATLAS_SEARCH_ARMS", "bm25,graph")
            .env("ATLAS_FILE_ORDER", order),
    ))
}

/// Files in first-appearance order.
fn files_of(hits: &[(String, String)]) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for (path, _) in hits {
        if !seen.contains(path) {
            seen.push(path.clone());
        }
    }
    seen
}

/// A file named in the query, and a file whose module-level comments hold the query's
/// words (`in_file_order`'s) many times, among fillers; built.
fn whole_text_sandbox() -> Sandbox {
    let s = Sandbox::new();
    // Named in the query: first in RRF's order, and first by its symbols' evidence.
    s.write(
        "net/tls.py",
        "def load_tls(settings):\n    return settings.tls\n",
    );
    // Its comments, at module level, hold the query's words many times: no symbol's
    // document holds them, the file's does.
    let comments = "# The certificate bundle path and the verify flag: the session keeps the default\n\
                    # certificate bundle path unless the verify flag is set; a bundle path ignores the flag.\n";
    s.write(
        "config/defaults.py",
        format!(
            "{}\n\ndef default_bundle_path():\n    return None\n\n\ndef default_verify_flag():\n    return None\n\n\ndef default_session():\n    return None\n",
            comments.repeat(4)
        ),
    );
    s.write(
        "wire/session.py",
        "# A session keeps the default verify flag and bundle path.\n\ndef open_session():\n    return None\n",
    );
    write_fillers(&s);
    s.build_json();
    s
}

#[test]
fn split_fusion_weighs_its_file_order_with_the_files_whole_text() {
    let s = whole_text_sandbox();
    let run = |order: &str| in_file_order(&s, order, 20);
    let (fused, symbols) = (run("fused"), run("symbols"));
    assert_eq!(files_of(&symbols)[0], "net/tls.py", "{symbols:?}");
    assert_eq!(
        files_of(&fused)[..2],
        ["config/defaults.py", "net/tls.py"],
        "{fused:?}"
    );
    assert_same_hits_and_order_within_files(&symbols, &fused);
}

#[test]
fn on_prose_the_learned_file_scorer_orders_the_files_by_default() {
    let s = whole_text_sandbox();
    // A long function that checks the verify flag, among many small ones: RRF's order and
    // the evidence put it below the file the question names; the file scorer, which also
    // weighs a file's size and how many of its symbols match, lifts it above.
    let mut verify = String::from(
        "def check_verify_flag(settings):\n    \"\"\"Whether the verify flag is set.\"\"\"\n",
    );
    for i in 1..=60 {
        verify.push_str(&format!("    step_{i} = settings.get('k{i}')\n"));
    }
    verify.push_str("    return settings.verify\n\n");
    for i in 1..=40 {
        verify.push_str(&format!(
            "\ndef helper_{i}(a, b):\n    total = a + b\n    total = total * {i}\n    return total\n\n"
        ));
    }
    s.write("wire/verify.py", verify);
    s.build_json();
    let files = |query: &str, vars: &[(&str, &str)]| -> Vec<String> {
        let mut call = s
            .search(query)
            .top_k(20)
            .env("ATLAS_SEARCH_ARMS", "bm25,graph");
        for (key, value) in vars {
            call = call.env(key, value);
        }
        files_of(&code_hits(searched(call)))
    };
    // More than 32 words: prose, as an issue's text.
    let prose = "load_tls() ignores the certificate bundle path and the verify flag, and the session \
                 keeps the default; I expected the bundle path from the settings to win over the \
                 default session, as the documentation of the verify flag says it should";
    assert!(prose.split_whitespace().count() > 32);
    let default = files(prose, &[]);
    let scorer = files(prose, &[("ATLAS_FUSION", "split-files")]);
    let fused = files(prose, &[("ATLAS_FILE_ORDER", "fused")]);
    assert_eq!(
        default[..3],
        ["config/defaults.py", "wire/verify.py", "net/tls.py"],
        "{default:?}"
    );
    assert_eq!(default, scorer);
    assert_eq!(
        fused[..3],
        ["config/defaults.py", "net/tls.py", "wire/verify.py"],
        "{fused:?}"
    );
    // A short query keeps the fused order.
    let short = "load_tls() ignores the certificate bundle path";
    assert_eq!(
        files(short, &[]),
        files(short, &[("ATLAS_FILE_ORDER", "fused")])
    );
}

#[test]
fn the_learned_scorer_sees_where_each_file_stands_in_the_order_that_merges_the_results() {
    let s = whole_text_sandbox();
    // Each file's (file_order_rr, file_text_rr), the same for all of its candidates.
    let standing = |order: &str| -> std::collections::BTreeMap<String, (f64, f64)> {
        let features = s.path().join(format!("features-{order}.jsonl"));
        let query = "load_tls() ignores the certificate bundle path and the verify flag, the session keeps the default";
        searched(
            s.search(query)
                .top_k(20)
                .env("ATLAS_SEARCH_ARMS", "bm25,graph")
                .env("ATLAS_FILE_ORDER", order)
                .env("ATLAS_SEARCH_FEATURES", features.to_str().unwrap()),
        );
        let line = std::fs::read_to_string(&features).unwrap();
        let pool: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
        let names = pool["features"].as_array().unwrap();
        let at = |name: &str| names.iter().position(|n| n == name).unwrap();
        let (order_at, text_at) = (at("file_order_rr"), at("file_text_rr"));
        let mut by_file = std::collections::BTreeMap::new();
        for c in pool["candidates"].as_array().unwrap() {
            let x = c["x"].as_array().unwrap();
            let pair = (x[order_at].as_f64().unwrap(), x[text_at].as_f64().unwrap());
            let path = c["path"].as_str().unwrap().to_string();
            let first = *by_file.entry(path.clone()).or_insert(pair);
            assert_eq!(first, pair, "{path}: one standing per file");
        }
        by_file
    };
    // Fused: the file whose text matches leads both the merging order and the text's.
    let fused = standing("fused");
    assert_eq!(fused["config/defaults.py"], (1.0, 1.0), "{fused:?}");
    assert_eq!(fused["net/tls.py"].0, 0.5, "{fused:?}");
    // The feature is the order the results are merged by.
    let merged = files_of(&in_file_order(&s, "fused", 20));
    for (place, path) in merged.iter().take(2).enumerate() {
        assert_eq!(
            fused[path].0,
            1.0 / (1.0 + place as f64),
            "{merged:?} {fused:?}"
        );
    }
    // Symbols only: the file named in the query leads, and no file has a text place.
    let symbols = standing("symbols");
    assert_eq!(symbols["net/tls.py"].0, 1.0, "{symbols:?}");
    assert!(
        symbols.values().all(|&(_, text)| text == 0.0),
        "{symbols:?}"
    );
}
