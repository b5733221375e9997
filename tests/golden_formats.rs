//! Golden files of the formats besides the graph (issue 12): every landed version of the
//! generation manifest, the search index metadata, the vector file and the build's caches
//! (fact cache entries, the heads pack, `resolution.bin`) stays in
//! tests/golden/ and is still read by this build — or, once a newer version replaces
//! it, refused with a typed answer (the index is rebuilt), never misread.

mod common;

use std::path::{Path, PathBuf};

use atlas::build::manifest::{MANIFEST_VERSION, Manifest};
use atlas::query::search::embed::Embedder;
use atlas::query::search::index::{
    INDEX_VERSION, IndexMeta, VECTOR_FORMAT, checksum, pack_name, parse_pack_header,
    parse_vector_table, vector_checksum_ok,
};

fn golden(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(relative)
}

#[test]
fn manifests_of_every_version_are_read() {
    // Version 1 had neither `manifest_version` nor `builder`: its builder is judged by
    // its extractor version.
    let v1: Manifest =
        serde_json::from_slice(&std::fs::read(golden("manifest/v1.json")).unwrap()).unwrap();
    assert_eq!((v1.manifest_version, v1.builder.as_deref()), (1, None));
    assert_eq!((v1.files, v1.symbols, v1.edges), (6, 21, 51));
    assert_eq!(v1.artifacts["graph.atlas"].bytes, 9528);
    let v2: Manifest =
        serde_json::from_slice(&std::fs::read(golden("manifest/v2.json")).unwrap()).unwrap();
    assert_eq!(v2.manifest_version, 2);
    assert_eq!(
        MANIFEST_VERSION, 2,
        "a new manifest version keeps this golden file"
    );
    assert!(v2.builder.as_deref().is_some_and(|b| b.len() == 16));
    // Written again, a manifest reads back equal.
    let text = serde_json::to_string(&v2).unwrap();
    assert_eq!(serde_json::from_str::<Manifest>(&text).unwrap(), v2);
}

#[test]
fn the_search_index_metadata_and_vectors_of_version_6_are_read() {
    let dir = golden("search/v6");
    let meta: IndexMeta =
        serde_json::from_slice(&std::fs::read(dir.join("index.json")).unwrap()).unwrap();
    assert_eq!(meta.version, 6);
    assert_eq!(
        (INDEX_VERSION, VECTOR_FORMAT),
        (6, 3),
        "a new index version keeps tests/golden/search/v6 and this test refuses it"
    );
    // An update's index: a table over the first build's pack and the update's own.
    assert_eq!((meta.symbols, meta.mode.as_str()), (22, "incremental"));
    let embedder = Embedder::load(&Default::default()).unwrap();
    let name = format!("vectors-{}.bin", embedder.identity);
    let read = |name: &str| {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        assert_eq!(meta.artifacts[name].bytes, bytes.len() as u64, "{name}");
        assert_eq!(meta.artifacts[name].blake3, checksum(&bytes), "{name}");
        assert!(vector_checksum_ok(&bytes), "{name}");
        bytes
    };
    let table = parse_vector_table(&read(&name), embedder.dim).unwrap();
    assert_eq!(table.packs.len(), 2);
    assert!(table.items.len() >= 22, "{} rows", table.items.len());
    let sizes: Vec<usize> = table
        .packs
        .iter()
        .map(|id| {
            parse_pack_header(&read(&pack_name(&embedder.identity, id)), embedder.dim).unwrap()
        })
        .collect();
    // Every row in its pack, and the packs together hold each row once at most.
    assert!(
        table
            .locations
            .iter()
            .all(|&(p, r)| (r as usize) < sizes[p as usize])
    );
    let mut places = table.locations.clone();
    places.sort_unstable();
    places.dedup();
    assert_eq!(places.len(), table.locations.len());
}

/// A golden index of an older `version`: its metadata (which readers refuse, reading only
/// `INDEX_VERSION`), the embedded model, and its vector table's bytes.
fn an_older_index(relative: &str, version: u32) -> (IndexMeta, Embedder, Vec<u8>) {
    let dir = golden(relative);
    let meta: IndexMeta =
        serde_json::from_slice(&std::fs::read(dir.join("index.json")).unwrap()).unwrap();
    assert_eq!(meta.version, version);
    assert_ne!(meta.version, INDEX_VERSION);
    let embedder = Embedder::load(&Default::default()).unwrap();
    let bytes = std::fs::read(dir.join(format!("vectors-{}.bin", embedder.identity))).unwrap();
    (meta, embedder, bytes)
}

#[test]
fn the_search_index_of_version_5_is_refused_typed_though_its_vectors_still_parse() {
    // Version 5 has no file documents (version 6's `KIND_FILE`). Readers read only
    // `INDEX_VERSION` metadata (`atlas-search-corrupt`, and a build rebuilds it); its
    // vectors are of the format version 6 still writes.
    let (_, embedder, bytes) = an_older_index("search/v5", 5);
    assert!(vector_checksum_ok(&bytes));
    assert_eq!(
        parse_vector_table(&bytes, embedder.dim)
            .unwrap()
            .packs
            .len(),
        2
    );
}

#[test]
fn the_search_index_of_version_4_is_refused_typed() {
    // Version 4 (one vector file of rows) is refused as a whole: readers read only
    // `INDEX_VERSION` metadata (`atlas-search-corrupt`, and a build rebuilds it), and its
    // vector file is of another format.
    let (meta, embedder, bytes) = an_older_index("search/v4", 4);
    assert_eq!(
        meta.artifacts[&format!("vectors-{}.bin", embedder.identity)].blake3,
        checksum(&bytes)
    );
    let err = parse_vector_table(&bytes, embedder.dim).unwrap_err();
    assert!(
        err.0.contains("vector format 2 (this build reads 3)"),
        "{err}"
    );
}

#[test]
fn a_vector_file_of_another_format_or_model_is_refused_typed() {
    let dir = golden("search/v6");
    let file = |suffix: &str| {
        std::fs::read(
            std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| p.to_string_lossy().ends_with(suffix))
                .unwrap(),
        )
        .unwrap()
    };
    let (table, pack) = (file(".bin"), file(".pack"));
    let mut other_format = table.clone();
    other_format[8] = 9;
    let err = parse_vector_table(&other_format, 256).unwrap_err();
    assert!(err.0.contains("vector format 9"), "{err}");
    let err = parse_vector_table(&table, 7).unwrap_err();
    assert!(err.0.contains("the model has 7"), "{err}");
    // A pack is not a table, nor the other way round.
    assert!(
        parse_vector_table(&pack, 256)
            .unwrap_err()
            .0
            .contains("not a vector table")
    );
    assert!(
        parse_pack_header(&table, 256)
            .unwrap_err()
            .0
            .contains("not a vector pack")
    );
    // A table whose rows changed fails its checksum; one cut short, its length.
    let mut flipped = table.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    assert!(
        parse_vector_table(&flipped, 256)
            .unwrap_err()
            .0
            .contains("checksum")
    );
    assert!(parse_vector_table(&table[..table.len() - 12], 256).is_err());
    assert!(parse_pack_header(&pack[..pack.len() - 4], 256).is_err());
}

#[test]
fn a_heads_pack_of_version_1_is_refused_and_written_again() {
    // Written by 36fcfe4 for fixtures/python (one checksum per head): a build that reads
    // heads passes over it, reads its heads from their entries, and packs them again.
    let golden = std::fs::read(golden("cache/v1.heads.pack")).unwrap();
    assert_eq!(&golden[..8], b"ATLHEADS");
    assert_eq!(golden[8..12], 1u32.to_le_bytes());
    let s = common::Sandbox::with_fixture("python");
    s.build_json();
    let clean = s.atlas(&["graph", "dump"]).success().stdout;
    let pack = s.graph().join("cache").join("heads.pack");
    let current = std::fs::read(&pack).unwrap();
    assert_eq!(current[8..12], 2u32.to_le_bytes());
    std::fs::write(&pack, &golden).unwrap();
    // No generation to reuse: every file's facts are loaded.
    std::fs::remove_dir_all(s.graph().join("generations")).unwrap();
    std::fs::remove_file(s.graph().join("CURRENT")).unwrap();
    let report = s.build_json();
    assert_eq!(report["parsed"], 0, "{report}");
    assert_eq!(s.atlas(&["graph", "dump"]).success().stdout, clean);
    assert!(
        std::fs::read(&pack).unwrap() == current,
        "packed again as version 2"
    );
}

#[test]
fn fact_cache_entries_and_resolution_memos_of_older_versions_are_refused_not_misread() {
    use atlas::build::store::{Cached, Store};
    let temp = tempfile::tempdir().unwrap();
    let store = Store::new(temp.path());
    // A version 1 entry (one payload behind a 96-byte header), written by ddc37a1 for
    // fixtures/python: refused whole and lazily, with the reason a build counts as a
    // repair before it extracts the file again.
    let key = "5a10f665229e1ab3419ba19604acb536a1c542f8cf562a8e38c11ab0b1b488c9";
    let shard = temp.path().join("cache").join(&key[..2]);
    std::fs::create_dir_all(&shard).unwrap();
    std::fs::copy(
        golden(&format!("cache/v1.{key}.facts")),
        shard.join(format!("{}.facts", &key[2..])),
    )
    .unwrap();
    let key = blake3::Hash::from_hex(key).unwrap();
    match store.load_facts(&key) {
        Cached::Damaged(reason) => assert_eq!(reason, "another fact cache version"),
        _ => panic!("a version 1 entry is refused"),
    }
    match store.load_facts_lazily(&key) {
        Cached::Damaged(reason) => assert_eq!(reason, "another fact cache version"),
        _ => panic!("a version 1 entry is refused lazily too"),
    }
    // A version 3 `resolution.bin` (before 2026-12-04) and a version 4 one (before the
    // centrality inputs; written by d647ae6 for fixtures/python), each with its builder
    // made this one's and sealed again (the golden file names the builder of its day,
    // which every extractor or resolver bump changes): refused by its version alone, so
    // every file is resolved.
    for version in ["v3", "v4"] {
        let memo = golden(&format!("cache/{version}.resolution.bin"));
        let mut bytes = std::fs::read(&memo).unwrap();
        let builder = atlas::build::manifest::builder_id();
        assert_eq!(
            u16::from_le_bytes([bytes[16], bytes[17]]) as usize,
            builder.len(),
            "the {version} golden file's builder has this builder's length"
        );
        bytes[18..18 + builder.len()].copy_from_slice(builder.as_bytes());
        let body = bytes.len() - 32;
        let seal = *blake3::hash(&bytes[..body]).as_bytes();
        bytes[body..].copy_from_slice(&seal);
        std::fs::write(temp.path().join("resolution.bin"), &bytes).unwrap();
        let stop = std::sync::atomic::AtomicBool::new(false);
        assert!(
            atlas::build::resolution_cache::read(temp.path(), &builder, &stop).is_none(),
            "{version}"
        );
    }
}
