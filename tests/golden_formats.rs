//! Golden files of the formats besides the graph (issue 12): every landed version of the
//! generation manifest, the search index metadata and the vector file stays in
//! tests/golden/ and is still read by this build — or, once a newer version replaces
//! it, refused with a typed answer (the index is rebuilt), never misread.

use std::path::{Path, PathBuf};

use atlas::build::manifest::{MANIFEST_VERSION, Manifest};
use atlas::query::search::embed::Embedder;
use atlas::query::search::index::{
    INDEX_VERSION, IndexMeta, VECTOR_FORMAT, parse_vector_header, vector_checksum_ok,
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
fn the_search_index_metadata_and_vectors_of_version_4_are_read() {
    let dir = golden("search/v4");
    let meta: IndexMeta =
        serde_json::from_slice(&std::fs::read(dir.join("index.json")).unwrap()).unwrap();
    assert_eq!(meta.version, 4);
    assert_eq!(
        INDEX_VERSION, 4,
        "a new index version keeps tests/golden/search/v4 and this test refuses it"
    );
    assert_eq!(meta.symbols, 21);
    let vectors = meta
        .artifacts
        .keys()
        .find(|name| name.starts_with("vectors-"))
        .expect("index.json lists its vectors");
    let bytes = std::fs::read(dir.join(vectors)).unwrap();
    assert_eq!(meta.artifacts[vectors].bytes, bytes.len() as u64);
    assert_eq!(
        meta.artifacts[vectors].blake3,
        atlas::query::search::index::checksum(&bytes)
    );
    let embedder = Embedder::load(&Default::default()).unwrap();
    assert_eq!(vectors, &format!("vectors-{}.bin", embedder.identity));
    let rows = parse_vector_header(&bytes, embedder.dim).unwrap();
    assert!(rows.len() >= 21, "{} rows", rows.len());
    assert!(vector_checksum_ok(&bytes));
    assert_eq!(VECTOR_FORMAT, 2);
}

#[test]
fn a_vector_file_of_another_format_or_model_is_refused_typed() {
    let bytes = std::fs::read(
        std::fs::read_dir(golden("search/v4"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().contains("vectors-"))
            .unwrap(),
    )
    .unwrap();
    let mut other_format = bytes.clone();
    other_format[8] = 9;
    let err = parse_vector_header(&other_format, 256).unwrap_err();
    assert!(err.0.contains("vector format 9"), "{err}");
    let err = parse_vector_header(&bytes, 7).unwrap_err();
    assert!(err.0.contains("the model has 7"), "{err}");
}
