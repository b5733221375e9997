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
use common::{Run, Sandbox};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

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
    /// A copy of the committed generation (root and segments) in `dir`, with `edits`
    /// applied to the root (`target` 0) or to one segment or cross part, and every checksum
    /// recomputed: a mutated file is renamed to its new hash and re-named in the root, so that the
    /// mutation reaches the archive checks instead of stopping at a hash. The root's path.
    fn mutated_generation(&self, dir: &Path, target: usize, edits: &[(usize, u8)]) -> PathBuf {
        let root_path = self.sandbox.graph_file();
        let from = root_path.parent().unwrap().join("segments");
        let to = dir.join("segments");
        std::fs::create_dir_all(&to).unwrap();
        let mut names: Vec<PathBuf> = std::fs::read_dir(&from)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        names.sort();
        for name in &names {
            std::fs::copy(name, to.join(name.file_name().unwrap())).unwrap();
        }
        let mut root = std::fs::read(&root_path).unwrap();
        if target.is_multiple_of(names.len() + 1) {
            mutate(&mut root, 64, edits);
        } else {
            let name = &names[target % (names.len() + 1) - 1];
            let mut bytes = std::fs::read(name).unwrap();
            let old: [u8; 32] = bytes[24..56].try_into().unwrap();
            mutate(&mut bytes, 64, edits);
            let new = *blake3::hash(&bytes[64..]).as_bytes();
            bytes[24..56].copy_from_slice(&new);
            std::fs::remove_file(to.join(name.file_name().unwrap())).unwrap();
            // A segment (`.atlas`) or a cross part (`.cross`) keeps its kind.
            let extension = name.extension().unwrap().to_string_lossy();
            let renamed = to.join(format!("{}.{extension}", blake3::Hash::from(new).to_hex()));
            std::fs::write(renamed, &bytes).unwrap();
            let at = root
                .windows(32)
                .skip(64)
                .position(|w| w == old)
                .expect("the root names its segment")
                + 64;
            root[at..at + 32].copy_from_slice(&new);
        }
        let checksum = blake3::hash(&root[64..]);
        root[24..56].copy_from_slice(checksum.as_bytes());
        let path = dir.join("graph.atlas");
        std::fs::write(&path, &root).unwrap();
        path
    }

    fn segment_count(&self) -> usize {
        let root = self.sandbox.graph_file();
        std::fs::read_dir(root.parent().unwrap().join("segments"))
            .unwrap()
            .count()
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

/// The properties below only reach the code under test when their checksum rewriting is
/// right; otherwise every case stops at the checksum and passes vacuously. Unmutated
/// artefacts with a recomputed checksum must load, and a mutation without one must not.
#[test]
fn the_mutation_harness_reaches_past_the_checksums() {
    let b = built();
    let segments = b.segment_count();
    assert!(
        segments >= 2,
        "the fixture has modules and files: {segments} segments"
    );
    for target in 0..=segments {
        let temp = tempfile::tempdir().unwrap();
        // No edit: every copy with its checksums recomputed opens.
        let path = b.mutated_generation(temp.path(), target, &[]);
        assert!(Graph::open(&path).is_ok(), "a recomputed checksum opens");
        // An edit the root's checksum does not cover is caught.
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        assert!(Graph::open(&path).is_err(), "a stale checksum is caught");
    }
    // A segment edited under its name is caught, even with its checksum recomputed.
    let temp = tempfile::tempdir().unwrap();
    let path = b.mutated_generation(temp.path(), 0, &[]);
    let segment = std::fs::read_dir(temp.path().join("segments"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut bytes = std::fs::read(&segment).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    let checksum = blake3::hash(&bytes[64..]);
    bytes[24..56].copy_from_slice(checksum.as_bytes());
    std::fs::write(&segment, &bytes).unwrap();
    assert!(
        Graph::open(&path).is_err(),
        "a segment that is not the one its root names is refused"
    );

    let entry = cache_entries(&b.sandbox.graph()).remove(0);
    let mut bytes = std::fs::read(&entry).unwrap();
    reseal(&mut bytes);
    let store = atlas::build::store::Store::new(temp.path());
    let name = entry.file_name().unwrap().to_string_lossy().to_string();
    let shard = entry
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    let key =
        blake3::Hash::from_hex(format!("{shard}{}", name.trim_end_matches(".facts"))).unwrap();
    let cached = temp.path().join("cache").join(&shard);
    std::fs::create_dir_all(&cached).unwrap();
    std::fs::write(cached.join(&name), &bytes).unwrap();
    assert!(matches!(
        store.load_facts(&key),
        atlas::build::store::CachedFacts::Hit(_)
    ));
}

/// One damaged fact cache entry (`edits` to the entry `index` picks, its checksums
/// recomputed when `rehash`): read whole and lazily, trusted alike, and resolved without
/// a panic, to the same graph either way.
fn damaged_cache_entry_case(
    index: usize,
    edits: &[(usize, u8)],
    rehash: bool,
) -> Result<(), TestCaseError> {
    let b = built();
    let entries = cache_entries(&b.sandbox.graph());
    let entry = &entries[index % entries.len()];
    let mut bytes = std::fs::read(entry).unwrap();
    mutate(&mut bytes, FACT_HEADER, edits);
    if rehash {
        // Parts altered with their checksums recomputed: only validation stands.
        reseal(&mut bytes);
    }
    let temp = tempfile::tempdir().unwrap();
    let store = atlas::build::store::Store::new(temp.path());
    let name = entry.file_name().unwrap().to_string_lossy().to_string();
    let shard = entry
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    let key =
        blake3::Hash::from_hex(format!("{shard}{}", name.trim_end_matches(".facts"))).unwrap();
    std::fs::create_dir_all(temp.path().join("cache").join(&shard)).unwrap();
    std::fs::write(temp.path().join("cache").join(&shard).join(&name), &bytes).unwrap();
    let whole = store.load_facts(&key);
    let lazy = store.load_facts_lazily(&key);
    // Both reads trust the same entries: the lazy one checks its head when it reads
    // it and its body when it decodes it, as the whole one checks both.
    let lazy_trusted = match &lazy {
        atlas::build::store::Cached::Hit((_, lazy)) => {
            lazy.references();
            lazy.damage().is_none()
        }
        _ => false,
    };
    prop_assert_eq!(
        matches!(whole, atlas::build::store::Cached::Hit(_)),
        lazy_trusted
    );
    if let atlas::build::store::CachedFacts::Hit(facts) = whole {
        let units = [atlas::build::resolve::SourceUnit {
            path: "a.py",
            language: Some(Language::Python),
            facts: Some(&facts),
            lazy: None,
        }];
        let crates = atlas::build::resolve::RustCrates::default();
        let resolved = atlas::build::resolve::resolve(&units, &crates, None);
        if let atlas::build::store::Cached::Hit((head, lazy)) = lazy {
            prop_assert_eq!(lazy.references(), facts.refs.as_slice());
            prop_assert_eq!(lazy.bindings(), facts.bindings.as_slice());
            let units = [atlas::build::resolve::SourceUnit {
                path: "a.py",
                language: Some(Language::Python),
                facts: Some(&head),
                lazy: Some(&lazy),
            }];
            let again = atlas::build::resolve::resolve(&units, &crates, None);
            prop_assert_eq!(&again.nodes, &resolved.nodes);
            prop_assert_eq!(&again.edges, &resolved.edges);
            prop_assert_eq!(&again.frontier, &resolved.frontier);
            prop_assert_eq!(again.external_references, resolved.external_references);
        }
    }
    Ok(())
}

/// A binding's value scope out of range (found by the fuzz case below, in CI): the entry
/// is damaged, never indexed past the definitions by the resolver.
#[test]
fn a_binding_value_scope_out_of_range_is_damage_not_a_panic() {
    damaged_cache_entry_case(11971945883791992896, &[(2119954069256325836, 4)], true).unwrap();
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn graph_files_with_a_recomputed_checksum_never_panic(
        target in any::<usize>(),
        edits in mutations(),
    ) {
        let b = built();
        let temp = tempfile::tempdir().unwrap();
        let path = b.mutated_generation(temp.path(), target, &edits);
        if let Ok(graph) = Graph::open(&path) {
            exercise(&graph, &b.sandbox.repo());
        }
    }

    #[test]
    fn heads_pack_heads_never_panic_the_resolver(
        edits in mutations(),
        rehash in any::<bool>(),
    ) {
        let b = built();
        let graph = b.sandbox.graph();
        let mut bytes = std::fs::read(graph.join("cache").join("heads.pack")).unwrap();
        mutate(&mut bytes, PACK_HEADER, &edits);
        if rehash {
            // Heads altered with the checksum recomputed: only validation stands.
            reseal_pack(&mut bytes);
        }
        let temp = tempfile::tempdir().unwrap();
        let mut keys = Vec::new();
        for entry in cache_entries(&graph) {
            let name = entry.file_name().unwrap().to_string_lossy().to_string();
            let shard = entry.parent().unwrap().file_name().unwrap().to_string_lossy().to_string();
            keys.push(blake3::Hash::from_hex(format!("{shard}{}", name.trim_end_matches(".facts"))).unwrap());
            std::fs::create_dir_all(temp.path().join("cache").join(&shard)).unwrap();
            std::fs::copy(&entry, temp.path().join("cache").join(&shard).join(&name)).unwrap();
        }
        std::fs::write(temp.path().join("cache").join("heads.pack"), &bytes).unwrap();
        let store = atlas::build::store::Store::new(temp.path());
        for key in &keys {
            let atlas::build::store::Cached::Hit((head, lazy)) = store.load_facts_lazily(key) else {
                return Err(TestCaseError::fail("an intact entry stands behind a damaged pack"));
            };
            if !rehash {
                // Without recomputed checksums a damaged head is never used: what the
                // pack gives is the entry's head.
                let atlas::build::store::CachedFacts::Hit(whole) = store.load_facts(key) else {
                    return Err(TestCaseError::fail("the entries are intact"));
                };
                prop_assert_eq!(&head.defs, &whole.defs);
                prop_assert_eq!(&head.imports, &whole.imports);
            }
            let units = [atlas::build::resolve::SourceUnit {
                path: "a.py",
                language: Some(Language::Python),
                facts: Some(&head),
                lazy: Some(&lazy),
            }];
            atlas::build::resolve::resolve(&units, &Default::default(), None);
        }
    }

    #[test]
    fn fact_cache_entries_never_panic_the_resolver(
        index in any::<usize>(),
        edits in mutations(),
        rehash in any::<bool>(),
    ) {
        damaged_cache_entry_case(index, &edits, rehash)?;
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
        target in 0u8..4,
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
            3 => files_ending(&dir, ".pack").remove(0),
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
            false,
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
        let _ = atlas::query::intent::parse(&graph, &atlas::query::crates::Crates::of(&graph, &root), &query);
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

/// Garbage a shell can pass as one argument (argv cannot hold a NUL byte; files can, below).
const GARBAGE: [&str; 12] = [
    "",
    "\u{1}\u{2}",
    "}}}{{{((",
    "class def fn func (",
    "\u{feff}é😀 \n\t",
    "--",
    "-x",
    "../../../../etc/passwd",
    "../../../../etc/passwd#L1-L1@00",
    "nope.py#L1-L2@deadbeef",
    "shop/util.py#L9-L1@zz",
    "a.b.c::d > e # f @ g",
];

/// Source files no parser can make sense of, written under every extracted extension.
const GARBAGE_SOURCES: [&str; 6] = [
    "",
    "\u{0}\u{1}",
    "}}}{{{((",
    "class def fn func (",
    "\u{feff}é😀 \n\t",
    "\u{fffd}\u{fffd}\u{fffd}",
];

const EXTENSIONS: [&str; 7] = ["rs", "py", "ts", "tsx", "js", "go", "java"];

/// The exit code docs/CLI.md ("Errors and exit codes") gives an error code.
fn contract_exit(code: &str) -> Option<i32> {
    Some(match code {
        "atlas-io"
        | "atlas-internal"
        | "atlas-query-invalid"
        | "atlas-cache-corrupt"
        | "atlas-build-injected-failure" => 1,
        "atlas-invalid-input" => 2,
        "atlas-code-missing" | "atlas-graph-missing" | "atlas-search-unavailable" => 3,
        "atlas-graph-corrupt"
        | "atlas-graph-incompatible"
        | "atlas-scip-corrupt"
        | "atlas-search-corrupt" => 4,
        "atlas-build-locked" => 5,
        "atlas-build-strict-partial" => 6,
        "atlas-context-no-match" | "atlas-context-ambiguous" => 7,
        "atlas-context-required-budget"
        | "atlas-context-required-candidate-cap"
        | "atlas-context-required-source-cap" => 8,
        "atlas-context-graph-mismatch"
        | "atlas-context-cursor"
        | "atlas-expand-stale"
        | "atlas-ref-unknown" => 9,
        "atlas-eval-failed" => 10,
        "atlas-broken-pipe" => 141,
        _ => return None,
    })
}

/// A correct answer (exit 0, JSON on stdout) or a typed error: `error[atlas-…]` on stderr,
/// the exit code the contract gives that code, the same code and exit in the JSON envelope
/// on stdout, and never a panic (exit 101, `panicked at`). Returns the error code, if any.
#[track_caller]
fn typed_outcome(run: &Run) -> Option<String> {
    assert!(
        run.code != 101 && !run.stderr.contains("panicked at"),
        "a panic:\n{}",
        run.describe()
    );
    if run.code == 0 {
        run.json();
        return None;
    }
    let code = run
        .stderr
        .split_once("error[")
        .and_then(|(_, rest)| rest.split_once(']'))
        .map(|(code, _)| code.to_string())
        .unwrap_or_else(|| panic!("no `error[…]` on stderr:\n{}", run.describe()));
    assert_eq!(
        Some(run.code),
        contract_exit(&code),
        "`{code}` exits as the contract says:\n{}",
        run.describe()
    );
    assert_eq!(run.error().code, code, "{}", run.describe());
    Some(code)
}

#[test]
fn garbage_input_never_panics_the_cli() {
    // Garbage source in every language is skipped or compiled, never fatal to the build.
    let s = Sandbox::with_fixture("python");
    for (i, source) in GARBAGE_SOURCES.iter().enumerate() {
        for ext in EXTENSIONS {
            s.write(&format!("garbage/g{i}.{ext}"), source);
        }
    }
    let written = GARBAGE_SOURCES.len() * EXTENSIONS.len();
    let build = s.call("build").json().run();
    assert_eq!(typed_outcome(&build), None, "{}", build.describe());
    // Every file is accounted for: compiled (perhaps partially) or skipped with a reason.
    let report: common::BuildOut = build.parse();
    let fixture_files = files_ending(&common::fixture("python"), "").len();
    assert_eq!(
        report.files + report.skipped.len(),
        fixture_files + written,
        "{}",
        build.stdout
    );
    assert!(
        report
            .skipped
            .iter()
            .all(|f| f.path.starts_with("garbage/") && !f.reason.is_empty()),
        "{}",
        build.stdout
    );
    // Garbage arguments to every reading command: an answer or a typed error, each.
    let mut outcomes = Vec::new();
    for input in GARBAGE {
        // The input comes last, so that `--` or `-x` cannot swallow `--format json`.
        let runs = [
            s.call("context").profile("flow").frozen().json().arg(input),
            s.call("search").frozen().json().arg(input),
            s.call("expand").json().arg(input),
        ]
        .map(|call| call.run());
        for run in &runs {
            // What the process was given: its subcommand and, last, the input itself.
            let given = (run.argv[3].clone(), run.argv.last().unwrap().clone());
            outcomes.push((given, typed_outcome(run)));
        }
    }
    // Every input reached every command, unaltered (an empty argument included).
    for command in ["context", "search", "expand"] {
        let inputs: Vec<&str> = outcomes
            .iter()
            .filter(|((c, _), _)| c == command)
            .map(|((_, input), _)| input.as_str())
            .collect();
        assert_eq!(inputs, GARBAGE, "{command}");
    }
    // Both kinds of outcome occur, so neither branch of `typed_outcome` is dead.
    assert!(
        outcomes.iter().any(|(_, o)| o.is_none()) && outcomes.iter().any(|(_, o)| o.is_some()),
        "{outcomes:#?}"
    );
}

/// A fact cache entry's header (version 2): `magic(8) version(4) reserved(4) key(32)
/// blake3(head)(32) head-length(8) blake3(body)(32) body-length(8)`; the head is padded to
/// 16 bytes.
const FACT_HEADER: usize = 128;
const PACK_HEADER: usize = 64;

/// Recomputes a heads pack's checksum (over everything after its header).
fn reseal_pack(bytes: &mut [u8]) {
    let hash = blake3::hash(&bytes[PACK_HEADER..]);
    bytes[32..64].copy_from_slice(hash.as_bytes());
}

/// Recomputes an entry's checksums over its parts, as far as its lengths allow.
fn reseal(bytes: &mut [u8]) {
    let word = |bytes: &[u8], at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    let head_len = word(bytes, 80) as usize;
    let head_end = FACT_HEADER.saturating_add(head_len).min(bytes.len());
    let head = blake3::hash(&bytes[FACT_HEADER.min(head_end)..head_end]);
    bytes[48..80].copy_from_slice(head.as_bytes());
    let body_at = FACT_HEADER
        .saturating_add(head_len.checked_next_multiple_of(16).unwrap_or(usize::MAX))
        .min(bytes.len());
    let body = blake3::hash(&bytes[body_at..]);
    bytes[88..120].copy_from_slice(body.as_bytes());
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
