//! Jev relevance (issue 15, R-J-1..9) end to end, against a real HTTP server on loopback
//! that speaks the System One protocol from scripted answers. Each case asserts the final
//! order and the status fields.

mod common;

#[path = "common/systemone.rs"]
mod systemone;

use std::time::Duration;

use common::{Run, Sandbox};
use serde_json::{Value, json};
use systemone::{Reply, Server, answer};

const KEY: &str = "sk-or-v1-SENTINEL-7f3a9c-never-printed";
const QUERY: &str = "apply discount to the amount";

/// A built fixture.
fn shop() -> Sandbox {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    s
}

/// A built tree of 150 functions of ~2,000 characters that all mention "ledger total
/// amount": a pool too large for one batch.
fn large_pool() -> Sandbox {
    let s = Sandbox::new();
    let mut text = String::new();
    for i in 0..150 {
        text.push_str(&format!("def ledger_total_{i}(amount):\n"));
        for line in 0..40 {
            text.push_str(&format!(
                "    amount = amount + {line}  # ledger total amount\n"
            ));
        }
        text.push_str("    return amount\n\n");
    }
    s.write("repo/ledger.py", &text);
    s.build_json();
    s
}

/// The environment that turns the judge on against `server`.
fn judged(server: &Server) -> Vec<(String, String)> {
    vec![
        ("ATLAS_RELEVANCE".into(), "1".into()),
        ("ATLAS_RELEVANCE_API_URL".into(), server.url()),
        ("ATLAS_RELEVANCE_API_KEY".into(), KEY.into()),
        ("ATLAS_RELEVANCE_TEST_LOOPBACK".into(), "1".into()),
    ]
}

fn search(s: &Sandbox, query: &str, args: &[&str], env: &[(String, String)]) -> Run {
    let mut argv = vec!["search", query, "--format", "json", "--frozen"];
    argv.extend_from_slice(args);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    s.atlas_env(&argv, &env).success()
}

fn symbols(out: &Value) -> Vec<String> {
    out["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["symbol"].as_str().unwrap().to_string())
        .collect()
}

/// The one cost line on stderr.
#[track_caller]
fn cost_line(run: &Run) -> Value {
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("atlas_relevance_cost"))
        .collect();
    assert_eq!(lines.len(), 1, "exactly one cost line:\n{}", run.describe());
    serde_json::from_str::<Value>(lines[0]).unwrap()["atlas_relevance_cost"].clone()
}

/// Scores by symbol: `table` entries (symbol, score, confidence); others 0.2 at 0.95.
fn by_symbol(table: &'static [(&'static str, f64, f64)]) -> impl Fn(&Value) -> (f64, f64) {
    move |c: &Value| {
        let symbol = c["symbol"].as_str().unwrap();
        table
            .iter()
            .find(|(s, _, _)| *s == symbol)
            .map_or((0.2, 0.95), |&(_, score, confidence)| (score, confidence))
    }
}

#[test]
fn off_by_default_and_a_key_alone_does_nothing() {
    let s = shop();
    let server = Server::start(|r| Reply::json(&answer(r, |_| (3.0, 1.0))));
    let env = vec![
        ("ATLAS_RELEVANCE_API_URL".to_string(), server.url()),
        ("ATLAS_RELEVANCE_API_KEY".to_string(), KEY.to_string()),
        ("ATLAS_RELEVANCE_TEST_LOOPBACK".to_string(), "1".to_string()),
        (
            "ATLAS_RELEVANCE_MODEL".to_string(),
            "typesafe/jev-latest".to_string(),
        ),
    ];
    let run = search(&s, QUERY, &[], &env);
    let out = run.json();
    assert!(out.get("relevance").is_none(), "{out}");
    assert!(server.received().is_empty());
    let cost = cost_line(&run);
    assert_eq!(
        (cost["status"].as_str(), cost["calls"].as_u64()),
        (Some("zero"), Some(0))
    );
    assert_eq!(cost["relevance"], "off");
    // On, but `ATLAS_RERANK=0` wins.
    let mut env = judged(&server);
    env.push(("ATLAS_RERANK".into(), "0".into()));
    let out = search(&s, QUERY, &[], &env).json();
    assert_eq!(out["relevance"]["status"], "off");
    assert_eq!(out["relevance"]["reason"], "rerank_disabled");
    assert!(server.received().is_empty());
}

#[test]
fn valid_scores_reorder_the_pool_and_exact_matches_stay_first() {
    let s = shop();
    let local = symbols(&search(&s, QUERY, &["--top-k", "4"], &[]).json());
    assert_eq!(local[0], "apply_discount");
    // The judge prefers `checkout` and `Item.total`; `apply_discount` is judged low.
    let server = Server::start(|r| {
        Reply::json(&answer(
            r,
            by_symbol(&[
                ("checkout", 3.0, 0.95),
                ("Item.total", 2.5, 0.9),
                ("apply_discount", 0.5, 0.9),
            ]),
        ))
    });
    let run = search(&s, QUERY, &["--top-k", "4"], &judged(&server));
    let out = run.json();
    let relevance = &out["relevance"];
    assert_eq!(relevance["status"], "success", "{relevance}");
    assert_eq!(relevance["source"], "live");
    assert_eq!(relevance["model"], "typesafe/jev-1.13-20260917");
    assert_eq!(relevance["rubric"], "jev-relevance-score-v2");
    assert_eq!(relevance["cost"]["status"], "known");
    assert_eq!(relevance["cost_status"], "incurred");
    assert_eq!(relevance["ranking_changed"], true);
    let hits = symbols(&out);
    // The full profile's conservative selection keeps `apply_discount` (0.5 > 3/8),
    // now below the two the judge preferred, and drops the two judged 0.2 at 0.95.
    assert_eq!(
        hits,
        ["checkout", "Item.total", "apply_discount"],
        "{hits:?}"
    );
    assert_eq!(relevance["removed"], 2);
    // The reported score stays the RRF score; the evaluation rides beside it.
    let first = &out["hits"][0];
    assert_eq!(first["relevance"]["score"], 3.0);
    assert!(first["score"].as_f64().unwrap() < 1.0);
    // What was sent: the whole pool once, as score questions, with the bearer key.
    let received = server.received();
    assert_eq!(received.len(), 1);
    let request = &received[0];
    assert_eq!(request.path, "/api/v1/systemone");
    assert_eq!(
        request.authorization.as_deref(),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(request.body["model"], "~typesafe/jev-latest");
    assert_eq!(request.body["state"]["query"], QUERY);
    assert_eq!(
        request.ids().len(),
        relevance["sent"].as_u64().unwrap() as usize
    );
    assert_eq!(relevance["pool"], relevance["sent"]);
    let candidate = request
        .candidates()
        .into_iter()
        .find(|c| c["symbol"] == "apply_discount")
        .unwrap();
    assert_eq!(candidate["path"], "shop/util.py");
    assert_eq!(candidate["language"], "python");
    assert!(
        candidate["content"]
            .as_str()
            .unwrap()
            .contains("return amount * (1 - rate)")
    );
    let question = &request.body["questions"][candidate["id"].as_str().unwrap()];
    assert_eq!(question["type"], "score");
    assert_eq!(question["criteria"].as_array().unwrap().len(), 4);
    assert!(request.bytes <= 192_000);
    let cost = cost_line(&run);
    assert_eq!(
        (cost["status"].as_str(), cost["calls"].as_u64()),
        (Some("known"), Some(1))
    );
    assert_eq!(cost["usd"], 0.00025);

    // An exact symbol match stays first whatever the judge says.
    let out = search(&s, "apply_discount", &["--top-k", "3"], &judged(&server)).json();
    assert_eq!(symbols(&out)[0], "apply_discount");
    assert_eq!(out["relevance"]["status"], "success");
}

#[test]
fn uncertain_answers_keep_their_lexical_position() {
    let s = shop();
    let local = symbols(&search(&s, QUERY, &["--top-k", "3"], &[]).json());
    // Everything is judged uncertain: nothing moves.
    let server = Server::start(|r| Reply::json(&answer(r, |_| (2.0, 0.4))));
    let out = search(&s, QUERY, &["--top-k", "3"], &judged(&server)).json();
    assert_eq!(symbols(&out), local);
    let r = &out["relevance"];
    assert_eq!(r["status"], "success");
    assert_eq!(r["uncertain"], r["evaluated"]);
    assert_eq!(r["ranking_changed"], false);
    assert_eq!(out["hits"][0]["relevance"]["uncertain"], true);
}

/// A batch the answer of which is refused leaves the local order, and says why.
#[track_caller]
fn refused(reply: impl Fn(&systemone::Received) -> Reply + Send + Sync + 'static, reason: &str) {
    let s = shop();
    let local = symbols(&search(&s, QUERY, &["--top-k", "3"], &[]).json());
    let server = Server::start(reply);
    let run = search(&s, QUERY, &["--top-k", "3"], &judged(&server));
    let out = run.json();
    assert_eq!(symbols(&out), local, "local ranking after `{reason}`");
    let r = &out["relevance"];
    assert_eq!(r["status"], "failed", "{r}");
    assert_eq!(r["reason"], reason);
    assert_eq!(r["evaluated"], 0);
    assert_eq!(r["batches"][0]["outcome"], reason);
    assert!(out["hits"][0].get("relevance").is_none());
    assert_eq!(cost_line(&run)["status"], "unknown");
}

#[test]
fn missing_ids_invalidate_the_batch() {
    refused(
        |r| {
            let mut body = answer(r, |_| (3.0, 1.0));
            let first = r.ids()[0].clone();
            body["answers"].as_object_mut().unwrap().remove(&first);
            Reply::json(&body)
        },
        "ids_mismatch",
    );
}

#[test]
fn a_foreign_model_invalidates_the_batch() {
    refused(
        |r| {
            let mut body = answer(r, |_| (3.0, 1.0));
            body["model"] = json!("openai/gpt-4o-mini");
            Reply::json(&body)
        },
        "foreign_model",
    );
}

#[test]
fn garbage_json_invalidates_the_batch() {
    refused(
        |_| Reply::status(200, "{\"model\": \"typesafe/jev-latest\", \"answers\": "),
        "invalid_json",
    );
}

#[test]
fn http_errors_fall_back_to_local_ranking() {
    refused(|_| Reply::status(429, "rate limited"), "http_429");
    refused(|_| Reply::status(500, "boom"), "http_500");
}

#[test]
fn redirects_are_refused() {
    let target = Server::start(|r| Reply::json(&answer(r, |_| (3.0, 1.0))));
    let location = target.url();
    refused(
        move |_| {
            let mut reply = Reply::status(307, "");
            reply.headers.push(("Location".into(), location.clone()));
            reply
        },
        "redirect_refused",
    );
    assert!(
        target.received().is_empty(),
        "the redirect was not followed"
    );
}

#[test]
fn a_response_over_256_kib_is_refused() {
    refused(
        |r| {
            let mut body = answer(r, |_| (3.0, 1.0));
            body["padding"] = json!("x".repeat(300 * 1024));
            Reply::json(&body)
        },
        "response_too_large",
    );
}

#[test]
fn a_slow_server_times_out_at_3_s_and_the_ranking_stays_local() {
    refused(
        |r| Reply::json(&answer(r, |_| (3.0, 1.0))).after(Duration::from_millis(4500)),
        "timeout",
    );
}

#[test]
fn a_large_pool_overflows_into_a_second_call() {
    let s = large_pool();
    let server = Server::start(|r| Reply::json(&answer(r, |_| (2.0, 0.9))));
    let out = search(
        &s,
        "ledger total amount",
        &["--top-k", "10"],
        &judged(&server),
    )
    .json();
    let received = server.received();
    assert_eq!(received.len(), 2, "{}", out["relevance"]);
    assert!(received.iter().all(|r| r.bytes <= 192_000));
    let first = received[0].ids();
    let second = received[1].ids();
    assert!(first.iter().all(|id| !second.contains(id)));
    let r = &out["relevance"];
    assert_eq!(r["batches"].as_array().unwrap().len(), 2);
    assert_eq!(r["status"], "success");
    assert_eq!(
        r["sent"].as_u64().unwrap() + r["not_sent"].as_u64().unwrap(),
        r["pool"].as_u64().unwrap()
    );
    assert_eq!(
        r["sent"].as_u64().unwrap() as usize,
        first.len() + second.len()
    );
    assert_eq!(r["cost"]["calls"], 2);
}

#[test]
fn the_gate_skips_the_call_for_exact_names_and_identifiers() {
    let s = shop();
    let server = Server::start(|r| Reply::json(&answer(r, |_| (0.1, 0.99))));
    // `1`: an exact name with a single function match in the pool.
    let mut env = judged(&server);
    env.push(("ATLAS_RELEVANCE_GATE".into(), "1".into()));
    let run = search(&s, "apply_discount", &["--top-k", "3"], &env);
    let out = run.json();
    let r = &out["relevance"];
    assert_eq!(
        (r["status"].as_str(), r["reason"].as_str()),
        (Some("skipped"), Some("unique_exact_symbol"))
    );
    assert_eq!(r["cost_status"], "not_incurred");
    assert_eq!(r["gate"], "unique_exact_symbol_v1");
    assert_eq!(symbols(&out)[0], "apply_discount");
    assert_eq!(cost_line(&run)["status"], "zero");
    // A partial identifier is not exact: `1` calls.
    let out = search(&s, "discount", &["--top-k", "3"], &env).json();
    assert_eq!(out["relevance"]["status"], "success");
    assert_eq!(server.received().len(), 1);
    // `identifier`: every identifier query is skipped; prose still calls.
    let mut env = judged(&server);
    env.push(("ATLAS_RELEVANCE_GATE".into(), "identifier".into()));
    let out = search(&s, "discount", &["--top-k", "3"], &env).json();
    assert_eq!(out["relevance"]["reason"], "identifier_query");
    assert_eq!(out["relevance"]["gate"], "identifier_query_v1");
    assert_eq!(server.received().len(), 1);
    let out = search(&s, QUERY, &["--top-k", "3"], &env).json();
    assert_eq!(out["relevance"]["status"], "success");
    assert_eq!(server.received().len(), 2);
    // An invalid gate value keeps it off and says so.
    let mut env = judged(&server);
    env.push(("ATLAS_RELEVANCE_GATE".into(), "sometimes".into()));
    let out = search(&s, "apply_discount", &["--top-k", "3"], &env).json();
    assert_eq!(out["relevance"]["gate"], "off");
    assert_eq!(out["relevance"]["config_problems"], json!(["invalid_flag"]));
}

#[test]
fn the_compact_cut_drops_low_scores_without_refill_and_can_be_turned_off() {
    let s = shop();
    // Only `checkout` and `Item.total` are worth showing.
    let server = Server::start(|r| {
        Reply::json(&answer(
            r,
            by_symbol(&[("checkout", 3.0, 0.95), ("Item.total", 2.0, 0.95)]),
        ))
    });
    let compact = ["--top-k", "4", "--profile", "compact"];
    let out = search(&s, QUERY, &compact, &judged(&server)).json();
    let r = &out["relevance"];
    assert_eq!(r["policy"], "top_k_no_refill_v1");
    assert_eq!(r["threshold"], 1.5);
    let hits = symbols(&out);
    // In Jev order the top four are checkout, Item.total and two judged 0.2: those two
    // go, and the fifth candidate does not refill their slots.
    assert_eq!(hits, ["checkout", "Item.total"], "{r}");
    assert_eq!(r["removed"], 2);
    assert_eq!(out["omitted"]["relevance"], 2);
    // Cut off: only confident scores ≤ 3/8 go, and the pool refills the slots.
    let mut env = judged(&server);
    env.push(("ATLAS_RELEVANCE_CUT".into(), "0".into()));
    let out = search(&s, QUERY, &compact, &env).json();
    let r = &out["relevance"];
    assert_eq!(r["policy"], "conservative_refill_v1");
    assert_eq!(r["threshold"], 0.375);
    let hits = symbols(&out);
    assert_eq!(hits, ["checkout", "Item.total"]);
    // Every other candidate scored 0.2 at 0.95 (≤ 0.375, confident): all three dropped,
    // the refill went through the whole pool.
    assert_eq!(r["removed"], 3);
    // The full profile never cuts the top_k: conservative.
    let out = search(&s, QUERY, &["--top-k", "4"], &judged(&server)).json();
    assert_eq!(out["relevance"]["policy"], "conservative_refill_v1");
    // An invalid flag keeps the cut on and says so.
    let mut env = judged(&server);
    env.push(("ATLAS_RELEVANCE_CUT".into(), "maybe".into()));
    let out = search(&s, QUERY, &compact, &env).json();
    assert_eq!(out["relevance"]["policy"], "top_k_no_refill_v1");
    assert_eq!(out["relevance"]["config_problems"], json!(["invalid_flag"]));
}

#[test]
fn when_everything_is_cut_the_first_local_candidate_comes_back() {
    let s = shop();
    let local = symbols(&search(&s, QUERY, &["--top-k", "3"], &[]).json());
    let server = Server::start(|r| Reply::json(&answer(r, |_| (0.1, 0.99))));
    let out = search(
        &s,
        QUERY,
        &["--top-k", "3", "--profile", "compact"],
        &judged(&server),
    )
    .json();
    assert_eq!(symbols(&out), [local[0].clone()]);
    let r = &out["relevance"];
    assert_eq!(r["warnings"], json!(["relevance_unconfirmed_fallback"]));
    // Three were cut; the one that came back is not counted as omitted.
    assert_eq!(r["removed"], 2);
    assert_eq!(out["omitted"]["relevance"], 2);
}

#[test]
fn both_rubrics_and_an_invalid_one() {
    let s = shop();
    let server = Server::start(|r| Reply::json(&answer(r, |_| (1.0, 0.9))));
    let mut env = judged(&server);
    env.push(("ATLAS_RELEVANCE_RUBRIC".into(), "v1".into()));
    let out = search(&s, QUERY, &["--top-k", "3", "--profile", "compact"], &env).json();
    assert_eq!(out["relevance"]["rubric"], "jev-relevance-score-v1");
    assert_eq!(out["relevance"]["threshold"], 1.0);
    // 1.0 is not below half of v1's scale: nothing is cut.
    assert_eq!(out["relevance"]["removed"], 0);
    let request = server.received().pop().unwrap();
    let question = request.body["questions"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap()
        .clone();
    assert_eq!(question["criteria"].as_array().unwrap().len(), 3);
    // Scores above v1's scale are out of range.
    let high = Server::start(|r| Reply::json(&answer(r, |_| (2.5, 0.9))));
    let mut env = judged(&high);
    env.push(("ATLAS_RELEVANCE_RUBRIC".into(), "v1".into()));
    let out = search(&s, QUERY, &["--top-k", "3"], &env).json();
    assert_eq!(out["relevance"]["reason"], "score_out_of_range");
    // An unknown rubric keeps v2 and says so.
    let mut env = judged(&server);
    env.push(("ATLAS_RELEVANCE_RUBRIC".into(), "v9".into()));
    let out = search(&s, QUERY, &["--top-k", "3", "--profile", "compact"], &env).json();
    assert_eq!(out["relevance"]["rubric"], "jev-relevance-score-v2");
    assert_eq!(out["relevance"]["threshold"], 1.5);
    assert_eq!(
        out["relevance"]["config_problems"],
        json!(["invalid_rubric"])
    );
    let status = s
        .atlas_env(
            &["status", "--format", "json"],
            &[("ATLAS_RELEVANCE_RUBRIC", "v9")],
        )
        .success()
        .json();
    assert_eq!(status["relevance"]["rubric"]["reason"], "invalid_rubric");
    assert_eq!(
        status["relevance"]["rubric"]["value"],
        "jev-relevance-score-v2"
    );
}

#[test]
fn wrong_urls_and_models_never_send_and_are_reported() {
    let s = shop();
    let server = Server::start(|r| Reply::json(&answer(r, |_| (3.0, 1.0))));
    let cases = [
        (
            "ATLAS_RELEVANCE_API_URL",
            "https://evil.example/api/v1/systemone",
            "invalid_url",
        ),
        (
            "ATLAS_RELEVANCE_API_URL",
            "https://user@openrouter.ai/api/v1/systemone",
            "invalid_url",
        ),
        (
            "ATLAS_RELEVANCE_API_URL",
            "https://openrouter.ai/api/v1/systemone?x=1",
            "invalid_url",
        ),
        (
            "ATLAS_RELEVANCE_API_URL",
            "http://openrouter.ai/api/v1/systemone",
            "invalid_url",
        ),
        ("ATLAS_RELEVANCE_MODEL", "openai/gpt-4o", "invalid_model"),
    ];
    for (name, value, reason) in cases {
        let mut env = judged(&server);
        env.retain(|(k, _)| k != name);
        env.push((name.into(), value.into()));
        let out = search(&s, QUERY, &["--top-k", "3"], &env).json();
        assert_eq!(out["relevance"]["status"], "unavailable", "{name}={value}");
        assert_eq!(out["relevance"]["reason"], reason);
        assert!(
            !out["hits"].as_array().unwrap().is_empty(),
            "the search runs locally"
        );
    }
    // The loopback URL needs the test-only switch.
    let mut env = judged(&server);
    env.retain(|(k, _)| k != "ATLAS_RELEVANCE_TEST_LOOPBACK");
    let out = search(&s, QUERY, &["--top-k", "3"], &env).json();
    assert_eq!(out["relevance"]["reason"], "invalid_url");
    assert!(server.received().is_empty());
    // No key: nothing to send with.
    let mut env = judged(&server);
    env.retain(|(k, _)| k != "ATLAS_RELEVANCE_API_KEY");
    let out = search(&s, QUERY, &["--top-k", "3"], &env).json();
    assert_eq!(out["relevance"]["reason"], "missing_key");
    // The semantic key is reused only for OpenRouter's https chat endpoint.
    env.push(("ATLAS_SEMANTIC_API_KEY".into(), KEY.into()));
    env.push((
        "ATLAS_SEMANTIC_API_URL".into(),
        "https://example.com/v1/chat/completions".into(),
    ));
    let out = search(&s, QUERY, &["--top-k", "3"], &env).json();
    assert_eq!(out["relevance"]["reason"], "missing_key");
    env.retain(|(k, _)| k != "ATLAS_SEMANTIC_API_URL");
    env.push((
        "ATLAS_SEMANTIC_API_URL".into(),
        "https://openrouter.ai/api/v1/chat/completions".into(),
    ));
    let out = search(&s, QUERY, &["--top-k", "3"], &env).json();
    assert_eq!(out["relevance"]["status"], "success");
    assert_eq!(server.received().len(), 1);
}

#[test]
fn replay_equals_live_and_needs_no_network() {
    let s = shop();
    let record = s.path().join("jev.jsonl");
    let server = Server::start(|r| {
        Reply::json(&answer(
            r,
            by_symbol(&[("checkout", 2.8, 0.9), ("Cart", 1.9, 0.6)]),
        ))
    });
    let mut env = judged(&server);
    env.push((
        "ATLAS_RELEVANCE_RECORD".into(),
        record.to_str().unwrap().into(),
    ));
    let live = search(&s, QUERY, &["--top-k", "5"], &env).json();
    // The record holds no query text, code, path or key.
    let recorded = std::fs::read_to_string(&record).unwrap();
    for secret in [
        KEY,
        QUERY,
        "shop/util.py",
        "apply_discount",
        "return amount",
    ] {
        assert!(!recorded.contains(secret), "the record leaks `{secret}`");
    }
    let env = vec![
        ("ATLAS_RELEVANCE".to_string(), "true".to_string()),
        (
            "ATLAS_RELEVANCE_REPLAY".to_string(),
            record.to_str().unwrap().to_string(),
        ),
        (
            "ATLAS_RELEVANCE_API_URL".to_string(),
            "http://127.0.0.1:9/nothing".to_string(),
        ),
        ("ATLAS_RELEVANCE_TEST_LOOPBACK".to_string(), "1".to_string()),
    ];
    let replayed = search(&s, QUERY, &["--top-k", "5"], &env).json();
    assert_eq!(server.received().len(), 1, "replay made no call");
    assert_eq!(live["hits"], replayed["hits"]);
    let (l, r) = (&live["relevance"], &replayed["relevance"]);
    assert_eq!(r["source"], "replay");
    for field in [
        "status",
        "model",
        "rubric",
        "evaluated",
        "uncertain",
        "ranking_changed",
        "removed",
        "sent",
    ] {
        assert_eq!(l[field], r[field], "{field}");
    }
    assert_eq!(r["cost"]["calls"], 0);
}

#[test]
fn the_key_never_leaks_and_status_sums_the_ledger() {
    let s = shop();
    let server = Server::start(|r| {
        let query = r.body["state"]["query"].as_str().unwrap_or("");
        if query.starts_with("slow") {
            Reply::json(&answer(r, |_| (1.0, 1.0))).after(Duration::from_millis(3500))
        } else if query.starts_with("garbage") {
            Reply::status(200, "nope")
        } else {
            Reply::json(&answer(r, |_| (2.0, 0.9)))
        }
    });
    let mut env = judged(&server);
    env.push(("ATLAS_OBSERVABILITY".into(), "1".into()));
    let mut outputs = String::new();
    for query in [
        QUERY,
        "slow discount amount",
        "garbage cart total",
        "cart total",
    ] {
        let run = search(&s, query, &["--top-k", "3"], &env);
        outputs.push_str(&run.stdout);
        outputs.push_str(&run.stderr);
    }
    let env_refs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let status = s
        .atlas_env(&["status", "--format", "json"], &env_refs)
        .success();
    outputs.push_str(&status.stdout);
    let text_status = s.atlas_env(&["status"], &env_refs).success();
    outputs.push_str(&text_status.stdout);
    let context = s
        .atlas_env(
            &[
                "context",
                "where is the discount applied",
                "--profile",
                "symbol",
                "--format",
                "json",
            ],
            &env_refs,
        )
        .success();
    outputs.push_str(&context.stdout);
    outputs.push_str(&context.stderr);
    assert!(!outputs.contains(KEY), "an output leaks the key");
    assert!(!outputs.contains("SENTINEL"));
    // Every file under the graph directory.
    let mut stack = vec![s.graph()];
    let mut files = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files += 1;
                let bytes = std::fs::read(&path).unwrap();
                assert!(
                    !bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()),
                    "{} leaks the key",
                    path.display()
                );
            }
        }
    }
    assert!(files > 5);
    // The ledger and the observability events hold no query or path either.
    let ledger = std::fs::read_to_string(s.graph().join("relevance/ledger.json")).unwrap();
    assert!(!ledger.contains("discount") && !ledger.contains("cart"));
    let events = std::fs::read_to_string(s.graph().join("observability/events.jsonl")).unwrap();
    assert!(events.lines().count() >= 4, "{events}");
    for secret in ["discount", "cart total", "shop/"] {
        assert!(!events.contains(secret), "events leak `{secret}`");
    }
    let r = &status.json()["relevance"];
    assert_eq!(r["enabled"], true);
    assert_eq!(r["key"], "set");
    assert_eq!(r["cut"]["policy"], "top_k_no_refill_v1");
    let l = &r["ledger"];
    assert_eq!(l["searches"], 4, "{l}");
    assert_eq!(l["calls"], 4);
    assert_eq!(l["timeouts"], 1);
    assert_eq!(l["invalid_batches"], 1);
    assert!((l["cost_usd"].as_f64().unwrap() - 2.0 * 0.00025).abs() < 1e-9);
    assert!(text_status.stdout.contains("relevance   on"));
    // Free-text candidates in `context` carry Jev's score in their reasons.
    let receipt = context.json();
    let reasons: Vec<&str> = receipt["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["class"] == "search-hit")
        .flat_map(|e| {
            e["reasons"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Value::as_str)
        })
        .collect();
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("jev 2.00 (confidence 0.90)")),
        "{reasons:?}"
    );
    assert_eq!(cost_line(&context)["calls"], 1);
}

#[test]
fn one_deadline_is_shared_by_both_calls() {
    let s = large_pool();
    // Both batches go out at once and each answer takes 3.2 s: past the one 3 s deadline
    // of the search, both are timeouts (not 6 s of waiting).
    let server = Server::start(|r| {
        Reply::json(&answer(r, |_| (2.0, 0.9))).after(Duration::from_millis(3200))
    });
    let out = search(
        &s,
        "ledger total amount",
        &["--top-k", "10"],
        &judged(&server),
    )
    .json();
    let r = &out["relevance"];
    assert_eq!(server.received().len(), 2, "{r}");
    let outcomes: Vec<&str> = r["batches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["timeout", "timeout"]);
    assert_eq!(r["cost"]["calls"], 2);
    assert_eq!(r["status"], "failed");
}

#[test]
fn a_replay_without_answers_for_the_query_is_a_failed_batch() {
    let s = shop();
    let replay = s.path().join("empty.jsonl");
    std::fs::write(&replay, "not a record\n").unwrap();
    let env = vec![
        ("ATLAS_RELEVANCE".to_string(), "1".to_string()),
        (
            "ATLAS_RELEVANCE_REPLAY".to_string(),
            replay.to_str().unwrap().to_string(),
        ),
    ];
    let out = search(&s, QUERY, &["--top-k", "3"], &env).json();
    assert_eq!(out["relevance"]["status"], "failed");
    assert_eq!(out["relevance"]["reason"], "replay_missing");
    // A replay path that is not a regular file is refused, never read.
    let env = vec![
        ("ATLAS_RELEVANCE".to_string(), "1".to_string()),
        (
            "ATLAS_RELEVANCE_REPLAY".to_string(),
            s.path().to_str().unwrap().to_string(),
        ),
    ];
    let out = search(&s, QUERY, &["--top-k", "3"], &env).json();
    assert_eq!(out["relevance"]["reason"], "replay_unreadable");
}

#[test]
fn a_candidate_file_replaced_by_a_fifo_is_sent_without_text_and_never_blocks() {
    let s = shop();
    let file = s.repo().join("shop/util.py");
    std::fs::remove_file(&file).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&file)
        .status()
        .unwrap();
    assert!(made.success());
    let server = Server::start(|r| Reply::json(&answer(r, |_| (2.0, 0.9))));
    let out = search(&s, QUERY, &["--top-k", "3"], &judged(&server)).json();
    assert_eq!(out["relevance"]["status"], "success");
    let sent = server.received().pop().unwrap();
    let candidate = sent
        .candidates()
        .into_iter()
        .find(|c| c["symbol"] == "apply_discount")
        .unwrap();
    assert_eq!(candidate["content"], "");
}

#[test]
fn a_damaged_ledger_is_reported_and_started_again() {
    let s = shop();
    let server = Server::start(|r| Reply::json(&answer(r, |_| (2.0, 0.9))));
    let env = judged(&server);
    let env_refs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    // One judged search starts the ledger; then it is damaged.
    search(&s, QUERY, &["--top-k", "3"], &env);
    let path = s.graph().join("relevance/ledger.json");
    std::fs::write(&path, b"{ not a ledger").unwrap();
    let status = s
        .atlas_env(&["status", "--format", "json"], &env_refs)
        .success()
        .json();
    let problems = &status["relevance"]["problems"];
    assert!(
        problems
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("ledger_damaged")),
        "{problems}"
    );
    assert!(status["relevance"]["ledger"].is_null());
    // The next judged search says its sums were lost, and starts them again.
    let run = search(&s, QUERY, &["--top-k", "3"], &env);
    let out: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let warnings = &out["relevance"]["warnings"];
    assert!(
        warnings
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("ledger_restarted")),
        "{warnings}"
    );
    let status = s
        .atlas_env(&["status", "--format", "json"], &env_refs)
        .success()
        .json();
    assert_eq!(status["relevance"]["ledger"]["searches"], 1);
    assert!(
        !status["relevance"]["problems"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("ledger_damaged"))
    );
}
