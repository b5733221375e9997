//! The graph file and generations under bad conditions: corruption, incompatible
//! versions, failed and concurrent builds (R-GEN-2, R-GEN-4).

mod common;

use common::Sandbox;

fn corrupt_graph(s: &Sandbox, edit: impl FnOnce(&mut Vec<u8>)) {
    let path = s.graph_file();
    let mut bytes = std::fs::read(&path).unwrap();
    edit(&mut bytes);
    std::fs::write(&path, bytes).unwrap();
}

#[test]
fn truncated_graph_file_is_corrupt() {
    let s = Sandbox::with_fixture("rust");
    s.build_json();
    corrupt_graph(&s, |b| b.truncate(b.len() / 2));
    let run = s
        .atlas(&["status", "--format", "json"])
        .failure(4, "atlas-graph-corrupt");
    assert_eq!(run.json()["error"]["code"], "atlas-graph-corrupt");
    assert!(run.stderr.contains("truncated"), "{}", run.describe());
    // A header-only file and an empty file are corrupt too.
    corrupt_graph(&s, |b| b.truncate(10));
    s.atlas(&["graph", "dump"])
        .failure(4, "atlas-graph-corrupt");
    corrupt_graph(&s, |b| b.clear());
    s.atlas(&["graph", "dump"])
        .failure(4, "atlas-graph-corrupt");
}

#[test]
fn flipped_payload_bytes_are_corrupt() {
    let s = Sandbox::with_fixture("rust");
    s.build_json();
    corrupt_graph(&s, |b| {
        let n = b.len();
        for i in (80..n).step_by(97) {
            b[i] ^= 0x5a;
        }
    });
    let run = s
        .atlas(&["graph", "dump"])
        .failure(4, "atlas-graph-corrupt");
    assert!(run.stderr.contains("checksum"), "{}", run.describe());
}

#[test]
fn flipped_bytes_with_a_recomputed_checksum_are_still_caught_by_validation() {
    // An adversarial file: valid header and checksum over a garbage archive.
    let s = Sandbox::with_fixture("rust");
    s.build_json();
    corrupt_graph(&s, |b| {
        let n = b.len();
        for byte in &mut b[n - 64..] {
            *byte = 0xff;
        }
        let checksum = blake3::hash(&b[64..]);
        b[24..56].copy_from_slice(checksum.as_bytes());
    });
    let run = s
        .atlas(&["graph", "dump"])
        .failure(4, "atlas-graph-corrupt");
    assert!(
        run.stderr.contains("archive validation"),
        "{}",
        run.describe()
    );
}

#[test]
fn bad_magic_is_corrupt_and_a_future_version_is_incompatible() {
    let s = Sandbox::with_fixture("rust");
    s.build_json();
    corrupt_graph(&s, |b| b[0] = b'X');
    s.atlas(&["graph", "dump"])
        .failure(4, "atlas-graph-corrupt");
    corrupt_graph(&s, |b| {
        b[0] = b'A';
        b[8..12].copy_from_slice(&99u32.to_le_bytes());
        b[12..16].copy_from_slice(&99u32.to_le_bytes());
    });
    let run = s
        .atlas(&["status", "--format", "json"])
        .failure(4, "atlas-graph-incompatible");
    assert_eq!(run.json()["error"]["code"], "atlas-graph-incompatible");
    // A newer file that declares this version can still read it is accepted.
    corrupt_graph(&s, |b| {
        b[8..12].copy_from_slice(&5u32.to_le_bytes());
        b[12..16].copy_from_slice(&4u32.to_le_bytes());
    });
    s.atlas(&["graph", "dump"]).success();
    // A format-4 root read as a single-file graph (version 3) is caught by validation.
    corrupt_graph(&s, |b| {
        b[8..12].copy_from_slice(&3u32.to_le_bytes());
        b[12..16].copy_from_slice(&1u32.to_le_bytes());
    });
    s.atlas(&["graph", "dump"])
        .failure(4, "atlas-graph-corrupt");
}

#[test]
fn a_failed_build_leaves_the_committed_generation_readable() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let committed = s.current();
    let dump_before = s.atlas(&["graph", "dump"]).success().stdout;
    s.write("shop/util.py", "def replaced():\n    return 2\n");
    for point in ["after-extract", "before-publish"] {
        s.atlas_env(&["build"], &[("ATLAS_INJECT_FAILURE", point)])
            .failure(1, "atlas-build-injected-failure");
        assert_eq!(
            s.current(),
            committed,
            "CURRENT moved after failure at {point}"
        );
        assert_eq!(s.atlas(&["graph", "dump"]).success().stdout, dump_before);
    }
    // The next build succeeds and cleans the abandoned staging directory.
    let report = s.build_json();
    assert_ne!(report["fingerprint"].as_str().unwrap(), committed);
    let staging = s.graph().join(".staging");
    let leftovers = std::fs::read_dir(&staging).map(|d| d.count()).unwrap_or(0);
    assert_eq!(leftovers, 0, "staging is empty after a successful build");
}

#[test]
fn a_build_that_fails_while_its_memo_is_written_leaves_no_temporary_file() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    s.write("shop/util.py", "def replaced():\n    return 2\n");
    // Publication fails while the resolution memo's writer waits before its rename.
    s.atlas_env(
        &["build"],
        &[("ATLAS_INJECT_FAILURE", "slow-memo-write,before-publish")],
    )
    .failure(1, "atlas-build-injected-failure");
    let temporary: Vec<String> = std::fs::read_dir(s.graph())
        .unwrap()
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".tmp"))
        .collect();
    assert!(temporary.is_empty(), "left behind: {temporary:?}");
    let report = s.build_json();
    assert_eq!(report["unchanged"], false);
}

#[test]
fn a_killed_build_leftover_does_not_block_the_next_build() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let orphan = s.graph().join(".staging/4242");
    std::fs::create_dir_all(&orphan).unwrap();
    std::fs::write(orphan.join("graph.atlas"), b"half-written").unwrap();
    s.write("shop/util.py", "def other():\n    return 3\n");
    s.build_json();
    assert!(!orphan.exists());
}

#[test]
fn a_concurrent_build_is_refused_while_the_lock_is_held() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let store = atlas::build::store::Store::new(s.graph());
    let lock = store.lock(false).expect("lock is free");
    let run = s
        .atlas(&["build", "--format", "json"])
        .failure(5, "atlas-build-locked");
    assert_eq!(run.json()["error"]["code"], "atlas-build-locked");
    // Readers never block on builds.
    s.atlas(&["status"]).success();
    drop(lock);
    s.atlas(&["build"]).success();
}

#[test]
fn golden_graphs_of_every_format_still_open() {
    // Every released format version keeps its golden file; this build reads them all.
    for version in 1..=atlas::graph::format::FORMAT_VERSION {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("tests/golden/v{version}"));
        let graph = atlas::graph::reader::Graph::open(&dir.join("python.graph.atlas"))
            .unwrap_or_else(|e| panic!("v{version} golden opens: {e}"));
        assert_eq!(graph.format_version(), version);
        let expected = std::fs::read_to_string(dir.join("python.dump.txt")).unwrap();
        assert_eq!(atlas::graph::dump::dump(&graph), expected, "v{version}");
    }
}

#[test]
fn an_unreadable_committed_generation_is_rebuilt_by_the_next_build_or_query() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let committed = s.current();
    corrupt_graph(&s, |b| b.truncate(b.len() / 3));
    // A frozen read reports it; a build with the same inputs replaces it.
    s.atlas(&["context", "checkout", "--profile", "symbol", "--frozen"])
        .failure(4, "atlas-graph-corrupt");
    let report = s.build_json();
    assert_eq!(
        report["unchanged"], false,
        "a corrupt generation is not `unchanged`"
    );
    assert_eq!(s.current(), committed, "same inputs, same fingerprint");
    s.atlas(&["graph", "dump"]).success();
    // A non-frozen query rebuilds it too.
    corrupt_graph(&s, |b| b[100] ^= 0xff);
    assert_a_query_refreshes(&s);
}

/// A non-frozen query answers, and says it rebuilt the graph first.
#[track_caller]
fn assert_a_query_refreshes(s: &Sandbox) {
    let out = s
        .atlas(&[
            "context",
            "checkout",
            "--profile",
            "symbol",
            "--format",
            "json",
        ])
        .success()
        .json();
    assert_eq!(out["receipt"]["refreshed"], true);
}

/// The committed generation's files under `segments/` whose name ends with `extension`
/// (`.atlas`: segments; `.cross`: their cross parts, format 5), sorted.
fn segment_files(s: &Sandbox, extension: &str) -> Vec<std::path::PathBuf> {
    let dir = s.graph_file().parent().unwrap().join("segments");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(extension))
        .collect();
    files.sort();
    files
}

#[test]
fn a_damaged_or_missing_segment_or_cross_part_is_corrupt_and_rebuilt() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let committed = s.current();
    let dump = s.atlas(&["graph", "dump"]).success().stdout;
    for extension in [".atlas", ".cross"] {
        let files = segment_files(&s, extension);
        assert!(files.len() >= 2, "modules and files: {files:?}");

        // A flipped byte: its checksum no longer holds.
        let mut bytes = std::fs::read(&files[1]).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0x55;
        std::fs::write(&files[1], &bytes).unwrap();
        let run = s
            .atlas(&["graph", "dump"])
            .failure(4, "atlas-graph-corrupt");
        assert!(run.stderr.contains("checksum"), "{}", run.describe());
        let report = s.build_json();
        assert_eq!(
            report["unchanged"], false,
            "a damaged generation is rebuilt ({extension})"
        );
        assert_eq!(s.current(), committed);
        assert_eq!(s.atlas(&["graph", "dump"]).success().stdout, dump);

        // A file that is gone: corrupt, named as such, and rebuilt by a query.
        std::fs::remove_file(&segment_files(&s, extension)[0]).unwrap();
        let run = s
            .atlas(&["graph", "dump"])
            .failure(4, "atlas-graph-corrupt");
        assert!(run.stderr.contains("missing"), "{}", run.describe());
        assert_a_query_refreshes(&s);
        assert_eq!(s.atlas(&["graph", "dump"]).success().stdout, dump);
    }
}

/// The manifest of the committed generation, rewritten by `edit`.
fn edit_manifest(s: &Sandbox, edit: impl FnOnce(&mut serde_json::Value)) {
    let path = s
        .graph()
        .join("generations")
        .join(s.current())
        .join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut manifest);
    std::fs::write(&path, serde_json::to_string(&manifest).unwrap()).unwrap();
}

#[test]
fn a_generation_built_by_another_atlas_is_rebuilt_by_the_next_read() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let status = s.atlas(&["status", "--format", "json"]).success().json();
    assert_eq!(status["staleness"]["builder_changed"], false);
    // Another extractor or resolver built it: sources are unchanged, the graph is not.
    edit_manifest(&s, |m| m["builder"] = "0000000000000000".into());
    let status = s.atlas(&["status", "--format", "json"]).success().json();
    assert_eq!(status["staleness"]["builder_changed"], true);
    assert_eq!(status["staleness"]["stale"], true);
    let text = s.atlas(&["status"]).success().stdout;
    assert!(text.contains("built by another atlas version"), "{text}");
    // A frozen read answers from it as it is; a normal read rebuilds it first.
    s.atlas(&["context", "checkout", "--profile", "symbol", "--frozen"])
        .success();
    assert_a_query_refreshes(&s);
    let status = s.atlas(&["status", "--format", "json"]).success().json();
    assert_eq!(status["staleness"]["stale"], false, "{status:#}");
}

#[test]
fn a_manifest_written_before_builder_ids_is_judged_by_its_extractor() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    // An older manifest has no `builder`: the same extractor means fresh, no rebuild loop.
    edit_manifest(&s, |m| {
        m.as_object_mut().unwrap().remove("builder");
    });
    let status = s.atlas(&["status", "--format", "json"]).success().json();
    assert_eq!(status["staleness"]["stale"], false, "{status:#}");
    edit_manifest(&s, |m| m["extractor_version"] = 1.into());
    let status = s.atlas(&["status", "--format", "json"]).success().json();
    assert_eq!(status["staleness"]["builder_changed"], true);
}

#[test]
fn an_unreadable_manifest_is_rebuilt_once_not_in_a_loop() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let path = s
        .graph()
        .join("generations")
        .join(s.current())
        .join("manifest.json");
    std::fs::write(&path, b"{ not json").unwrap();
    let first = s
        .atlas(&[
            "context",
            "checkout",
            "--profile",
            "symbol",
            "--format",
            "json",
        ])
        .success()
        .json();
    assert_eq!(first["receipt"]["refreshed"], true);
    let second = s
        .atlas(&[
            "context",
            "checkout",
            "--profile",
            "symbol",
            "--format",
            "json",
        ])
        .success()
        .json();
    assert_eq!(second["receipt"]["refreshed"], false, "{second:#}");
}

#[test]
fn a_files_frontier_found_by_binary_search_is_the_one_a_walk_finds() {
    // `frontier_in_file` searches a part's entries by file instead of walking the
    // frontier (flow's runtime boundaries); over several segments, and for every file,
    // it must return exactly the entries a walk keeps, in the same order.
    let s = Sandbox::with_fixture("python");
    for dir in ["a", "b"] {
        for i in 0..70 {
            s.write(
                &format!("bulk/{dir}/m{i}.py"),
                format!("def f_{dir}_{i}(x):\n    unknown_{i}(x)\n    return requests.get(x)\n"),
            );
        }
    }
    s.atlas(&["build", "--no-progress"]).success();
    let graph = atlas::graph::reader::Graph::open(&s.graph_file()).unwrap();
    assert!(graph.segment_count() >= 3, "{}", graph.segment_count());
    let key = |(index, entry): (u32, atlas::graph::reader::FrontierRef<'_>)| {
        (index, entry.from(), graph.str(entry.name()).to_string())
    };
    let mut seen = 0;
    for file in graph.files() {
        let walked: Vec<_> = graph
            .frontier_entries()
            .filter(|(_, e)| e.file() == file)
            .map(key)
            .collect();
        let searched: Vec<_> = graph.frontier_in_file(file).map(key).collect();
        assert_eq!(searched, walked, "{}", graph.file_path(file));
        seen += walked.len();
    }
    assert_eq!(seen, graph.frontier_count());
    assert!(seen >= 140, "{seen}");
}

#[test]
fn a_files_class_read_alone_is_the_class_its_record_holds() {
    // `file_class` reads a file's class without its record's other fields (a walk asks
    // it of thousands of files); over several segments it must agree with `file`.
    use atlas::graph::codes::FileClass;
    let s = Sandbox::with_fixture("python");
    for i in 0..70 {
        s.write(
            &format!("bulk/m{i}.py"),
            format!("def f_{i}(x):\n    return x\n"),
        );
        s.write(
            &format!("tests/test_m{i}.py"),
            format!("def test_f_{i}():\n    assert f_{i}(1) == 1\n"),
        );
    }
    s.atlas(&["build", "--no-progress"]).success();
    let graph = atlas::graph::reader::Graph::open(&s.graph_file()).unwrap();
    assert!(graph.segment_count() >= 3, "{}", graph.segment_count());
    let mut classes = std::collections::BTreeMap::new();
    for file in graph.files() {
        let recorded = graph.file(file).and_then(|f| FileClass::from_code(f.class));
        assert_eq!(
            graph.file_class(file),
            recorded,
            "{}",
            graph.file_path(file)
        );
        *classes.entry(format!("{recorded:?}")).or_insert(0) += 1;
    }
    assert_eq!(graph.file_class(atlas::graph::ids::FileId::NONE), None);
    assert!(
        classes.get("Some(Test)").is_some_and(|&n| n >= 70),
        "{classes:?}"
    );
    assert!(
        classes.get("Some(Source)").is_some_and(|&n| n >= 70),
        "{classes:?}"
    );
}
