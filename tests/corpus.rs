//! The query-quality corpus as regression tests (R-E-1/2): every case's context output is
//! an insta snapshot (timings redacted — and `serialized_bytes`, which counts the timing
//! digits; its exactness is asserted in tests/context.rs), and every output is validated
//! against graph-schema/context.schema.json.

mod common;

use std::path::Path;

use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(root().join("graph-schema/context.schema.json")).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::validator_for(&schema).expect("schema compiles")
}

#[track_caller]
fn assert_valid(validator: &jsonschema::Validator, document: &Value, what: &str) {
    let errors: Vec<String> = validator
        .iter_errors(document)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{what} violates the schema:\n{}\n{document:#}",
        errors.join("\n")
    );
}

fn redact(mut page: Value) -> Value {
    if page.get("receipt").is_some() {
        page["receipt"]["timings_ms"] = Value::String("[timings]".into());
        page["receipt"]["serialized_bytes"] = Value::String("[bytes]".into());
    }
    page
}

#[test]
fn corpus_outputs_match_snapshots_and_the_schema() {
    let corpus_path = root().join("corpus/context.toml");
    let corpus = atlas::cli::eval::load(&corpus_path).unwrap();
    assert!(corpus.cases.len() >= 12);
    let workspaces = atlas::cli::eval::Workspaces::new(
        root().join("fixtures"),
        None,
        corpus.repos.clone(),
        atlas::config::Config::default(),
    );
    let validator = validator();
    for case in &corpus.cases {
        let run = atlas::cli::eval::run_case(&workspaces, case).unwrap();
        assert!(
            run.metrics.passed,
            "{}: {:?}",
            case.name, run.metrics.failures
        );
        let mut documents = Vec::new();
        for page in &run.pages {
            documents.push(serde_json::from_str::<Value>(page).unwrap());
        }
        if let Some(error) = &run.error {
            documents.push(serde_json::from_str::<Value>(error).unwrap());
        }
        for document in &documents {
            assert_valid(&validator, document, &case.name);
        }
        let redacted: Vec<Value> = documents.into_iter().map(redact).collect();
        let rendered = serde_json::to_string_pretty(&redacted).unwrap();
        insta::assert_snapshot!(format!("corpus_{}", case.name), rendered);
    }
}

#[test]
fn the_schema_rejects_a_broken_document() {
    let validator = validator();
    let bad = serde_json::json!({ "schema": "atlas.context.v1", "query": 1 });
    assert!(!validator.is_valid(&bad));
}

#[test]
fn eval_cli_writes_its_receipt_and_fails_on_a_failing_case() {
    let s = common::Sandbox::new();
    let out = s.path().join("receipt.json");
    let corpus = root().join("corpus/context.toml");
    let run = s
        .run_bin(
            env!("CARGO_BIN_EXE_atlas"),
            &[
                "eval",
                "--corpus",
                corpus.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ],
        )
        .success();
    let receipt = run.json();
    assert_eq!(receipt["passed"], true);
    assert!(receipt["classes"]["flow"]["cases"].as_u64().unwrap() >= 2);
    for key in [
        "recall",
        "mrr",
        "path_precision",
        "path_recall",
        "forbidden_hit_rate",
        "evidence_recall",
        "bytes",
        "latency_ms",
    ] {
        assert!(receipt["overall"][key].is_number(), "{key}");
    }
    assert!(out.is_file());

    // A failing corpus still writes its receipt, and exits non-zero.
    let failing = s.path().join("failing.toml");
    let fixtures = root().join("fixtures");
    std::fs::write(
        &failing,
        format!(
            "version = 1\nfixtures = {:?}\n[[case]]\nname = \"wrong\"\nclass = \"symbol\"\nfixture = \"python\"\nquery = \"checkout\"\nprofile = \"symbol\"\nexpect_symbols = [\"shop/nowhere.py::ghost\"]\nforbidden = [\"shop/util.py::apply_discount\"]\n",
            fixtures.display().to_string()
        ),
    )
    .unwrap();
    let failing_out = s.path().join("failing-receipt.json");
    let run = s.run_bin(
        env!("CARGO_BIN_EXE_atlas"),
        &[
            "eval",
            "--corpus",
            failing.to_str().unwrap(),
            "--out",
            failing_out.to_str().unwrap(),
        ],
    );
    let run = run.failure(10, "atlas-eval-failed");
    let receipt = run.json();
    assert_eq!(receipt["passed"], false);
    assert_eq!(receipt["cases"][0]["forbidden_hit_rate"], 1.0);
    assert_eq!(receipt["cases"][0]["recall"], 0.0);
    assert!(failing_out.is_file());
}
