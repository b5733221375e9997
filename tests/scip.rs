//! SCIP ingestion end to end: committed indexes from the real indexers (fixtures/scip/),
//! hand-written indexes for the negative cases, merge, status and `eval edges`.

mod common;

use common::{Sandbox, fixture};
use protobuf::Message;

fn scip_fixture(name: &str) -> String {
    fixture("scip").join(name).to_string_lossy().into_owned()
}

fn build_with(s: &Sandbox, index: &str) -> serde_json::Value {
    s.atlas(&["build", "--scip", index, "--format", "json"])
        .success()
        .json()
}

/// A hand-written SCIP index with one document.
fn handwritten(path: &str, occurrences: &[(Vec<i32>, &str, i32)]) -> Vec<u8> {
    let mut document = scip::types::Document::new();
    document.relative_path = path.into();
    document.language = "python".into();
    for (range, symbol, roles) in occurrences {
        let mut occurrence = scip::types::Occurrence::new();
        occurrence.range = range.clone();
        occurrence.symbol = symbol.to_string();
        occurrence.symbol_roles = *roles;
        document.occurrences.push(occurrence);
    }
    let mut index = scip::types::Index::new();
    index.documents.push(document);
    index.write_to_bytes().unwrap()
}

#[test]
fn python_index_from_scip_python_becomes_precise_edges() {
    let s = Sandbox::with_fixture("python");
    let report = build_with(&s, &scip_fixture("python.scip"));
    let merge = &report["scip"];
    assert_eq!(merge["stats"]["documents_ingested"], 6);
    assert_eq!(merge["stats"]["documents_stale"], 0);
    assert!(merge["precise_edges"].as_u64().unwrap() > 10);
    assert!(merge["heuristic_edges_replaced"].as_u64().unwrap() > 0);
    let dump = s.atlas(&["graph", "dump"]).success().stdout;
    // The heuristic could not type `cart`; SCIP knows `cart: Cart`.
    assert!(dump.contains("edge calls shop/pricing.py::checkout -> shop/models.py::Cart.total @shop/pricing.py:8 [scip precise 100]"), "{dump}");
    // A precise edge replaces the heuristic one at the same site.
    assert!(!dump.contains("edge calls shop/pricing.py::checkout -> shop/util.py::apply_discount @shop/pricing.py:9 [tree-sitter"));
    // Symbols only SCIP knows (attributes set in __init__) are added under their class.
    assert!(dump.contains("shop/models.py::Cart.items"), "{dump}");
    let status = s.atlas(&["status", "--format", "json"]).success().json();
    assert!(
        status["edges"]["calls"]["scip"]["precise"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert_eq!(status["scip"]["merge"]["stats"]["documents_ingested"], 6);
    let text = s.atlas(&["status"]).success().stdout;
    assert!(text.contains("scip        6 documents ingested"), "{text}");
    // Context shows the provenance of each relation.
    let out = s
        .atlas(&[
            "context",
            "checkout",
            "--profile",
            "symbol",
            "--frozen",
            "--format",
            "json",
        ])
        .success()
        .json();
    let callee = out["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["symbol"] == "shop/models.py::Cart.total")
        .expect("precise callee");
    assert_eq!(callee["relation"]["provenance"], "scip");
    assert_eq!(callee["relation"]["resolution"], "precise");
}

#[test]
fn typescript_index_from_scip_typescript_is_ingested() {
    let s = Sandbox::with_fixture("typescript");
    let report = build_with(&s, &scip_fixture("typescript.scip"));
    assert_eq!(report["scip"]["stats"]["documents_ingested"], 3);
    let dump = s.atlas(&["graph", "dump"]).success().stdout;
    assert!(dump.contains("[scip precise 100]"));
    assert!(
        dump.contains("edge implements src/model.ts::User -> src/model.ts::Entity"),
        "{dump}"
    );
}

#[test]
fn index_scip_at_the_root_is_picked_up_and_fingerprinted() {
    let s = Sandbox::with_fixture("python");
    let plain = s.build_json();
    assert!(plain["scip"].is_null());
    std::fs::copy(scip_fixture("python.scip"), s.repo().join("index.scip")).unwrap();
    let with_index = s.build_json();
    assert_eq!(with_index["scip"]["stats"]["documents_ingested"], 6);
    assert_ne!(
        plain["fingerprint"], with_index["fingerprint"],
        "SCIP inputs are part of the fingerprint"
    );
}

#[test]
fn a_document_that_no_longer_fits_the_file_is_stale_and_yields_no_edges() {
    let s = Sandbox::with_fixture("python");
    let models = s.repo().join("shop/models.py");
    let text = std::fs::read_to_string(&models).unwrap();
    std::fs::write(
        &models,
        format!("# a new first line shifts every range\n{text}"),
    )
    .unwrap();
    let report = build_with(&s, &scip_fixture("python.scip"));
    assert_eq!(report["scip"]["stats"]["documents_stale"], 1);
    let diagnostic = &report["scip"]["diagnostics"][0];
    assert_eq!(diagnostic["code"], "atlas-scip-stale-document");
    assert_eq!(diagnostic["path"], "shop/models.py");
    let dump = s.atlas(&["graph", "dump"]).success().stdout;
    assert!(
        !dump
            .lines()
            .any(|l| l.contains("[scip") && l.contains("@shop/models.py:")),
        "no precise edge from a stale document"
    );
}

#[test]
fn hand_written_stale_ranges_and_outside_paths_are_counted() {
    let s = Sandbox::with_fixture("python");
    let index = s.path().join("hand.scip");
    let symbol = "scip-python python shop 0 `shop.util`/apply_discount().";
    // Line 0 is `def apply_discount(amount, rate):`; column 200 does not exist.
    let mut bytes = handwritten("shop/util.py", &[(vec![0, 4, 200], symbol, 1)]);
    let mut outside = scip::types::Document::new();
    outside.relative_path = "not/in/inventory.py".into();
    let mut index_message = scip::types::Index::parse_from_bytes(&bytes).unwrap();
    index_message.documents.push(outside);
    bytes = index_message.write_to_bytes().unwrap();
    std::fs::write(&index, bytes).unwrap();
    let report = build_with(&s, index.to_str().unwrap());
    let stats = &report["scip"]["stats"];
    assert_eq!(stats["documents_stale"], 1);
    assert_eq!(stats["documents_outside_inventory"], 1);
    assert_eq!(stats["documents_ingested"], 0);
    assert_eq!(report["scip"]["precise_edges"], 0);

    // A definition whose range spells another name is stale too.
    let wrong_name = handwritten(
        "shop/util.py",
        &[(
            vec![0, 4, 18],
            "scip-python python shop 0 `shop.util`/not_this_name().",
            1,
        )],
    );
    std::fs::write(&index, wrong_name).unwrap();
    let report = build_with(&s, index.to_str().unwrap());
    assert_eq!(report["scip"]["stats"]["documents_stale"], 1);

    // A fitting hand-written index is ingested.
    let fitting = handwritten("shop/util.py", &[(vec![0, 4, 18], symbol, 1)]);
    std::fs::write(&index, fitting).unwrap();
    let report = build_with(&s, index.to_str().unwrap());
    assert_eq!(report["scip"]["stats"]["documents_ingested"], 1);
    assert_eq!(report["scip"]["symbols_matched"], 1);
}

#[test]
fn a_truncated_or_garbage_index_is_a_typed_error_and_keeps_the_generation() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let committed = s.current();
    let bytes = std::fs::read(scip_fixture("python.scip")).unwrap();
    let truncated = s.path().join("truncated.scip");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let run = s
        .atlas(&[
            "build",
            "--scip",
            truncated.to_str().unwrap(),
            "--format",
            "json",
        ])
        .failure(4, "atlas-scip-corrupt");
    assert_eq!(run.json()["error"]["code"], "atlas-scip-corrupt");
    assert_eq!(s.current(), committed);
    let garbage = s.path().join("garbage.scip");
    std::fs::write(&garbage, [0xffu8; 64]).unwrap();
    s.atlas(&["build", "--scip", garbage.to_str().unwrap()])
        .failure(4, "atlas-scip-corrupt");
    assert_eq!(s.current(), committed);
    s.atlas(&["graph", "dump"]).success();
}

#[test]
fn eval_edges_reports_precision_and_recall_per_language() {
    let s = Sandbox::with_fixture("python");
    let run = s
        .atlas(&[
            "eval",
            "edges",
            "--scip",
            &scip_fixture("python.scip"),
            "--format",
            "json",
        ])
        .success();
    let report = run.json();
    let calls = &report["evaluation"]["by_language"]["python/calls"];
    assert!(calls["precision"].as_f64().unwrap() >= 0.95, "{report:#}");
    assert!(calls["recall"].as_f64().unwrap() > 0.5);
    assert!(calls["precise_edges"].as_u64().unwrap() >= 10);
    assert!(
        report["evaluation"]["by_resolution"]["python/calls/import"]["true_positives"]
            .as_u64()
            .unwrap()
            > 0
    );
    let text = s
        .atlas(&["eval", "edges", "--scip", &scip_fixture("python.scip")])
        .success()
        .stdout;
    assert!(text.contains("python/calls"), "{text}");
}

#[test]
fn scip_run_reports_missing_toolchains_and_runs_indexers_on_path() {
    let s = Sandbox::with_fixture("python");
    let empty_bin = s.path().join("empty-bin");
    std::fs::create_dir_all(&empty_bin).unwrap();
    let path = empty_bin.to_string_lossy().to_string();
    let repo = s.repo();
    let args = [
        "--code",
        repo.to_str().unwrap(),
        "build",
        "--scip-run",
        "--format",
        "json",
    ];
    let report = s
        .run_bin_env(env!("CARGO_BIN_EXE_atlas"), &args, &[("PATH", &path)])
        .success()
        .json();
    assert_eq!(report["scip_runs"][0]["language"], "python");
    assert_eq!(report["scip_runs"][0]["scip_status"], "toolchain_missing");

    // A stand-in `scip-python` on PATH: the runner calls it with --output and ingests
    // what it writes (here, the committed index produced by the real scip-python).
    let fake_bin = s.path().join("fake-bin");
    std::fs::create_dir_all(&fake_bin).unwrap();
    let script = fake_bin.join("scip-python");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nwhile [ \"$1\" != \"--output\" ]; do shift; done\ncp '{}' \"$2\"\n",
            scip_fixture("python.scip")
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:/usr/bin:/bin", fake_bin.display());
    let report = s
        .run_bin_env(
            env!("CARGO_BIN_EXE_atlas"),
            &[
                "--code",
                repo.to_str().unwrap(),
                "build",
                "--format",
                "json",
            ],
            &[("PATH", &path), ("ATLAS_SCIP", "1")],
        )
        .success()
        .json();
    assert_eq!(report["scip_runs"][0]["scip_status"], "ok");
    assert_eq!(report["scip"]["stats"]["documents_ingested"], 6);
}
