//! Fuzzing on stable Rust (issue 10): property tests that mutate valid artefacts — graph
//! files with their checksum recomputed, fact-cache entries, SCIP protobufs, vectors and
//! search-index metadata — and feed arbitrary queries, refs and source text, checking
//! "a typed error or a correct answer, never a panic" (a panic fails the property).
//!
//! `cargo test` runs a bounded number of cases per target (`ATLAS_FUZZ_CASES`, default
//! 32); `bench/fuzz.sh` runs long campaigns of one target at a time.

mod common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use atlas::graph::reader::Graph;
use atlas::query::context::{ContextRequest, OpenGraph, compile_context};
use atlas::query::profile::ProfileName;
use atlas::syntax::lang::Language;
use common::Sandbox;
use proptest::prelude::*;

fn config() -> ProptestConfig {
    let cases = std::env::var("ATLAS_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(32);
    ProptestConfig {
        cases,
        // Mutations are cheap to find again; shrinking is what makes failures readable.
        max_shrink_iters: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// A built fixture shared by the properties of one process (read-only after the build).
struct Built {
    sandbox: Sandbox,
}

impl Built {
    fn graph_bytes(&self) -> Vec<u8> {
        std::fs::read(self.sandbox.graph_file()).unwrap()
    }
}

fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let sandbox = Sandbox::with_fixture("mixed");
        sandbox.build_json();
        Built { sandbox }
    })
}

/// `(offset, xor)` pairs applied to a byte buffer (offsets wrap around its length).
fn mutations() -> impl Strategy<Value = Vec<(usize, u8)>> {
    prop::collection::vec((any::<usize>(), 1u8..=255), 1..12)
}

fn mutate(bytes: &mut [u8], from: usize, edits: &[(usize, u8)]) {
    let span = bytes.len() - from;
    for &(at, xor) in edits {
        bytes[from + at % span] ^= xor;
    }
}

/// Every read the query side does on an open graph, on every profile.
fn exercise(graph: &Graph, root: &Path) {
    let _ = atlas::graph::dump::dump(graph);
    let fingerprint = graph.fingerprint();
    let open = OpenGraph {
        graph,
        fingerprint: &fingerprint,
        code_root: root,
        refreshed: false,
        stale: None,
        freshness_ms: 0.0,
        started: std::time::Instant::now(),
    };
    for profile in [
        ProfileName::Symbol,
        ProfileName::Flow,
        ProfileName::Architecture,
        ProfileName::Impact,
    ] {
        for query in [
            "HttpTransport.send",
            "overview",
            "ping handler calls",
            "web/src",
        ] {
            let _ = compile_context(&open, &ContextRequest::new(query, profile), None);
        }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn graph_files_with_a_recomputed_checksum_never_panic(edits in mutations()) {
        let b = built();
        let mut bytes = b.graph_bytes();
        mutate(&mut bytes, 64, &edits);
        let checksum = blake3::hash(&bytes[64..]);
        bytes[24..56].copy_from_slice(checksum.as_bytes());
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("graph.atlas");
        std::fs::write(&path, &bytes).unwrap();
        if let Ok(graph) = Graph::open(&path) {
            exercise(&graph, &b.sandbox.repo());
        }
    }

    #[test]
    fn fact_cache_entries_never_panic_the_resolver(
        index in any::<usize>(),
        edits in mutations(),
        rehash in any::<bool>(),
    ) {
        let b = built();
        let entries = cache_entries(&b.sandbox.graph());
        let entry = &entries[index % entries.len()];
        let mut bytes = std::fs::read(entry).unwrap();
        mutate(&mut bytes, 96, &edits);
        if rehash {
            // A payload altered with its checksum recomputed: only validation stands.
            let checksum = blake3::hash(&bytes[96..]);
            bytes[48..80].copy_from_slice(checksum.as_bytes());
        }
        let temp = tempfile::tempdir().unwrap();
        let store = atlas::build::store::Store::new(temp.path());
        let name = entry.file_name().unwrap().to_string_lossy().to_string();
        let shard = entry.parent().unwrap().file_name().unwrap().to_string_lossy().to_string();
        let key = blake3::Hash::from_hex(format!("{shard}{}", name.trim_end_matches(".facts"))).unwrap();
        std::fs::create_dir_all(temp.path().join("cache").join(&shard)).unwrap();
        std::fs::write(temp.path().join("cache").join(&shard).join(&name), &bytes).unwrap();
        if let atlas::build::store::CachedFacts::Hit(facts) = store.load_facts(&key) {
            let units = [atlas::build::resolve::SourceUnit {
                path: "a.py",
                language: Some(Language::Python),
                facts: Some(&facts),
            }];
            let _ = atlas::build::resolve::resolve(&units, None);
        }
    }

    #[test]
    fn scip_indexes_never_panic(python in any::<bool>(), edits in mutations(), cut in any::<usize>()) {
        let name = if python { "python.scip" } else { "typescript.scip" };
        let source = common::fixture("scip").join(name);
        let mut bytes = std::fs::read(source).unwrap();
        mutate(&mut bytes, 0, &edits);
        if cut % 3 == 0 {
            bytes.truncate(cut % (bytes.len() + 1));
        }
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("index.scip");
        std::fs::write(&path, &bytes).unwrap();
        let _ = atlas::build::scip::ingest(&[path], &|_| true, &|_| Some(String::from("x = 1\n")));
    }

    #[test]
    fn vectors_and_index_metadata_never_panic_a_search(
        target in 0u8..3,
        edits in mutations(),
        query in any::<String>(),
    ) {
        let b = built();
        let temp = tempfile::tempdir().unwrap();
        let graph_dir = temp.path().join("graph");
        common::copy_dir(&b.sandbox.graph(), &graph_dir);
        let store = atlas::build::store::Store::new(&graph_dir);
        let dir = graph_dir.join("search").join(b.sandbox.current());
        let file = match target {
            0 => files_ending(&dir, ".bin").remove(0),
            1 => dir.join("index.json"),
            _ => dir.join("sections.json"),
        };
        let mut bytes = std::fs::read(&file).unwrap();
        mutate(&mut bytes, 0, &edits);
        std::fs::write(&file, &bytes).unwrap();
        let graph = Graph::open(&store.graph_path(&b.sandbox.current())).unwrap();
        let config = atlas::config::Config::default();
        let embedder = atlas::query::search::embed::Embedder::load(&config.embed).unwrap();
        let _ = atlas::query::search::SearchIndex::query(
            &store,
            &b.sandbox.current(),
            &graph,
            &b.sandbox.repo(),
            &embedder,
            true,
            &query,
            10,
            &config,
        );
    }

    #[test]
    fn arbitrary_queries_and_refs_never_panic(query in any::<String>(), reference in any::<String>()) {
        let b = built();
        let store = atlas::build::store::Store::new(b.sandbox.graph());
        let (fingerprint, graph) = store.open_current().unwrap();
        let root = b.sandbox.repo();
        let open = OpenGraph {
            graph: &graph,
            fingerprint: &fingerprint,
            code_root: &root,
            refreshed: false,
            stale: None,
            freshness_ms: 0.0,
            started: std::time::Instant::now(),
        };
        for profile in [ProfileName::Symbol, ProfileName::Flow, ProfileName::Impact] {
            let _ = compile_context(&open, &ContextRequest::new(query.clone(), profile), None);
        }
        let _ = atlas::query::intent::parse(&graph, &query);
        let _ = atlas::query::expand::expand(&graph, &root, std::slice::from_ref(&reference), true);
        let _ = ContextRequest::from_argv(&[String::from("atlas"), String::from("context"), query, reference]);
    }

    #[test]
    fn source_text_of_every_language_never_panics_extraction(
        bytes in prop::collection::vec(any::<u8>(), 0..4096),
        nesting in 0usize..2000,
    ) {
        let text = String::from_utf8_lossy(&bytes);
        let nested = format!("{}{text}{}", "(".repeat(nesting), ")".repeat(nesting));
        for language in Language::ALL {
            for source in [text.as_ref(), nested.as_str()] {
                let facts = atlas::syntax::extract::extract(language, source).unwrap();
                prop_assert!(facts.validate().is_ok(), "{language:?}: {:?}", facts.validate());
            }
        }
    }
}

fn cache_entries(graph: &Path) -> Vec<PathBuf> {
    let mut out = files_ending(&graph.join("cache"), ".facts");
    out.sort();
    out
}

fn files_ending(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_ending(&path, suffix));
        } else if path.to_string_lossy().ends_with(suffix) {
            out.push(path);
        }
    }
    out
}
