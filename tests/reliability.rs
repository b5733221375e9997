//! Reliability and security regressions (issue 10): one test per failure of the fault and
//! bad-input catalogue (bench/bad_inputs.py runs the long version), named after what it
//! protects. Small generated inputs, no timing assertions.

mod common;

use std::path::{Path, PathBuf};

use common::{Run, Sandbox};
use serde_json::Value;

fn built(fixture: &str) -> Sandbox {
    let s = Sandbox::with_fixture(fixture);
    s.build_json();
    s
}

fn hash8(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex()[..8].to_string()
}

fn expand(s: &Sandbox, reference: &str) -> Run {
    s.atlas(&["expand", reference, "--format", "json"])
}

// ── A. expand reads files of the inventory only ───────────────────────────────────────

#[test]
fn expand_never_reads_a_file_outside_the_repository() {
    let s = built("python");
    let outside = s.path().join("secret.txt");
    std::fs::write(&outside, "top secret\n").unwrap();
    let h = hash8(b"top secret\n");
    let absolute = format!("{}#L1-L1@{h}", outside.display());
    for reference in [
        absolute.as_str(),
        &format!("../secret.txt#L1-L1@{h}"),
        &format!("shop/../../secret.txt#L1-L1@{h}"),
        &format!("/etc/passwd#L1-L1@{h}"),
    ] {
        let run = expand(&s, reference).failure(9, "atlas-ref-unknown");
        assert!(!run.stdout.contains("top secret"), "{}", run.describe());
    }
}

#[test]
fn expand_answers_the_same_for_an_existing_and_a_missing_outside_file() {
    let s = built("python");
    std::fs::write(s.path().join("exists.txt"), "x\n").unwrap();
    let strip = |run: &Run, name: &str| run.stderr.replace(name, "NAME");
    let exists = expand(&s, "../exists.txt#L1-L1@00000000").failure(9, "atlas-ref-unknown");
    let missing = expand(&s, "../missing.txt#L1-L1@00000000").failure(9, "atlas-ref-unknown");
    assert_eq!(strip(&exists, "exists"), strip(&missing, "missing"));
}

#[cfg(unix)]
#[test]
fn expand_refuses_symlinks_out_of_the_root_fifos_and_devices() {
    let s = built("python");
    let outside = s.path().join("outside.py");
    std::fs::write(&outside, "secret = 1\n").unwrap();
    std::os::unix::fs::symlink(&outside, s.repo().join("link.py")).unwrap();
    std::os::unix::fs::symlink("/", s.repo().join("rootdir")).unwrap();
    let h = hash8(b"secret = 1\n");
    expand(&s, &format!("link.py#L1-L1@{h}")).failure(9, "atlas-ref-unknown");
    expand(&s, "rootdir/etc/passwd#L1-L1@00000000").failure(9, "atlas-ref-unknown");
    expand(&s, "/dev/zero#L1-L1@00000000").failure(9, "atlas-ref-unknown");
    let fifo = s.repo().join("fifo.py");
    if std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|st| st.success())
    {
        expand(&s, "fifo.py#L1-L1@00000000").failure(9, "atlas-ref-unknown");
    }
}

#[cfg(unix)]
#[test]
fn an_inventoried_file_replaced_by_a_symlink_out_is_not_followed() {
    let s = built("python");
    let outside = s.path().join("outside.py");
    std::fs::write(&outside, "secret = 1\n").unwrap();
    let util = s.repo().join("shop/util.py");
    std::fs::remove_file(&util).unwrap();
    std::os::unix::fs::symlink(&outside, &util).unwrap();
    let h = hash8(b"secret = 1\n");
    let run = expand(&s, &format!("shop/util.py#L1-L1@{h}")).failure(9, "atlas-ref-unknown");
    assert!(!run.stdout.contains("secret"));
    // Context slices refuse it too: the file's evidence is a stale skeleton.
    let out = s
        .atlas(&[
            "context",
            "apply_discount",
            "--profile",
            "symbol",
            "--frozen",
            "--format",
            "json",
        ])
        .success()
        .json();
    assert_eq!(out["evidence"][0]["projection"], "stale-skeleton");
}

#[test]
fn expand_refuses_graph_files_and_files_outside_the_inventory() {
    let s = built("python");
    let current = std::fs::read(s.graph().join("CURRENT")).unwrap();
    expand(
        &s,
        &format!(".agent-spec/graph/CURRENT#L1-L1@{}", hash8(&current)),
    )
    .failure(9, "atlas-ref-unknown");
    // Written after the build: not part of the committed generation.
    s.write("later.py", "x = 1\n");
    expand(&s, &format!("later.py#L1-L1@{}", hash8(b"x = 1\n"))).failure(9, "atlas-ref-unknown");
}

// ── B. damaged caches and graphs ──────────────────────────────────────────────────────

fn cache_entries(s: &Sandbox) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "facts") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&s.graph().join("cache"), &mut out);
    out.sort();
    out
}

fn dump(s: &Sandbox) -> String {
    s.atlas(&["graph", "dump"]).success().stdout
}

#[test]
fn bit_flipped_fact_cache_entries_are_repaired_and_counted() {
    let s = built("python");
    let clean = dump(&s);
    // Every head is read from its entry, not the heads pack.
    std::fs::remove_file(s.graph().join("cache").join("heads.pack")).unwrap();
    for (n, entry) in cache_entries(&s).iter().enumerate() {
        let mut bytes = std::fs::read(entry).unwrap();
        let at = (bytes.len() / 2 + n * 7) % bytes.len();
        bytes[at] ^= 0x5a;
        std::fs::write(entry, bytes).unwrap();
    }
    // Something changed on disk so that the build does not stop at "unchanged".
    s.write("extra.py", "def extra():\n    return 0\n");
    let report = s.build_json();
    assert!(report["cache_repaired"].as_u64().unwrap() > 0, "{report}");
    std::fs::remove_file(s.repo().join("extra.py")).unwrap();
    s.build_json();
    assert_eq!(dump(&s), clean);
}

#[test]
fn swapped_fact_cache_entries_never_produce_a_wrong_graph() {
    // (the heads pack kept, the resolution kept, entries repaired): without the pack
    // every head is read from its entry; without the resolution every body is read; with
    // both, the swapped entries are never read and cannot mislead the build.
    for (pack, resolution, repaired) in [(false, true, 2), (true, false, 2), (true, true, 0)] {
        let s = built("python");
        let clean = dump(&s);
        let entries = cache_entries(&s);
        assert!(entries.len() >= 2);
        let (a, b) = (
            std::fs::read(&entries[0]).unwrap(),
            std::fs::read(&entries[1]).unwrap(),
        );
        std::fs::write(&entries[0], &b).unwrap();
        std::fs::write(&entries[1], &a).unwrap();
        let pack_file = s.graph().join("cache").join("heads.pack");
        assert!(pack_file.is_file(), "a cold build packs its heads");
        if !pack {
            std::fs::remove_file(&pack_file).unwrap();
        }
        if !resolution {
            std::fs::remove_file(s.graph().join("resolution.bin")).unwrap();
        }
        std::fs::remove_dir_all(s.graph().join("generations")).unwrap();
        std::fs::remove_file(s.graph().join("CURRENT")).unwrap();
        let report = s.build_json();
        assert_eq!(
            report["cache_repaired"], repaired,
            "{pack} {resolution}: {report}"
        );
        assert_eq!(dump(&s), clean, "{pack} {resolution}");
    }
}

fn heads_pack(s: &Sandbox) -> Vec<u8> {
    std::fs::read(s.graph().join("cache").join("heads.pack")).unwrap()
}

#[test]
fn a_damaged_heads_pack_is_not_used_and_is_written_again() {
    const EXTRA: &str = "def extra():\n    return 0\n";
    // What a repaired pack must be: the one a cold build of the same tree writes.
    let fresh = Sandbox::with_fixture("python");
    fresh.write("extra.py", EXTRA);
    fresh.build_json();
    let (expected, clean) = (heads_pack(&fresh), dump(&fresh));
    type Damage = fn(&mut Vec<u8>);
    let damages: [(&str, Damage); 6] = [
        ("truncated", |b| b.truncate(b.len() / 2)),
        ("empty", |b| b.clear()),
        ("not a pack", |b| *b = b"not a heads pack".to_vec()),
        ("another version", |b| b[8] ^= 0x7f),
        ("index flipped", |b| *b.last_mut().unwrap() ^= 1),
        ("a head flipped", |b| b[64 + 40] ^= 0x5a),
    ];
    for (name, damage) in damages {
        let s = built("python");
        let pack = s.graph().join("cache").join("heads.pack");
        let mut bytes = heads_pack(&s);
        damage(&mut bytes);
        std::fs::write(&pack, bytes).unwrap();
        s.write("extra.py", EXTRA);
        let report = s.build_json();
        assert_eq!(report["cache_repaired"], 0, "{name}: {report}");
        assert_eq!(dump(&s), clean, "{name}");
        assert!(
            heads_pack(&s) == expected,
            "{name}: the pack is written again whole"
        );
    }
}

#[test]
fn an_edit_reads_the_heads_pack_and_writes_it_only_when_a_sixteenth_is_missing() {
    // A file with syntax errors: a no-op build reads its facts (for its diagnostics),
    // and only its.
    const BROKEN: &str = "def broken(:\n    return\n";
    let edit = |s: &Sandbox, n: usize| {
        s.write(
            &format!("m{n}.py"),
            format!("def f{n}():\n    return -{n}\n"),
        );
    };
    let tree = |s: &Sandbox| {
        for n in 0..80 {
            s.write(
                &format!("m{n}.py"),
                format!("def f{n}():\n    return {n}\n"),
            );
        }
        s.write("broken.py", BROKEN);
    };
    let s = Sandbox::new();
    tree(&s);
    // Older than the racy window, so that the stamps vouch for the files not edited.
    std::thread::sleep(std::time::Duration::from_millis(2_200));
    s.build_json();
    let packed = heads_pack(&s);
    // Five edits leave 5 of 81 heads out of the pack: it stays as it is, as it does
    // through the no-op builds after them.
    for n in 0..5 {
        edit(&s, n);
        s.build_json();
        assert!(heads_pack(&s) == packed, "edit {n}");
        assert_eq!(s.build_json()["unchanged"], true);
        assert!(heads_pack(&s) == packed, "the no-op after edit {n}");
    }
    // A sixth leaves 6 of 81 (more than a sixteenth): the pack is written again, as a
    // cold build of the same tree writes it.
    edit(&s, 5);
    s.build_json();
    let again = heads_pack(&s);
    assert!(again != packed);
    let fresh = Sandbox::new();
    tree(&fresh);
    (0..6).for_each(|n| edit(&fresh, n));
    fresh.build_json();
    assert!(heads_pack(&fresh) == again);
}

#[test]
fn damaged_fact_bodies_found_while_resolving_are_extracted_again_and_counted() {
    let s = built("python");
    let clean = dump(&s);
    // The last byte of an entry is its body's (the head, read by every build, is intact).
    let entries = cache_entries(&s);
    for entry in &entries {
        let mut bytes = std::fs::read(entry).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0x5a;
        std::fs::write(entry, bytes).unwrap();
    }
    // No generation and no resolution to reuse: every file is resolved, every body read.
    std::fs::remove_dir_all(s.graph().join("generations")).unwrap();
    std::fs::remove_file(s.graph().join("CURRENT")).unwrap();
    std::fs::remove_file(s.graph().join("resolution.bin")).unwrap();
    let report = s.build_json();
    assert_eq!(report["cache_repaired"], entries.len(), "{report}");
    assert_eq!(report["parsed"], entries.len(), "{report}");
    assert_eq!(dump(&s), clean);
    // The entries written again are whole: the next cold resolution reads them all.
    std::fs::remove_dir_all(s.graph().join("generations")).unwrap();
    std::fs::remove_file(s.graph().join("CURRENT")).unwrap();
    std::fs::remove_file(s.graph().join("resolution.bin")).unwrap();
    let report = s.build_json();
    assert_eq!(report["cache_repaired"], 0, "{report}");
    assert_eq!(report["parsed"], 0, "{report}");
    assert_eq!(dump(&s), clean);
}

#[test]
fn a_missing_generation_file_is_corrupt_not_an_io_error_and_a_build_recovers() {
    let s = built("python");
    std::fs::remove_file(s.graph_file()).unwrap();
    s.atlas(&["status"]).failure(4, "atlas-graph-corrupt");
    s.atlas(&["graph", "dump"])
        .failure(4, "atlas-graph-corrupt");
    s.build_json();
    s.atlas(&["status"]).success();
}

#[test]
fn garbage_in_current_is_overwritten_by_the_next_build() {
    let s = built("python");
    let committed = s.current();
    std::fs::write(s.graph().join("CURRENT"), "garbage\n").unwrap();
    s.atlas(&["status"]).failure(4, "atlas-graph-corrupt");
    s.build_json();
    assert_eq!(s.current(), committed);
    // Bytes that are not text are the same damage, not an I/O failure.
    let mut bytes = vec![0xff, 0xfe];
    bytes.extend_from_slice(&committed.as_bytes()[2..]);
    std::fs::write(s.graph().join("CURRENT"), bytes).unwrap();
    s.atlas(&["status"]).failure(4, "atlas-graph-corrupt");
    s.build_json();
    assert_eq!(s.current(), committed);
}

/// A damaged manifest loses the build's reports, not the graph: status says so (text and
/// JSON) and still answers, queries still answer, and the next build rewrites it.
#[test]
fn a_damaged_manifest_is_reported_by_status_and_rewritten_by_the_next_build() {
    let s = built("python");
    let manifest = s
        .graph()
        .join("generations")
        .join(s.current())
        .join("manifest.json");
    let good = std::fs::read_to_string(&manifest).unwrap();
    let manifest_error =
        || s.atlas(&["status", "--format", "json"]).success().json()["manifest_error"].clone();
    assert!(manifest_error().is_null());
    std::fs::write(&manifest, "{\"manifest_version\": 2, garbage").unwrap();
    let text = s.atlas(&["status"]).success();
    assert!(
        text.stdout.contains("manifest    unreadable:"),
        "{}",
        text.describe()
    );
    let error = manifest_error();
    assert!(
        error
            .as_str()
            .expect("manifest_error")
            .contains("manifest.json"),
        "{error}"
    );
    s.context("Cart").profile("symbol").frozen().run().success();
    s.build_json();
    assert_eq!(std::fs::read_to_string(&manifest).unwrap(), good);
    assert!(manifest_error().is_null());
}

// ── C. search indexes heal, and say what is wrong ────────────────────────────────────

fn search_dir(s: &Sandbox) -> PathBuf {
    s.graph().join("search").join(s.current())
}

fn search_frozen(s: &Sandbox) -> Run {
    s.atlas(&["search", "discount", "--frozen", "--format", "json"])
}

fn files_under(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path, suffix));
        } else if path.to_string_lossy().ends_with(suffix) {
            out.push(path);
        }
    }
    out
}

#[test]
fn a_damaged_tantivy_index_is_search_corrupt_under_frozen_and_rebuilt_by_a_build() {
    for damage in ["truncate-term", "delete-meta"] {
        let s = built("python");
        let tantivy = search_dir(&s).join("tantivy");
        match damage {
            "truncate-term" => {
                let term = files_under(&tantivy, ".term").remove(0);
                let bytes = std::fs::read(&term).unwrap();
                std::fs::write(&term, &bytes[..bytes.len() / 2]).unwrap();
            }
            _ => std::fs::remove_file(tantivy.join("meta.json")).unwrap(),
        }
        let run = search_frozen(&s).failure(4, "atlas-search-corrupt");
        assert_eq!(run.json()["error"]["code"], "atlas-search-corrupt");
        let report = s.build_json();
        assert_eq!(report["unchanged"], true, "{damage}");
        let out = search_frozen(&s).success().json();
        assert!(out["arms"].get("unavailable").is_none(), "{damage}: {out}");
    }
}

/// A bit flipped inside a large tantivy artifact (past the size whose checksum every
/// open read) changed a search's answer with nothing said. An index of up to 64 MiB is
/// checksummed whole at open: a frozen search is `atlas-search-corrupt`, and a read that
/// may write rebuilds it.
#[test]
fn a_flipped_bit_in_a_large_tantivy_artifact_is_damage_not_another_answer() {
    let s = Sandbox::new();
    for file in 0..32 {
        let body: String = (0..250)
            .map(|f| {
                format!(
                    "def handler_{file}_{f}(value):\n    \"\"\"Discount rule {f} of ledger {file}: applies rate_{f} to account_{file}_{f}.\"\"\"\n    return value * {f}\n\n"
                )
            })
            .collect();
        s.write(&format!("rules/ledger_{file}.py"), body);
    }
    s.build_json();
    let tantivy = search_dir(&s).join("tantivy");
    let largest = files_under(&tantivy, "")
        .into_iter()
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    let mut bytes = std::fs::read(&largest).unwrap();
    assert!(
        bytes.len() > 256 << 10,
        "{}: {} bytes, under the size always checksummed",
        largest.display(),
        bytes.len()
    );
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    std::fs::write(&largest, bytes).unwrap();
    let run = search_frozen(&s).failure(4, "atlas-search-corrupt");
    assert!(
        run.stderr.contains("does not match its checksum"),
        "{}",
        run.stderr
    );
    let out = s
        .atlas(&["search", "discount", "--format", "json"])
        .success()
        .json();
    assert!(out["arms"].get("unavailable").is_none(), "{out}");
    search_frozen(&s).success();
}

#[test]
fn damaged_or_missing_vectors_disable_only_the_vector_arm_and_say_so() {
    // The rows (a pack) and the row table over them.
    let cases = ["nan", "flip", "delete", "truncate"]
        .into_iter()
        .flat_map(|damage| [(damage, ".pack"), (damage, ".bin")]);
    for (damage, file) in cases {
        let damage = format!("{damage} {file}");
        let s = built("python");
        let vectors = files_under(&search_dir(&s), file).remove(0);
        let mut bytes = std::fs::read(&vectors).unwrap();
        match damage.split(' ').next().unwrap() {
            "nan" => {
                let at = bytes.len() - 64;
                for i in 0..4 {
                    bytes[at + 4 * i..at + 4 * i + 4].copy_from_slice(&f32::NAN.to_le_bytes());
                }
                std::fs::write(&vectors, bytes).unwrap();
            }
            "flip" => {
                let at = bytes.len() - 256;
                for byte in &mut bytes[at..] {
                    *byte ^= 0xff;
                }
                std::fs::write(&vectors, bytes).unwrap();
            }
            "delete" => std::fs::remove_file(&vectors).unwrap(),
            _ => std::fs::write(&vectors, &bytes[..bytes.len() / 2]).unwrap(),
        }
        let out = search_frozen(&s).success().json();
        let reason = out["arms"]["unavailable"]["vector"].as_str();
        assert!(reason.is_some(), "{damage}: {out}");
        assert!(
            !out["hits"].as_array().unwrap().is_empty(),
            "{damage}: the lexical arms still answer"
        );
        // A read that may write repairs it.
        let out = s
            .atlas(&["search", "discount", "--format", "json"])
            .success()
            .json();
        assert!(out["arms"].get("unavailable").is_none(), "{damage}: {out}");
    }
}

#[cfg(unix)]
#[test]
fn damage_to_a_file_generations_share_is_repaired_from_scratch_once() {
    use std::os::unix::fs::MetadataExt;
    // A vector pack and a tantivy file, both shared by hard link after an update.
    for suffix in [".pack", ".term"] {
        let s = built("python");
        s.write("shop/extra.py", "def quince(amount):\n    return amount\n");
        s.build_json();
        // The first build's largest file of the kind is linked into the update's
        // index: damaged through either name, both generations see it.
        let shared = files_under(&search_dir(&s), suffix)
            .into_iter()
            .filter(|p| std::fs::metadata(p).unwrap().nlink() > 1)
            .max_by_key(|p| std::fs::metadata(p).unwrap().len())
            .unwrap_or_else(|| panic!("no shared {suffix}"));
        let mut bytes = std::fs::read(&shared).unwrap();
        let at = bytes.len() - 64;
        for byte in &mut bytes[at..] {
            *byte ^= 0xff;
        }
        std::fs::write(&shared, bytes).unwrap();
        // A build finds it and rebuilds the index in full, not from the damaged sibling.
        let report = s.build_json();
        assert_eq!(report["unchanged"], true);
        assert_eq!(s.index_meta().mode, "full", "{suffix}");
        let out = search_frozen(&s).success().json();
        assert!(out["arms"].get("unavailable").is_none(), "{suffix}: {out}");
        // Repaired once: the next build trusts it and writes nothing.
        let index_json = search_dir(&s).join("index.json");
        let before = std::fs::read(&index_json).unwrap();
        s.build_json();
        assert_eq!(std::fs::read(&index_json).unwrap(), before, "{suffix}");
    }
}

#[test]
fn a_frozen_search_writes_nothing_into_the_graph_directory() {
    let s = built("python");
    let before = listing(&s.graph());
    search_frozen(&s).success();
    s.atlas(&[
        "context",
        "discount rate",
        "--profile",
        "symbol",
        "--frozen",
    ])
    .success();
    assert_eq!(listing(&s.graph()), before, "no lock file, nothing written");
}

fn listing(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = files_under(dir, "")
        .into_iter()
        .map(|p| p.strip_prefix(dir).unwrap().display().to_string())
        .collect();
    out.sort();
    out
}

#[test]
fn a_question_over_a_damaged_index_reports_the_damage_not_a_no_match() {
    let s = built("python");
    std::fs::write(search_dir(&s).join("index.json"), "{garbage").unwrap();
    s.atlas(&[
        "context",
        "how is a discount taken off",
        "--profile",
        "flow",
        "--frozen",
    ])
    .failure(4, "atlas-search-corrupt");
}

// ── D. readers during builds ──────────────────────────────────────────────────────────

#[test]
fn every_committed_generation_has_its_search_index() {
    let s = built("python");
    for n in 0..4 {
        s.write(
            "shop/extra.py",
            format!("def extra_{n}():\n    return {n}\n"),
        );
        s.build_json();
        assert!(search_dir(&s).join("COMPLETE").is_file(), "generation {n}");
        search_frozen(&s).success();
    }
}

#[test]
fn a_read_never_fails_because_another_process_holds_the_build_lock() {
    let s = built("python");
    s.write(
        "shop/util.py",
        "def apply_discount(amount, rate):\n    return amount\n",
    );
    let lock = std::fs::OpenOptions::new()
        .write(true)
        .open(s.graph().join("lock"))
        .unwrap();
    lock.lock().unwrap();
    let out = s
        .atlas_env(
            &[
                "context",
                "apply_discount",
                "--profile",
                "symbol",
                "--format",
                "json",
            ],
            &[("ATLAS_LOCK_WAIT_MS", "100")],
        )
        .success()
        .json();
    assert!(
        out["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["code"] == "atlas-context-stale-graph"),
        "{out}"
    );
    drop(lock);
    let out = s
        .atlas(&[
            "context",
            "apply_discount",
            "--profile",
            "symbol",
            "--format",
            "json",
        ])
        .success()
        .json();
    assert_eq!(out["receipt"]["refreshed"], true);
}

// ── E. other failures ─────────────────────────────────────────────────────────────────

#[cfg(target_os = "linux")]
#[test]
fn a_failed_stdout_write_is_an_io_error() {
    let s = built("python");
    let repo = s.repo();
    for args in [
        vec!["graph", "dump"],
        vec!["status"],
        vec![
            "context",
            "checkout",
            "--profile",
            "symbol",
            "--frozen",
            "--format",
            "json",
        ],
    ] {
        let full = std::fs::File::create("/dev/full").unwrap();
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_atlas"))
            .arg("--code")
            .arg(&repo)
            .args(&args)
            .stdout(full)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        assert!(String::from_utf8_lossy(&output.stderr).contains("error[atlas-io]"));
    }
}

#[test]
fn a_reader_that_goes_away_is_not_an_error_message() {
    let s = built("python");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_atlas"))
        .arg("--code")
        .arg(s.repo())
        .args(["graph", "dump"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    // Either the dump fit in the pipe before it closed (0) or the write broke (141).
    assert!(matches!(output.status.code(), Some(0 | 141)), "{output:?}");
    if output.status.code() == Some(141) {
        assert!(stderr.is_empty(), "{stderr}");
    }
}

#[test]
fn a_build_daemon_or_watcher_started_away_from_a_graph_named_by_flag_serves_its_repository() {
    // `build`, `daemon start` and `watch` run where the user stands; a graph named by
    // `--graph` is built and served from the root its last build recorded, as direct reads
    // take it, never from the working directory (which they used to build and serve).
    let s = Sandbox::with_fixture("python");
    let (graph, recorded, current, elsewhere) = graph_apart(&s, &["--no-search"]);
    let g = graph.to_str().unwrap();
    let started = run_in(
        &elsewhere,
        &["--graph", g, "daemon", "start", "--format", "json"],
    );
    let started = started.success().json();
    let stop = || run_in(&elsewhere, &["--graph", g, "daemon", "stop"]);
    let served = started["code_root"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let worker = |query: &str| {
        run_in(
            &elsewhere,
            &[
                "--graph",
                g,
                "context",
                query,
                "--profile",
                "symbol",
                "--format",
                "json",
                "--execution",
                "worker",
            ],
        )
    };
    let outside = worker("outside_marker");
    let checkout = worker("checkout");
    stop();
    // `build` too builds the graph's repository, and says which.
    let build = run_in(&elsewhere, &["--graph", g, "build", "--no-search"]).success();
    assert!(
        build
            .stdout
            .contains(&format!("code root {}", recorded.trim())),
        "{}",
        build.stdout
    );
    assert_eq!(served, recorded.trim(), "{started}");
    outside.failure(7, "atlas-context-no-match");
    let answer = checkout.success().json();
    assert!(
        answer["intent"]["anchors"][0]["symbol"]
            .as_str()
            .is_some_and(|symbol| symbol.ends_with("checkout")),
        "{answer}"
    );
    assert_untouched(&graph, &recorded, &current);
    // Moved away, the repository is missing for both, as for a direct read.
    moved(&s, "repo2");
    let daemon = run_in(
        &elsewhere,
        &["--graph", g, "daemon", "start", "--format", "json"],
    );
    if daemon.code == 0 {
        stop();
    }
    daemon.failure(3, "atlas-code-missing");
    run_in(&elsewhere, &["--graph", g, "build", "--format", "json"])
        .failure(3, "atlas-code-missing");
    // Bounded: a watcher that took the working directory would run until killed.
    let watch = std::process::Command::new("timeout")
        .args(["60", env!("CARGO_BIN_EXE_atlas")])
        .args(["--graph", g, "watch", "--format", "json"])
        .current_dir(&elsewhere)
        .env_remove("ATLAS_GRAPH_DIR")
        .output()
        .unwrap();
    let error: serde_json::Value = serde_json::from_slice(&watch.stdout).unwrap_or_default();
    assert_eq!(watch.status.code(), Some(3), "{error}");
    assert_eq!(error["error"]["code"], "atlas-code-missing", "{error}");
    assert_eq!(
        std::fs::read_to_string(graph.join("ROOT")).unwrap(),
        recorded
    );
}

/// The fixture built (`build <extra>`) into a graph beside it, named by `--graph`, and a
/// directory elsewhere holding an unrelated `outside_marker`: the graph directory, its
/// `ROOT` and `CURRENT` as built, and that directory.
fn graph_apart(s: &Sandbox, extra: &[&str]) -> (PathBuf, String, String, PathBuf) {
    let graph = s.path().join("graph");
    let mut args = vec!["--graph", graph.to_str().unwrap(), "build"];
    args.extend_from_slice(extra);
    s.atlas(&args).success();
    let recorded = std::fs::read_to_string(graph.join("ROOT")).unwrap();
    let current = std::fs::read_to_string(graph.join("CURRENT")).unwrap();
    let elsewhere = s.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(
        elsewhere.join("outside.py"),
        "def outside_marker():\n    pass\n",
    )
    .unwrap();
    (graph, recorded, current, elsewhere)
}

/// The graph still records the root and generation it was built with.
#[track_caller]
fn assert_untouched(graph: &Path, recorded: &str, current: &str) {
    assert_eq!(
        std::fs::read_to_string(graph.join("ROOT")).unwrap(),
        recorded
    );
    assert_eq!(
        std::fs::read_to_string(graph.join("CURRENT")).unwrap(),
        current
    );
}

fn moved(s: &Sandbox, to: &str) -> PathBuf {
    let target = s.path().join(to);
    std::fs::rename(s.repo(), &target).unwrap();
    target
}

fn run_in(dir: &Path, args: &[&str]) -> Run {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_atlas"))
        .args(args)
        .current_dir(dir)
        .env_remove("ATLAS_GRAPH_DIR")
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("WORKSPACE_FOLDER_PATHS")
        .output()
        .unwrap();
    Run {
        argv: args.iter().map(|a| a.to_string()).collect(),
        cwd: dir.to_path_buf(),
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[test]
fn a_moved_repository_reads_itself() {
    let s = built("python");
    let target = moved(&s, "repo2");
    let status = run_in(&target, &["status", "--format", "json"])
        .success()
        .json();
    assert_eq!(
        status["code_root"].as_str().unwrap(),
        target.to_str().unwrap()
    );
    assert_eq!(status["staleness"]["stale"], false, "{status}");
    let with_code = run_in(&target, &["--code", ".", "status", "--format", "json"])
        .success()
        .json();
    assert_eq!(with_code["staleness"]["stale"], false);
    let out = run_in(
        &target,
        &[
            "context",
            "checkout",
            "--profile",
            "symbol",
            "--frozen",
            "--format",
            "json",
        ],
    )
    .success()
    .json();
    assert_eq!(out["receipt"]["read_back_required"], false, "{out}");
}

#[test]
fn a_graph_named_by_flag_whose_repository_moved_reads_no_other_directory() {
    // The graph lives apart from the code and is named by `--graph`; the repository then
    // moves, and a read runs in another tree. It must not take that tree for the code:
    // neither answer from it nor refresh the graph with it.
    let s = Sandbox::with_fixture("python");
    let (graph, recorded, current, elsewhere) = graph_apart(&s, &[]);
    let g = graph.to_str().unwrap();
    let target = moved(&s, "repo2");
    for args in [
        &[
            "--graph",
            g,
            "context",
            "outside_marker",
            "--profile",
            "symbol",
            "--format",
            "json",
        ][..],
        &[
            "--graph",
            g,
            "context",
            "checkout",
            "--profile",
            "symbol",
            "--format",
            "json",
        ],
        &["--graph", g, "search", "checkout", "--format", "json"],
        &["--graph", g, "check-freshness", "--format", "json"],
    ] {
        let run = run_in(&elsewhere, args).failure(3, "atlas-code-missing");
        let message = run.json()["error"]["message"].as_str().unwrap().to_string();
        assert!(
            message.contains(recorded.trim()) && message.contains("--code"),
            "{message}"
        );
        assert!(!run.stdout.contains("outside"), "{}", run.stdout);
    }
    assert_untouched(&graph, &recorded, &current);
    // Status still answers, naming the root it was built from.
    let status = run_in(&elsewhere, &["--graph", g, "status", "--format", "json"])
        .success()
        .json();
    assert_eq!(status["code_root"].as_str().unwrap(), recorded.trim());
    assert_eq!(status["staleness"]["stale"], true, "{status}");
    let coverage = &status["coverage"];
    let files = coverage["files_inventoried"].as_u64().unwrap()
        - coverage["files_skipped"].as_u64().unwrap();
    assert_eq!(status["staleness"]["removed"], files, "{status}");
    // `--code` names where the repository is now, and reads it.
    let t = target.to_str().unwrap();
    let checkout = |dir: &Path, code: &[&str]| {
        let mut args = vec!["--graph", g];
        args.extend_from_slice(code);
        args.extend([
            "context",
            "checkout",
            "--profile",
            "symbol",
            "--format",
            "json",
        ]);
        run_in(dir, &args).success().json()
    };
    let out = checkout(&elsewhere, &["--code", t]);
    let anchor = out["intent"]["anchors"][0]["symbol"]
        .as_str()
        .unwrap_or_default();
    assert!(anchor.ends_with("::checkout"), "{out}");
    assert_eq!(out["receipt"]["read_back_required"], false, "{out}");
    // Run from the moved checkout itself (a CI cache of the graph restored beside a new
    // checkout): the working directory holds the graph's files, and stands for the root.
    let out = checkout(&target, &[]);
    assert_eq!(out["receipt"]["read_back_required"], false, "{out}");
    let status = run_in(&target, &["--graph", g, "status", "--format", "json"])
        .success()
        .json();
    assert_eq!(status["code_root"].as_str().unwrap(), t);
    assert_eq!(status["staleness"]["stale"], false, "{status}");
}

/// Tantivy's metadata is as readable as the rest of the index, and a user who may read
/// the graph but not write it (here `nobody`, when the tests run as root) searches it and
/// asks questions of it: fresh, and after an edit, stale and saying so.
#[cfg(unix)]
#[test]
fn a_graph_another_user_may_only_read_answers_searches_and_questions() {
    use std::os::unix::fs::PermissionsExt;
    let s = built("python");
    let search = search_dir(&s);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let index = files_under(&search, "index.json").pop().unwrap();
    for name in ["meta.json", ".managed.json"] {
        let tantivy = files_under(&search, name)
            .into_iter()
            .find(|p| p.parent().unwrap().ends_with("tantivy"))
            .unwrap();
        assert_eq!(mode(&tantivy), mode(&index), "{}", tantivy.display());
    }
    let root_user = std::process::Command::new("id")
        .arg("-u")
        .output()
        .unwrap()
        .stdout;
    if String::from_utf8_lossy(&root_user).trim() != "0" || !Path::new("/usr/bin/setpriv").exists()
    {
        eprintln!("skipped: reading as another user needs root and /usr/bin/setpriv");
        return;
    }
    // Only the sandbox's own directory is private to its owner.
    std::fs::set_permissions(s.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let repo = s.repo();
    let as_nobody = |args: &[&str]| {
        let mut full = vec![
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            env!("CARGO_BIN_EXE_atlas"),
            "--code",
            repo.to_str().unwrap(),
        ];
        full.extend_from_slice(args);
        s.run_bin("/usr/bin/setpriv", &full)
    };
    let question = [
        "context",
        "how is the checkout total computed",
        "--profile",
        "symbol",
        "--format",
        "json",
    ];
    as_nobody(&["search", "checkout", "--format", "json"]).success();
    as_nobody(&["search", "checkout", "--frozen", "--format", "json"]).success();
    let fresh = as_nobody(&question).success();
    assert!(
        !fresh.stdout.contains("cannot be written"),
        "{}",
        fresh.describe()
    );
    s.write(
        "shop/util.py",
        "def round_money(x):\n    return round(x, 2)\n",
    );
    let stale = as_nobody(&question).success();
    assert!(
        stale.stdout.contains("cannot be written"),
        "{}",
        stale.describe()
    );
    as_nobody(&["search", "checkout", "--format", "json"]).success();
    // Damaged vectors cannot be repaired by this reader: the lexical arms answer, the
    // vector arm's absence said, rather than an error from the lock it may not take.
    let vectors = files_under(&search, ".pack").remove(0);
    std::fs::remove_file(&vectors).unwrap();
    let out = as_nobody(&["search", "checkout", "--format", "json"])
        .success()
        .json();
    assert!(out["arms"]["unavailable"]["vector"].is_string(), "{out}");
    assert!(!out["hits"].as_array().unwrap().is_empty(), "{out}");
}

#[test]
fn a_copied_repository_reports_its_own_directory() {
    let s = built("python");
    let copy = s.path().join("copy");
    common::copy_dir(&s.repo(), &copy);
    let status = run_in(&copy, &["status", "--format", "json"])
        .success()
        .json();
    assert_eq!(
        status["code_root"].as_str().unwrap(),
        copy.to_str().unwrap()
    );
    assert_eq!(status["staleness"]["stale"], false);
}

#[test]
fn an_injected_failure_leaves_no_staging_behind() {
    let s = Sandbox::with_fixture("python");
    s.atlas_env(&["build"], &[("ATLAS_INJECT_FAILURE", "before-publish")])
        .failure(1, "atlas-build-injected-failure");
    let staging = s.graph().join(".staging");
    assert!(
        !staging.exists() || std::fs::read_dir(&staging).unwrap().next().is_none(),
        "staging left behind"
    );
    // Nor the directory cache entries are written through (found by the disk-full loop).
    assert!(
        !s.graph().join("cache").join(".tmp").exists(),
        "cache/.tmp left behind"
    );
}

#[test]
fn pathologically_nested_source_is_truncated_and_says_why() {
    let s = Sandbox::new();
    let depth = 3000;
    s.write(
        "deep.py",
        format!(
            "def f(x):\n    return x\n\ny = {}1{}\n",
            "f(".repeat(depth),
            ")".repeat(depth)
        ),
    );
    let report = s.build_json();
    let partial = &report["partial"][0];
    assert_eq!(partial["path"], "deep.py");
    assert_eq!(partial["status"], "truncated");
    assert!(partial["limit"].as_str().unwrap().contains("nested"));
    let status = s.atlas(&["status", "--format", "json"]).success().json();
    assert_eq!(status["partial_files"][0]["status"], "truncated");
    // A limit is not a syntax error: each is counted as what it is.
    assert_eq!(status["coverage"]["files_truncated"], 1);
    assert_eq!(status["coverage"]["files_with_parse_errors"], 0);
    let text = s.atlas(&["status"]).success().stdout;
    assert!(
        text.contains("(0 with parse errors, 1 cut by an extraction limit)"),
        "{text}"
    );
}

#[cfg(unix)]
#[test]
fn a_tokenizer_path_naming_a_device_or_fifo_falls_back_to_characters() {
    let s = built("python");
    let fifo = s.path().join("tokenizer.fifo");
    let mut paths = vec!["/dev/zero".to_string()];
    if std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|st| st.success())
    {
        paths.push(fifo.display().to_string());
    }
    for path in paths {
        let out = s
            .atlas_env(
                &[
                    "search",
                    "discount",
                    "--frozen",
                    "--format",
                    "json",
                    "--max-tokens",
                    "10",
                ],
                &[("ATLAS_TOKENIZER_PATH", &path)],
            )
            .success()
            .json();
        assert_eq!(out["budget"]["mode"], "chars", "{path}: {out}");
    }
}

#[test]
fn top_k_zero_is_a_bad_value() {
    let s = built("python");
    s.atlas(&["search", "discount", "--top-k", "0"])
        .failure(2, "atlas-invalid-input");
}

#[test]
fn clap_value_errors_are_typed_and_json_under_format_json() {
    let s = built("python");
    for args in [
        vec!["context", "x", "--profile", "nope", "--format", "json"],
        vec!["search", "x", "--top-k", "abc", "--format", "json"],
        vec![
            "context",
            "x",
            "--profile",
            "flow",
            "--max-bytes",
            "5",
            "--format=json",
        ],
    ] {
        let run = s.atlas(&args).failure(2, "atlas-invalid-input");
        let body: Value = run.json();
        assert_eq!(body["error"]["code"], "atlas-invalid-input", "{args:?}");
    }
}

#[test]
fn a_nonexistent_editor_root_is_never_created() {
    let s = Sandbox::new();
    let ghost = s.path().join("does-not-exist");
    let cwd = s.path().join("elsewhere");
    std::fs::create_dir_all(&cwd).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_atlas"))
        .args(["status"])
        .current_dir(&cwd)
        .env("CLAUDE_PROJECT_DIR", &ghost)
        .output()
        .unwrap();
    assert_ne!(output.status.code(), Some(0));
    assert!(!ghost.exists());
}

#[cfg(unix)]
#[test]
fn graph_dump_escapes_control_characters_in_file_names() {
    let s = Sandbox::new();
    s.write("a\nb.py", "def f():\n    return 1\n");
    s.build_json();
    let out = s.atlas(&["graph", "dump"]).success().stdout;
    assert!(out.contains("file a\\nb.py python"), "{out}");
    assert!(out.lines().all(|l| !l.starts_with("b.py")));
}

// ── File stamps (issue 14): fresh reads skip hashing files whose stat is unchanged ──

/// `context … --format json` without `--frozen`: whether the read refreshed the graph.
fn refreshed(s: &Sandbox) -> bool {
    s.atlas(&["context", "Cart", "--profile", "symbol", "--format", "json"])
        .success()
        .json()["graph"]["refreshed"]
        .as_bool()
        .unwrap()
}

/// Sets a file's modification time back to what it was, as `touch -r` or `rsync -t` do.
fn restore_mtime(path: &std::path::Path, mtime: std::time::SystemTime) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(mtime).unwrap();
}

#[test]
fn a_same_size_edit_with_its_old_mtime_restored_is_still_seen() {
    let s = Sandbox::with_fixture("python");
    let path = s.repo().join("shop/util.py");
    // Older than the racy window, so that the stamps written by the build vouch for it.
    std::thread::sleep(std::time::Duration::from_millis(2_200));
    s.atlas(&["build", "--no-search"]).success();
    assert!(s.graph().join("stamps.bin").is_file());
    assert!(!refreshed(&s), "nothing changed");

    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let edited = text.replacen("amount", "AMOUNT", 1);
    assert_eq!(edited.len(), text.len());
    std::fs::write(&path, edited).unwrap();
    restore_mtime(&path, mtime);
    assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), mtime);
    // Same size, same mtime, same inode: the change time still tells.
    assert!(refreshed(&s), "the edit is seen");
    assert!(!refreshed(&s));
}

#[test]
fn a_damaged_or_foreign_stamp_file_only_costs_hashing() {
    let s = built("python");
    let stamps = s.graph().join("stamps.bin");
    for damage in [b"garbage".to_vec(), Vec::new()] {
        std::fs::write(&stamps, &damage).unwrap();
        assert!(!refreshed(&s));
        s.write(
            "shop/extra.py",
            format!("def extra_{}():\n    pass\n", damage.len()),
        );
        assert!(refreshed(&s), "a change is seen without stamps");
    }
    // Stamps of another generation vouch for nothing.
    let committed = std::fs::read(&stamps).unwrap();
    s.write("shop/extra.py", "def extra_later():\n    pass\n");
    s.atlas(&["build", "--no-search"]).success();
    std::fs::write(&stamps, committed).unwrap();
    s.write(
        "shop/util.py",
        "def apply_discount(amount, rate):\n    return 0\n",
    );
    assert!(refreshed(&s));
}

#[test]
fn status_and_check_freshness_never_write_stamps() {
    let s = built("python");
    let stamps = s.graph().join("stamps.bin");
    std::fs::remove_file(&stamps).unwrap();
    s.atlas(&["status", "--format", "json"]).success();
    s.atlas(&["check-freshness", "--format", "json"]).success();
    assert!(!stamps.exists(), "read-only commands wrote the stamp cache");
    // A fresh read may: it records the files it hashed.
    assert!(!refreshed(&s));
    assert!(stamps.exists());
}

/// A file the build skipped for its content (not UTF-8) is not a change while it stays as
/// it was; rewritten as source, it is one: a fresh read refreshes and compiles it.
#[test]
fn a_skipped_file_rewritten_as_source_is_a_change_a_fresh_read_sees() {
    let s = Sandbox::with_fixture("python");
    s.write("shop/latin1.py", b"# caf\xe9\ndef latin():\n    return 1\n");
    // Older than the racy window, so that the stamps written by the build vouch for it.
    std::thread::sleep(std::time::Duration::from_millis(2_200));
    let first = s.build_json();
    assert_eq!(first["skipped"][0]["path"], "shop/latin1.py", "{first}");
    assert!(!refreshed(&s), "an unchanged skipped file is not a change");
    s.write("shop/latin1.py", "# café\ndef latin():\n    return 1\n");
    let freshness = s
        .atlas(&["check-freshness", "--format", "json"])
        .success()
        .json();
    assert_eq!(freshness["rebuild_needed"], true, "{freshness}");
    assert!(refreshed(&s), "the rewritten file is seen");
    let dump = s.atlas(&["graph", "dump"]).success().stdout;
    assert!(dump.contains("shop/latin1.py::latin"), "compiled now");
}

#[test]
fn a_file_dated_centuries_ahead_neither_panics_nor_hides_a_change() {
    let s = built("python");
    let path = s.repo().join("shop/util.py");
    let far = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(10_000_000_000);
    restore_mtime(&path, far);
    assert!(!refreshed(&s));
    s.write(
        "shop/util.py",
        "def apply_discount(amount, rate):\n    return 1\n",
    );
    restore_mtime(&path, far);
    assert!(refreshed(&s), "the change is seen");
}

// ── A store the reader cannot write ───────────────────────────────────────────────────

/// Every entry under `dir` (and `dir`) without write permission, or with it back.
fn set_writable(dir: &Path, writable: bool) {
    use std::os::unix::fs::PermissionsExt;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            set_writable(&path, writable);
        } else {
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            let mode = if writable {
                mode | 0o200
            } else {
                mode & !0o222
            };
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        }
    }
    let mode = if writable { 0o755 } else { 0o555 };
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A graph directory the reader cannot write (a read-only mount, a store owned by another
/// user, a full disk): a read after an edit answers from the committed generation, stale
/// and saying so, instead of failing on the build lock.
#[test]
fn a_store_the_reader_cannot_write_answers_from_its_committed_generation() {
    use std::os::unix::fs::PermissionsExt;
    let s = built("python");
    s.write("shop/util.py", {
        let old = std::fs::read_to_string(s.repo().join("shop/util.py")).unwrap();
        old + "\n# edited after the build\ndef added_later():\n    return 0\n"
    });
    let euid = std::process::Command::new("id").arg("-u").output().unwrap();
    let as_root = String::from_utf8_lossy(&euid.stdout).trim() == "0";
    let repo = s.repo();
    let atlas = env!("CARGO_BIN_EXE_atlas");
    let read = |name: &str| {
        let query = [
            "--code",
            repo.to_str().unwrap(),
            "context",
            name,
            "--profile",
            "symbol",
            "--format",
            "json",
        ];
        if as_root {
            // Root writes anywhere: the reader is `nobody`, for whom the root-owned store
            // is read-only (the sandbox is opened for reading to it).
            std::fs::set_permissions(s.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
            let mut argv = vec!["--reuid=65534", "--regid=65534", "--clear-groups", atlas];
            argv.extend(query);
            s.run_bin("setpriv", &argv)
        } else {
            set_writable(&s.graph(), false);
            let run = s.run_bin(atlas, &query);
            set_writable(&s.graph(), true);
            run
        }
    };
    // A name added since the build is no match in the committed generation; the error
    // says why the graph is stale, on stderr, as an answer does in its diagnostics.
    let added = read("added_later").failure(7, "atlas-context-no-match");
    assert!(
        added.stderr.contains("warning[atlas-context-stale-graph]")
            && added.stderr.contains("cannot be written"),
        "{}",
        added.stderr
    );
    let run = read("checkout");
    let run = run.success();
    let out: Value = serde_json::from_str(&run.stdout).unwrap();
    let codes: Vec<&str> = out["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["code"].as_str())
        .collect();
    assert!(codes.contains(&"atlas-context-stale-graph"), "{codes:?}");
    let stale = out["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "atlas-context-stale-graph")
        .unwrap();
    assert!(
        stale["message"]
            .as_str()
            .unwrap()
            .contains("cannot be written"),
        "{stale}"
    );
    assert_eq!(
        out["intent"]["anchors"][0]["symbol"],
        "shop/pricing.py::checkout"
    );
}
