//! The edit path (issue 14): after any sequence of edits, the graph an incremental build
//! publishes equals a cold build of the same tree — the same dump, the same fingerprint.
//! Edits are drawn from a seeded generator (the seed is printed on failure): add, rename
//! and delete a function, add and delete a file, change an import, edit a body.

mod common;

use std::path::{Path, PathBuf};

use common::{Run, Sandbox};

/// A small deterministic generator (SplitMix64): the same seed, the same edits.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// How one language writes the edits.
struct Lang {
    fixture: &'static str,
    dir: &'static str,
    ext: &'static str,
    /// Functions the fixture defines, to call and to import.
    existing: &'static [(&'static str, &'static str)],
    function: fn(&str, &str) -> String,
    import: fn(&str, &str) -> String,
    definition: fn(&str) -> String,
}

const PYTHON: Lang = Lang {
    fixture: "python",
    dir: "shop",
    ext: "py",
    existing: &[
        ("shop.util", "round_money"),
        ("shop.util", "apply_discount"),
        ("shop.pricing", "checkout"),
        ("shop.pricing", "quick_cart"),
    ],
    function: |name, callee| format!("\n\ndef {name}(value=None):\n    return {callee}(value)\n"),
    import: |module, name| format!("from {module} import {name}\n"),
    definition: |name| format!("def {name}("),
};

const TYPESCRIPT: Lang = Lang {
    fixture: "typescript",
    dir: "src",
    ext: "ts",
    existing: &[("./model", "isEmail")],
    function: |name, callee| {
        format!(
            "\nexport function {name}(value?: string): boolean {{\n  return {callee}(value ?? \"\");\n}}\n"
        )
    },
    import: |module, name| format!("import {{ {name} }} from \"{module}\";\n"),
    definition: |name| format!("function {name}("),
};

/// What the sequence added, so that later edits can rename, delete and re-import it.
#[derive(Default)]
struct Added {
    /// (file, function name).
    functions: Vec<(PathBuf, String)>,
    /// (file, module it imports from, imported name).
    files: Vec<(PathBuf, String, String)>,
    counter: usize,
}

fn fresh(added: &mut Added, stem: &str) -> String {
    added.counter += 1;
    format!("{stem}_{}", added.counter)
}

fn source_files(root: &Path, lang: &Lang) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(lang.dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == lang.ext))
        .filter(|p| !p.ends_with("__init__.py"))
        .collect();
    files.sort();
    files
}

/// The kinds of edit, each once per cycle of steps, in an order the generator shuffles.
const KINDS: [usize; 8] = [0, 4, 2, 6, 3, 7, 1, 5];

fn shuffled(rng: &mut Rng) -> Vec<usize> {
    let mut kinds = KINDS.to_vec();
    for i in (1..kinds.len()).rev() {
        kinds.swap(i, rng.below(i + 1));
    }
    kinds
}

/// Applies edit `kind` (`KINDS`) with random files, names and imports; returns what it
/// did, for the failure message. A kind whose subject does not exist yet (nothing added
/// to rename) adds a function instead.
fn edit(root: &Path, lang: &Lang, kind: usize, rng: &mut Rng, added: &mut Added) -> String {
    let (module, callee) = lang.existing[rng.below(lang.existing.len())];
    let kind = match kind {
        2 | 3 if added.functions.is_empty() => 0,
        5 | 6 if added.files.is_empty() => 4,
        kind => kind,
    };
    match kind {
        // Add a function to an existing file.
        0 | 1 => {
            let files = source_files(root, lang);
            let file = files[rng.below(files.len())].clone();
            let name = fresh(added, "added");
            let callee = added
                .functions
                .last()
                .map_or(callee.to_string(), |(_, f)| f.clone());
            let mut text = std::fs::read_to_string(&file).unwrap();
            text.push_str(&(lang.function)(&name, &callee));
            std::fs::write(&file, text).unwrap();
            added.functions.push((file.clone(), name.clone()));
            format!("add function {name} to {}", file.display())
        }
        // Rename an added function (its callers now name nothing).
        2 if !added.functions.is_empty() => {
            let index = rng.below(added.functions.len());
            let (file, old) = added.functions[index].clone();
            let new = fresh(added, "renamed");
            let text = std::fs::read_to_string(&file).unwrap();
            let text = text.replacen(&(lang.definition)(&old), &(lang.definition)(&new), 1);
            std::fs::write(&file, text).unwrap();
            added.functions[index].1 = new.clone();
            format!("rename {old} to {new} in {}", file.display())
        }
        // Delete an added function.
        3 if !added.functions.is_empty() => {
            let index = rng.below(added.functions.len());
            let (file, name) = added.functions.remove(index);
            let text = std::fs::read_to_string(&file).unwrap();
            let start = text
                .find(&(lang.definition)(&name))
                .expect("the function is there");
            // From the blank lines before the definition to the next definition or the end.
            let from = text[..start].trim_end().len();
            let rest = &text[start + 1..];
            let end = ["\ndef ", "\nclass ", "\nexport ", "\nfunction "]
                .iter()
                .filter_map(|m| rest.find(m))
                .min()
                .map_or(text.len(), |i| start + 1 + i);
            let text = format!("{}{}", &text[..from], &text[end..]);
            std::fs::write(&file, text).unwrap();
            format!("delete function {name} from {}", file.display())
        }
        // Add a file that imports and calls an existing function.
        4 => {
            let name = fresh(added, "feature");
            let file = root.join(lang.dir).join(format!("{name}.{}", lang.ext));
            let body = format!(
                "{}{}",
                (lang.import)(module, callee),
                (lang.function)(&format!("{name}_entry"), callee)
            );
            std::fs::write(&file, body).unwrap();
            added
                .files
                .push((file.clone(), module.into(), callee.into()));
            format!("add file {}", file.display())
        }
        // Delete an added file.
        5 if !added.files.is_empty() => {
            let (file, _, _) = added.files.remove(rng.below(added.files.len()));
            std::fs::remove_file(&file).unwrap();
            added.functions.retain(|(f, _)| *f != file);
            format!("delete file {}", file.display())
        }
        // Change an import of an added file (and the call with it).
        6 if !added.files.is_empty() => {
            let index = rng.below(added.files.len());
            let (file, old_module, old_name) = added.files[index].clone();
            let text = std::fs::read_to_string(&file).unwrap();
            let text = text
                .replacen(
                    &(lang.import)(&old_module, &old_name),
                    &(lang.import)(module, callee),
                    1,
                )
                .replace(&format!("{old_name}(value"), &format!("{callee}(value"));
            std::fs::write(&file, text).unwrap();
            added.files[index] = (file.clone(), module.into(), callee.into());
            format!(
                "change import in {}: {old_module}.{old_name} -> {module}.{callee}",
                file.display()
            )
        }
        // Otherwise: edit a body (a comment line at the end of a file).
        _ => {
            let files = source_files(root, lang);
            let file = files[rng.below(files.len())].clone();
            let comment = if lang.ext == "py" { "#" } else { "//" };
            let mut text = std::fs::read_to_string(&file).unwrap();
            text.push_str(&format!("{comment} edit {}\n", fresh(added, "note")));
            std::fs::write(&file, text).unwrap();
            format!("edit a comment in {}", file.display())
        }
    }
}

fn atlas(sandbox: &Sandbox, graph: &Path, args: &[&str]) -> Run {
    let repo = sandbox.repo();
    let mut full = vec![
        "--code",
        repo.to_str().unwrap(),
        "--graph",
        graph.to_str().unwrap(),
    ];
    full.extend_from_slice(args);
    // Every cross part an edit takes unbuilt is built after all and compared
    // (`pipeline::check_cross_reuse`): a wrong reuse fails the build.
    sandbox.run_bin_env(
        env!("CARGO_BIN_EXE_atlas"),
        &full,
        &[("ATLAS_INJECT_FAILURE", "check-cross-reuse")],
    )
}

/// Bulk files no edit touches, in directories of their own, so that the graph has
/// several segments (groups end at a directory change once they hold 16 files) and an
/// edit can reuse some.
const BULK_FILES: usize = 3 * 40;

fn add_bulk(sandbox: &Sandbox) {
    for dir in ["a", "b", "c"] {
        for i in 0..BULK_FILES / 3 {
            let next = (i + 1) % (BULK_FILES / 3);
            sandbox.write(
                &format!("bulk/{dir}/m{i}.py"),
                format!("def f_{dir}_{i}(x):\n    return f_{dir}_{next}(x)\n"),
            );
        }
    }
}

/// `atlas build --no-search` of `graph`, its JSON report.
fn build_json(sandbox: &Sandbox, graph: &Path) -> serde_json::Value {
    atlas(
        sandbox,
        graph,
        &["build", "--no-search", "--format", "json"],
    )
    .success()
    .json()
}

/// The committed generation's directory.
fn generation(graph: &Path) -> PathBuf {
    let current = std::fs::read_to_string(graph.join("CURRENT")).unwrap();
    graph.join("generations").join(current.trim())
}

/// The segment files of a generation, by name, with their link counts.
fn segments(graph: &Path) -> Vec<(String, u64)> {
    use std::os::unix::fs::MetadataExt;
    let mut out: Vec<(String, u64)> = std::fs::read_dir(generation(graph).join("segments"))
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().to_string(),
                e.metadata().unwrap().nlink(),
            )
        })
        .collect();
    out.sort();
    out
}

/// Builds the tree cold into `cold` and checks that the build `report` of `graph` equals
/// it: the same fingerprint, the same dump. Returns the cold report and `graph`'s dump.
fn assert_equals_cold(
    sandbox: &Sandbox,
    graph: &Path,
    report: &serde_json::Value,
    cold: &Path,
    context: &str,
) -> (serde_json::Value, Run) {
    let cold_report = atlas(sandbox, cold, &["build", "--no-search", "--format", "json"])
        .success()
        .json();
    assert_eq!(
        report["fingerprint"], cold_report["fingerprint"],
        "{context}"
    );
    let dump = atlas(sandbox, graph, &["graph", "dump"]).success();
    let cold_dump = atlas(sandbox, cold, &["graph", "dump"]).success();
    assert!(
        dump.stdout == cold_dump.stdout,
        "dumps differ after {context}"
    );
    // The root too, byte for byte: what the dump leaves out (centrality, which an edit
    // that moves no reference takes from the committed generation) is in it.
    let root = |graph: &Path| std::fs::read(generation(graph).join("graph.atlas")).unwrap();
    assert!(root(graph) == root(cold), "roots differ after {context}");
    (cold_report, dump)
}

/// Runs `steps` random edits, checking after each; returns the edits made.
fn incremental_equals_cold(lang: &Lang, seed: u64, steps: usize) -> Vec<String> {
    let sandbox = Sandbox::with_fixture(lang.fixture);
    add_bulk(&sandbox);
    let incremental = sandbox.path().join("incremental-graph");
    atlas(&sandbox, &incremental, &["build", "--no-search"]).success();
    let mut rng = Rng(seed);
    let mut added = Added::default();
    let mut history = Vec::new();
    let mut kinds = Vec::new();
    for step in 0..steps {
        if kinds.is_empty() {
            kinds = shuffled(&mut rng);
        }
        let kind = kinds.pop().unwrap();
        let files_before = added.files.len();
        history.push(edit(&sandbox.repo(), lang, kind, &mut rng, &mut added));
        let same_files = added.files.len() == files_before;
        let report = atlas(
            &sandbox,
            &incremental,
            &["build", "--no-search", "--format", "json"],
        )
        .success()
        .json();
        let cold = sandbox.path().join(format!("cold-graph-{step}"));
        let context = || {
            format!(
                "{} seed {seed}, edits:\n  {}",
                lang.fixture,
                history.join("\n  ")
            )
        };
        let (cold_report, dump) =
            assert_equals_cold(&sandbox, &incremental, &report, &cold, &context());
        assert_eq!(
            cold_report["parsed"], cold_report["files"],
            "the cold build parsed everything"
        );
        assert_eq!(
            cold_report["resolved"], cold_report["files"],
            "the cold build resolved everything"
        );
        // With the same files, the edit re-resolved only what it could reach: never the
        // bulk files, which import nothing the edits touch.
        if history
            .last()
            .is_some_and(|h| h.starts_with("edit a comment"))
        {
            // The facts other files read did not change: only the file is resolved.
            assert_eq!(report["resolved"], 1, "{}", context());
        }
        if same_files {
            assert!(
                report["resolved"].as_u64().unwrap() + BULK_FILES as u64
                    <= report["files"].as_u64().unwrap(),
                "resolved {} of {} after {}",
                report["resolved"],
                report["files"],
                context()
            );
        }
        // File for file: the same root and the same segments (format 4).
        let edited_segments = segments(&incremental);
        let names = |s: &[(String, u64)]| s.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        assert_eq!(
            names(&edited_segments),
            names(&segments(&cold)),
            "{}",
            context()
        );
        assert!(
            edited_segments.len() >= 3,
            "modules and two groups at least"
        );
        assert_eq!(
            std::fs::read(generation(&incremental).join("graph.atlas")).unwrap(),
            std::fs::read(generation(&cold).join("graph.atlas")).unwrap(),
            "roots differ after {}",
            context()
        );
        // The bulk groups were not compiled again: their files are the previous
        // generation's, linked.
        assert!(
            edited_segments.iter().any(|(_, links)| *links > 1),
            "no segment reused after {}",
            context()
        );
        // The dumps compared are of the edited tree, not of something older.
        if let Some((_, name)) = added.functions.last() {
            assert!(
                dump.stdout.contains(name.as_str()),
                "{name} missing: {}",
                context()
            );
        }
        std::fs::remove_dir_all(&cold).unwrap();
    }
    history
}

/// Every kind of edit the issue names was made at least once.
#[track_caller]
fn assert_covered(history: &[String]) {
    for kind in [
        "add function",
        "rename",
        "delete function",
        "add file",
        "delete file",
        "change import",
    ] {
        assert!(
            history.iter().any(|h| h.starts_with(kind)),
            "no `{kind}` edit among:\n  {}",
            history.join("\n  ")
        );
    }
}

#[test]
fn incremental_python_builds_equal_cold_builds_over_random_edits() {
    let mut history = Vec::new();
    for seed in [1, 7] {
        history.extend(incremental_equals_cold(&PYTHON, seed, 12));
    }
    assert_covered(&history);
}

#[test]
fn incremental_typescript_builds_equal_cold_builds_over_random_edits() {
    let mut history = Vec::new();
    for seed in [3, 11] {
        history.extend(incremental_equals_cold(&TYPESCRIPT, seed, 12));
    }
    assert_covered(&history);
}

/// The edits users make most — a line inside a function body — shift every later offset
/// of the file. Other files' resolution only compares a file's offsets with each other,
/// so the edit re-resolves the file alone, and the memo is written as a delta of the
/// entries that differ; a damaged delta falls back on the memo file (an older whole
/// resolution: the files changed since are resolved again); a new method re-resolves its
/// readers; a damaged resolution cache resolves everything. Each build equals a cold one.
#[test]
fn a_body_edit_re_resolves_its_file_alone_and_a_damaged_cache_resolves_everything() {
    let sandbox = Sandbox::with_fixture("python");
    add_bulk(&sandbox);
    let graph = sandbox.path().join("graph");
    let build = || build_json(&sandbox, &graph);
    let first = build();
    assert_eq!(first["resolved"], first["files"]);
    let models = sandbox.repo().join("shop/models.py");
    let original = std::fs::read_to_string(&models).unwrap();
    // (what, the new text of models.py or empty for the damage, (resolved, files) → ok)
    type Expected = fn(u64, u64) -> bool;
    let body_edit = original.replacen(
        "        self.name = name\n",
        "        print(name)\n        self.name = name\n",
        1,
    );
    let steps: [(&str, String, Expected); 4] = [
        (
            "a call added at the top of a method body",
            body_edit.clone(),
            |resolved, _| resolved == 1,
        ),
        // The body edit (since the memo file) and a comment in util.py.
        ("the resolution delta damaged", body_edit, |resolved, _| {
            resolved == 2
        }),
        (
            "a method added to a class others use",
            original.replacen(
                "    def total(self, quantity):",
                "    def weight(self):\n        return 1\n\n    def total(self, quantity):",
                1,
            ),
            |resolved, files| resolved > 1 && resolved + BULK_FILES as u64 <= files,
        ),
        (
            "the resolution cache damaged",
            String::new(),
            |resolved, files| resolved == files,
        ),
    ];
    let comment_util = || {
        // A comment edit, which would resolve one file with the cache whole (and keeps
        // the build from stopping at an unchanged generation).
        let util = sandbox.repo().join("shop/util.py");
        let text = std::fs::read_to_string(&util).unwrap() + "# edited\n";
        std::fs::write(&util, text).unwrap();
    };
    for (step, (what, text, expected)) in steps.into_iter().enumerate() {
        if what == "the resolution delta damaged" {
            let delta = graph.join("resolution.delta");
            let mut bytes = std::fs::read(&delta).expect("the body edit wrote a delta");
            let middle = bytes.len() / 2;
            bytes[middle] ^= 0x55;
            std::fs::write(&delta, bytes).unwrap();
            comment_util();
        } else if text.is_empty() {
            let cache = graph.join("resolution.bin");
            let mut bytes = std::fs::read(&cache).unwrap();
            let middle = bytes.len() / 2;
            bytes[middle] ^= 0x55;
            std::fs::write(&cache, bytes).unwrap();
            comment_util();
        } else {
            std::fs::write(&models, text).unwrap();
        }
        let report = build();
        let (resolved, files) = (
            report["resolved"].as_u64().unwrap(),
            report["files"].as_u64().unwrap(),
        );
        assert!(
            expected(resolved, files),
            "{what}: resolved {resolved} of {files}"
        );
        let cold = sandbox.path().join(format!("cold-{step}"));
        assert_equals_cold(&sandbox, &graph, &report, &cold, what);
    }
}

/// Past the stamps' racy window: what a build stamps now is vouched for afterwards.
#[test]
fn an_edit_writes_the_cross_parts_its_edges_touch_and_links_the_others() {
    let sandbox = Sandbox::with_fixture("python");
    add_bulk(&sandbox);
    // Calls from a directory of its own into `shop`: edges between two segments.
    let main = |extra: &str| {
        format!(
            "from shop.models import Item\n\n\ndef main():\n{extra}    item = Item(\"a\", 1)\n    return item.total(2)\n"
        )
    };
    sandbox.write("app/main.py", main(""));
    let graph = sandbox.path().join("graph");
    build_json(&sandbox, &graph);
    let cross = |graph: &Path| -> Vec<(String, u64)> {
        segments(graph)
            .into_iter()
            .filter(|(name, _)| name.ends_with(".cross"))
            .collect()
    };
    let parts = cross(&graph);
    assert!(parts.len() >= 4, "a cross part per segment: {parts:?}");

    // A comment moves no edge: every cross part is the committed generation's, linked.
    let util = sandbox.repo().join("shop/util.py");
    let text = std::fs::read_to_string(&util).unwrap() + "# edited\n";
    std::fs::write(&util, text).unwrap();
    let report = build_json(&sandbox, &graph);
    let cold = sandbox.path().join("cold-after-comment");
    assert_equals_cold(&sandbox, &graph, &report, &cold, "a comment");
    let after_comment = cross(&graph);
    assert_eq!(after_comment.len(), parts.len());
    assert!(
        after_comment.iter().all(|(_, links)| *links > 1),
        "no cross part written for a comment: {after_comment:?}"
    );

    // A line above the calls moves their sites: the caller's part (out-edges) and the
    // callee's (in-edges) are written, the bulk segments' linked.
    sandbox.write("app/main.py", main("    print(\"x\")\n"));
    let report = build_json(&sandbox, &graph);
    let cold = sandbox.path().join("cold-after-move");
    assert_equals_cold(&sandbox, &graph, &report, &cold, "a moved call site");
    let after_move = cross(&graph);
    let written: Vec<&String> = after_move
        .iter()
        .filter(|(_, links)| *links == 1)
        .map(|(name, _)| name)
        .collect();
    assert_eq!(
        written.len(),
        2,
        "the caller's and the callee's parts: {after_move:?}"
    );
    assert!(
        after_move.len() - written.len() >= 2,
        "the others are linked: {after_move:?}"
    );

    // The import and the calls removed: only the edges before the edit reached the
    // callee's segment, whose part changes all the same (`check-cross-reuse` builds every
    // part taken unbuilt, and fails the build where one differs).
    sandbox.write("app/main.py", "def main():\n    return None\n");
    let report = build_json(&sandbox, &graph);
    let cold = sandbox.path().join("cold-after-removal");
    assert_equals_cold(&sandbox, &graph, &report, &cold, "import and calls removed");
}

fn settle() {
    std::thread::sleep(std::time::Duration::from_millis(2_200));
}

#[test]
fn a_build_reads_only_the_files_its_stamps_do_not_vouch_for_and_equals_a_cold_build() {
    let sandbox = Sandbox::with_fixture("python");
    add_bulk(&sandbox);
    let graph = sandbox.path().join("graph");
    let build = || build_json(&sandbox, &graph);
    settle();
    let first = build();
    assert_eq!(first["unread"], 0, "no stamps yet: every file is read");
    let edits: [(&str, Option<&str>); 3] = [
        (
            "shop/util.py",
            Some("def apply_discount(amount):\n    return amount * 0.8\n"),
        ),
        ("shop/later.py", Some("def later():\n    return 1\n")),
        ("bulk/a/m3.py", None),
    ];
    for (step, (path, content)) in edits.into_iter().enumerate() {
        match content {
            Some(text) => sandbox.write(path, text),
            None => std::fs::remove_file(sandbox.repo().join(path)).unwrap(),
        }
        // The edit settles before the build, so that the stamps this build writes vouch
        // for it at the next one.
        settle();
        let report = build();
        let files = report["files"].as_u64().unwrap();
        // Every file but the one written is taken from the stamps, unread.
        let written = u64::from(content.is_some());
        assert_eq!(report["unread"].as_u64(), Some(files - written), "{report}");
        let cold = sandbox.path().join(format!("cold-{step}"));
        assert_equals_cold(&sandbox, &graph, &report, &cold, path);
    }
}

/// A no-op build whose files the committed stamps vouch for (but a few, read and hashed)
/// loads no facts but those of its partial files: with the fact cache gone and a file
/// rewritten as it was, it is still unchanged and parses only the partial file, and it
/// reports what the build before it reported (the partial file, the files skipped for
/// their content). `--strict`
/// still fails on the partial file. A file changed afterwards is read again.
#[test]
fn a_no_op_build_whose_files_the_stamps_vouch_for_loads_no_facts_and_reports_the_same() {
    let sandbox = Sandbox::with_fixture("python");
    sandbox.write("shop/binary.py", b"print(1)\0\0\0");
    sandbox.write("shop/latin1.py", b"# caf\xe9\nx = 1\n");
    let graph = sandbox.path().join("graph");
    let build = |extra: &[&str]| {
        let mut args = vec!["build", "--no-search", "--format", "json"];
        args.extend_from_slice(extra);
        atlas(&sandbox, &graph, &args)
    };
    settle();
    let first = build(&[]).success().json();
    assert_eq!(first["unchanged"], false);
    let skipped = |report: &serde_json::Value| report["skipped"].clone();
    let reasons: Vec<&str> = first["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons, ["binary", "not-utf8"], "{first}");
    assert_eq!(first["partial"][0]["path"], "broken.py", "{first}");

    std::fs::remove_dir_all(graph.join("cache")).unwrap();
    // A file rewritten as it was: its stamp no longer vouches for it, so it is read and
    // hashed again, and found unchanged.
    let same = std::fs::read(sandbox.repo().join("shop/util.py")).unwrap();
    sandbox.write("shop/util.py", &same);
    let noop = build(&[]).success().json();
    assert_eq!(noop["unchanged"], true, "{noop}");
    // Only the partial file's facts were needed (for its diagnostics): read and parsed
    // again, as the cache lost them. The rewritten file was read, not parsed; every
    // other file was neither read nor parsed.
    assert_eq!(noop["parsed"], 1, "{noop}");
    assert_eq!(
        noop["unread"].as_u64(),
        first["files"].as_u64().map(|n| n - 2),
        "{noop}"
    );
    assert_eq!(noop["fingerprint"], first["fingerprint"]);
    assert_eq!(noop["partial"], first["partial"], "the same partial files");
    assert_eq!(skipped(&noop), skipped(&first), "the same skipped files");
    assert_eq!(
        (&noop["symbols"], &noop["edges"], &noop["frontier"]),
        (&first["symbols"], &first["edges"], &first["frontier"])
    );
    build(&["--strict"]).failure(6, "atlas-build-strict-partial");

    sandbox.write(
        "shop/util.py",
        "def apply_discount(amount):\n    return amount * 0.8\n",
    );
    let edit = build(&[]).success().json();
    assert_eq!(edit["unchanged"], false, "{edit}");
    assert!(edit["parsed"].as_u64() >= Some(1), "{edit}");
}

/// An edit can move an edge between two files neither of which it touched, and neither
/// of which has an edge into the edited file: `y.py` types `h.item` through `Holder`'s
/// field in `z.py`, whose value is a call to `make` in `x.py`; retyping `make` moves
/// `y.py`'s call from `Other.meth` to `Bar.meth`. An incremental resolver must re-resolve
/// `y.py` here (graph-schema/README.md, "The edit path": why a name delta is not enough).
#[test]
fn an_edit_that_retypes_a_receiver_two_files_away_moves_its_edge_as_a_cold_build_does() {
    let sandbox = Sandbox::new();
    sandbox.write("pkg/__init__.py", "");
    sandbox.write(
        "pkg/w.py",
        "class Other:\n    def meth(self):\n        return 1\n",
    );
    let x = |returns: &str| {
        format!(
            "from pkg.w import Other\n\n\nclass Bar:\n    def meth(self):\n        return 2\n\n\n\
             def make() -> {returns}:\n    return {returns}()\n"
        )
    };
    sandbox.write("pkg/x.py", x("Other"));
    sandbox.write(
        "pkg/z.py",
        "from pkg.x import make\n\n\nclass Holder:\n    def __init__(self):\n        self.item = make()\n",
    );
    sandbox.write(
        "pkg/y.py",
        "from pkg.z import Holder\n\n\ndef use(h: Holder):\n    return h.item.meth()\n",
    );
    let graph = sandbox.path().join("graph");
    let cold = sandbox.path().join("cold");
    atlas(&sandbox, &graph, &["build", "--no-search"]).success();
    let before = atlas(&sandbox, &graph, &["graph", "dump"]).success().stdout;
    assert!(
        before.contains("edge calls pkg/y.py::use -> pkg/w.py::Other.meth"),
        "{before}"
    );

    sandbox.write("pkg/x.py", x("Bar"));
    let report = build_json(&sandbox, &graph);
    let (_, dump) = assert_equals_cold(&sandbox, &graph, &report, &cold, "retyping make");
    assert!(
        dump.stdout
            .contains("edge calls pkg/y.py::use -> pkg/x.py::Bar.meth"),
        "{}",
        dump.stdout
    );
    assert!(
        !dump
            .stdout
            .contains("pkg/y.py::use -> pkg/w.py::Other.meth")
    );
}

#[test]
fn edits_along_a_re_export_chain_rebind_imports_as_a_cold_build_does() {
    // `app` imports `helper` from the package, which re-exports it from `mid`, which
    // imports it from `core`: the third pass of import binding is the first to bind it in
    // `app`, so each pass reads the one before (`resolve::incremental`, import passes).
    let sandbox = Sandbox::new();
    let core = |before: &str| format!("{before}def helper():\n    return 1\n");
    sandbox.write("pkg/core.py", core(""));
    sandbox.write("pkg/other.py", "def helper():\n    return 2\n");
    sandbox.write("pkg/mid.py", "from pkg.core import helper\n");
    sandbox.write("pkg/__init__.py", "from pkg.mid import helper\n");
    sandbox.write(
        "pkg/app.py",
        "from pkg import helper\n\n\ndef run():\n    return helper()\n",
    );
    let graph = sandbox.path().join("graph");
    let first = atlas(&sandbox, &graph, &["build", "--no-search"]).success();
    drop(first);
    let edits: [(&str, String, &str); 4] = [
        ("pkg/core.py", core("# a comment\n"), "pkg/core.py::helper"),
        (
            "pkg/core.py",
            core("def before():\n    return 0\n\n\n"),
            "pkg/core.py::helper",
        ),
        (
            "pkg/mid.py",
            "from pkg.other import helper\n".to_string(),
            "pkg/other.py::helper",
        ),
        (
            "pkg/mid.py",
            "from pkg.core import helper\n".to_string(),
            "pkg/core.py::helper",
        ),
    ];
    for (step, (path, text, target)) in edits.into_iter().enumerate() {
        sandbox.write(path, text);
        let report = build_json(&sandbox, &graph);
        let cold = sandbox.path().join(format!("cold-{step}"));
        let context = format!("edit {step} of {path}");
        let (_, dump) = assert_equals_cold(&sandbox, &graph, &report, &cold, &context);
        let call = format!("edge calls pkg/app.py::run -> {target}");
        assert!(dump.stdout.contains(&call), "{context}: {}", dump.stdout);
    }
}

#[test]
fn a_crate_renamed_in_its_manifest_rebinds_paths_into_it_as_a_cold_build_does() {
    // `app` calls `helper` through `use core_lib::helper`; two crates define `helper`,
    // so only the crate table (read from the manifests) decides which one. Renaming the
    // crates changes no source file: the reused resolution must not keep the old binding.
    let sandbox = Sandbox::new();
    let manifest = |name: &str| format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\n");
    sandbox.write("Cargo.toml", "[workspace]\nmembers = [\"crates/*\"]\n");
    sandbox.write("crates/core/Cargo.toml", manifest("core-lib"));
    sandbox.write(
        "crates/core/src/lib.rs",
        "pub fn helper() -> u32 {\n    1\n}\n",
    );
    sandbox.write("crates/other/Cargo.toml", manifest("other-lib"));
    sandbox.write(
        "crates/other/src/lib.rs",
        "pub fn helper() -> u32 {\n    2\n}\n",
    );
    sandbox.write("crates/app/Cargo.toml", manifest("app"));
    sandbox.write(
        "crates/app/src/lib.rs",
        "use core_lib::helper;\n\npub fn run() -> u32 {\n    helper()\n}\n",
    );
    let graph = sandbox.path().join("graph");
    drop(atlas(&sandbox, &graph, &["build", "--no-search"]).success());
    let edits: [(&[(&str, String)], &str); 3] = [
        (
            &[(
                "crates/core/src/lib.rs",
                "// a comment\npub fn helper() -> u32 {\n    1\n}\n".to_string(),
            )],
            "crates/core/src/lib.rs::helper",
        ),
        (
            &[
                ("crates/core/Cargo.toml", manifest("core-old")),
                ("crates/other/Cargo.toml", manifest("core_lib")),
            ],
            "crates/other/src/lib.rs::helper",
        ),
        (
            &[
                ("crates/core/Cargo.toml", manifest("core-lib")),
                ("crates/other/Cargo.toml", manifest("other-lib")),
            ],
            "crates/core/src/lib.rs::helper",
        ),
    ];
    for (step, (writes, target)) in edits.into_iter().enumerate() {
        for (path, text) in writes {
            sandbox.write(path, text);
        }
        let report = build_json(&sandbox, &graph);
        let cold = sandbox.path().join(format!("cold-{step}"));
        let context = format!("edit {step}");
        let (_, dump) = assert_equals_cold(&sandbox, &graph, &report, &cold, &context);
        let call = format!("edge calls crates/app/src/lib.rs::run -> {target}");
        assert!(dump.stdout.contains(&call), "{context}: {}", dump.stdout);
    }
}

#[test]
fn a_resolution_memo_of_another_generation_lends_it_no_segment_by_place() {
    // A segment whose files resolution left unchanged is taken from the committed
    // generation without a digest only when the memo was that generation's. Here the
    // memo is restored from an older build: against it `bulk/a/m0.py` is unchanged, but
    // the committed generation holds an edited copy of it (three lines longer).
    let sandbox = Sandbox::with_fixture("python");
    add_bulk(&sandbox);
    let graph = sandbox.path().join("graph");
    let build = || build_json(&sandbox, &graph);
    build();
    let memo = std::fs::read(graph.join("resolution.bin")).unwrap();
    let bulk = sandbox.repo().join("bulk/a/m0.py");
    let original = std::fs::read_to_string(&bulk).unwrap();
    std::fs::write(&bulk, format!("{original}# one\n# two\n# three\n")).unwrap();
    build();
    std::fs::write(graph.join("resolution.bin"), memo).unwrap();
    std::fs::write(&bulk, &original).unwrap();
    let util = sandbox.repo().join("shop/util.py");
    let text = std::fs::read_to_string(&util).unwrap() + "# edited\n";
    std::fs::write(&util, text).unwrap();
    let report = build();
    let cold = sandbox.path().join("cold");
    assert_equals_cold(
        &sandbox,
        &graph,
        &report,
        &cold,
        "a memo of an older generation",
    );
}
