//! `atlas build` end to end: determinism, incremental builds, generations, bad input.

mod common;

use common::{Sandbox, copy_dir, fixture};

#[test]
fn same_inputs_give_the_same_fingerprint_and_bytes_in_two_directories() {
    let a = Sandbox::with_fixture("mixed");
    let b = Sandbox::with_fixture("mixed");
    let ra = a.build_json();
    let rb = b.build_json();
    assert_eq!(ra["fingerprint"], rb["fingerprint"]);
    let bytes_a = std::fs::read(a.graph_file()).unwrap();
    let bytes_b = std::fs::read(b.graph_file()).unwrap();
    assert!(bytes_a == bytes_b, "graph files differ between directories");

    // Rebuilding from scratch in the same directory reproduces the same bytes.
    std::fs::remove_dir_all(a.graph()).unwrap();
    let again = a.build_json();
    assert_eq!(again["fingerprint"], ra["fingerprint"]);
    assert_eq!(
        again["parsed"], ra["parsed"],
        "a cold cache re-parses everything"
    );
    assert!(std::fs::read(a.graph_file()).unwrap() == bytes_a);
}

#[test]
fn unchanged_tree_publishes_nothing() {
    let s = Sandbox::with_fixture("python");
    let first = s.build_json();
    assert_eq!(first["unchanged"], false);
    let second = s.build_json();
    assert_eq!(second["unchanged"], true);
    assert_eq!(second["parsed"], 0);
    assert_eq!(second["fingerprint"], first["fingerprint"]);
}

#[test]
fn incremental_builds_reparse_only_changed_files() {
    let s = Sandbox::with_fixture("python");
    let cold = s.build_json();
    assert_eq!(cold["parsed"], 6);

    s.write(
        "shop/util.py",
        "def apply_discount(amount, rate):\n    return amount\n",
    );
    let edit = s.build_json();
    assert_eq!(
        (edit["parsed"].as_u64(), edit["cached"].as_u64()),
        (Some(1), Some(5)),
        "edit"
    );

    s.write("shop/extra.py", "def extra():\n    return 1\n");
    let add = s.build_json();
    assert_eq!(add["parsed"], 1, "add");
    assert_eq!(add["files"], 7);

    std::fs::remove_file(s.repo().join("shop/extra.py")).unwrap();
    let delete = s.build_json();
    assert_eq!(delete["parsed"], 0, "delete");
    assert_eq!(delete["files"], 6);

    std::fs::rename(
        s.repo().join("shop/util.py"),
        s.repo().join("shop/helpers.py"),
    )
    .unwrap();
    let rename = s.build_json();
    assert_eq!(rename["parsed"], 0, "rename: same content, cached facts");
    assert_ne!(rename["fingerprint"], delete["fingerprint"]);
    let dump = s.atlas(&["graph", "dump"]).success().stdout;
    assert!(
        dump.contains("symbol function shop/helpers.py::apply_discount"),
        "{dump}"
    );
}

#[test]
fn old_generations_are_collected_keeping_two() {
    let s = Sandbox::with_fixture("python");
    for i in 0..4 {
        s.write(
            "shop/extra.py",
            format!("def extra{i}():\n    return {i}\n"),
        );
        s.build_json();
    }
    let generations: Vec<_> = std::fs::read_dir(s.graph().join("generations"))
        .unwrap()
        .collect();
    assert_eq!(generations.len(), 2);
    assert!(s.graph_file().is_file(), "the committed generation is kept");
}

#[test]
fn agent_spec_alias_behaves_exactly_like_atlas() {
    let s = Sandbox::with_fixture("go");
    s.build_json();
    let repo = s.repo();
    let repo = repo.to_str().unwrap();
    let agent_spec = env!("CARGO_BIN_EXE_agent-spec");
    for args in [
        vec!["--code", repo, "status", "--format", "json"],
        vec!["--code", repo, "graph", "dump"],
        vec!["--code", "/definitely/missing", "build"],
        vec!["--code", repo, "build", "--bogus-flag"],
    ] {
        let direct = s.run_bin(env!("CARGO_BIN_EXE_atlas"), &args);
        let mut alias_args = vec!["atlas"];
        alias_args.extend(args.iter().copied());
        let alias = s.run_bin(agent_spec, &alias_args);
        assert_eq!(
            direct.code,
            alias.code,
            "{}\n{}",
            direct.describe(),
            alias.describe()
        );
        assert_eq!(
            direct.stdout,
            alias.stdout,
            "{}\n{}",
            direct.describe(),
            alias.describe()
        );
        assert_eq!(direct.stderr, alias.stderr);
    }
    let bare = s.run_bin(agent_spec, &["status"]);
    assert_eq!(bare.code, 2, "{}", bare.describe());
}

#[test]
fn a_command_line_error_in_json_names_what_is_missing() {
    // Clap renders a missing argument on a line of its own; the JSON message is what an
    // agent reads, so it must name the argument, not stop at the colon before it.
    let s = Sandbox::with_fixture("python");
    let repo = s.repo();
    let repo = repo.to_str().unwrap();
    let run = s.run_bin(
        env!("CARGO_BIN_EXE_atlas"),
        &[
            "--code",
            repo,
            "context",
            "where is the config read",
            "--format",
            "json",
        ],
    );
    let run = run.failure(2, "atlas-invalid-input");
    let message = run.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(
        message.contains("required arguments were not provided: --profile <PROFILE>"),
        "{message}"
    );
    assert!(!message.contains("Usage:"), "{message}");
    let run = s.run_bin(
        env!("CARGO_BIN_EXE_atlas"),
        &["--code", repo, "status", "--format", "json", "--bogus-flag"],
    );
    let run = run.failure(2, "atlas-invalid-input");
    let message = run.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("'--bogus-flag'"), "{message}");
}

#[test]
fn missing_code_dir_is_a_clear_error() {
    let s = Sandbox::new();
    let run = s.run_bin(
        env!("CARGO_BIN_EXE_atlas"),
        &["--code", "nope", "build", "--format", "json"],
    );
    let run = run.failure(3, "atlas-code-missing");
    assert_eq!(run.json()["error"]["code"], "atlas-code-missing");
    // Every command says the same of a `--code` that is missing or is a file, even beside
    // a graph that exists.
    let built = Sandbox::with_fixture("python");
    built.build_json();
    built.write("a-file.txt", "not a directory\n");
    let file = built.path().join("a-file.txt");
    let file = file.to_str().unwrap();
    for code in ["nope", file] {
        for command in [
            &["status"][..],
            &["context", "checkout", "--profile", "symbol", "--frozen"],
            &["search", "cart", "--frozen"],
        ] {
            let graph = built.graph();
            let mut args = vec!["--code", code, "--graph", graph.to_str().unwrap()];
            args.extend_from_slice(command);
            built
                .run_bin(env!("CARGO_BIN_EXE_atlas"), &args)
                .failure(3, "atlas-code-missing");
        }
    }
}

#[test]
fn status_without_a_graph_says_so() {
    let s = Sandbox::with_fixture("go");
    s.atlas(&["status"]).failure(3, "atlas-graph-missing");
}

#[test]
fn strict_fails_on_partial_files_and_plain_build_reports_them() {
    let s = Sandbox::with_fixture("python");
    let report = s.build_json();
    assert_eq!(report["partial"][0]["path"], "broken.py");
    // The text status says what the JSON does: syntax errors, counted.
    let status = s.atlas(&["status"]).success();
    assert!(
        status
            .stdout
            .contains("partial     broken.py (2 syntax errors)"),
        "{}",
        status.stdout
    );
    let before = s.current();
    s.write("broken.py", "def broken(:\n    pass\n\ndef other(:\n");
    s.atlas(&["build", "--strict"])
        .failure(6, "atlas-build-strict-partial");
    assert_eq!(s.current(), before, "a failed strict build commits nothing");
    // A file cut at the nesting limit says that limit in text as in JSON, not "0 errors".
    s.write(
        "deep.py",
        format!("x = {}1{}\n", "(".repeat(600), ")".repeat(600)),
    );
    let text = s.atlas(&["build"]).success();
    assert!(
        text.stdout.contains("truncated deep.py: syntax nested"),
        "{}",
        text.stdout
    );
}

#[test]
fn unsupported_binary_non_utf8_and_huge_files_are_skipped_with_diagnostics() {
    let s = Sandbox::with_fixture("python");
    s.write("shop/binary.py", b"print(1)\0\0\0");
    s.write("shop/latin1.py", b"# caf\xe9\nx = 1\n");
    s.write("shop/huge.py", "x = 1\n".repeat(200_000));
    s.write("native/lib.c", "int main(void) { return 0; }\n");
    // A source file whose name is not UTF-8 cannot be a graph path: said, not dropped.
    {
        use std::os::unix::ffi::OsStrExt;
        let name = std::ffi::OsStr::from_bytes(b"bad\xff\xfename.py");
        std::fs::write(s.repo().join("shop").join(name), "def f():\n    return 1\n").unwrap();
    }
    let report = s.build_json();
    let skipped: Vec<(String, String)> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["path"].as_str().unwrap().to_string(),
                s["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(
        skipped.contains(&("shop/binary.py".into(), "binary".into())),
        "{skipped:?}"
    );
    assert!(
        skipped.contains(&("shop/latin1.py".into(), "not-utf8".into())),
        "{skipped:?}"
    );
    assert!(
        skipped.contains(&("shop/huge.py".into(), "too-large".into())),
        "{skipped:?}"
    );
    assert!(
        skipped.contains(&(
            "shop/bad\u{fffd}\u{fffd}name.py".into(),
            "unreadable".into()
        )),
        "{skipped:?}"
    );
    let status = s.atlas(&["status", "--format", "json"]).success().json();
    assert_eq!(status["coverage"]["files_skipped"], 4);
    assert_eq!(status["coverage"]["unsupported_by_extension"]["c"], 1);
    assert_eq!(
        status["staleness"]["stale"], false,
        "skipped files are not staleness"
    );
}

#[test]
fn inventory_limits_are_reported_not_silent() {
    let s = Sandbox::with_fixture("python");
    let report = s
        .atlas(&["build", "--max-files", "2", "--format", "json"])
        .success()
        .json();
    assert_eq!(report["files"], 2);
    assert_eq!(report["truncated"]["limit"], "max-files");
    assert_eq!(report["truncated"]["files_seen"], 6);
    let status = s.atlas(&["status", "--format", "json"]).success().json();
    assert_eq!(status["coverage"]["truncated"]["files_kept"], 2);
    // A build of no files is a wrong call, not an empty graph published.
    let committed = s.current();
    s.atlas(&["build", "--max-files", "0"])
        .failure(2, "atlas-invalid-input");
    assert_eq!(s.current(), committed);
}

#[test]
fn exclusions_ignore_rules_hidden_and_nested_repositories() {
    let s = Sandbox::with_fixture("mixed");
    s.write(".gitignore", "ignored_by_git.py\n");
    s.write("ignored_by_git.py", "def a(): pass\n");
    s.write(".hidden/secret.py", "def b(): pass\n");
    s.write("nested/.git/HEAD", "ref: refs/heads/main\n");
    s.write("nested/inner.py", "def c(): pass\n");
    s.write("target/debug/gen.rs", "fn d() {}\n");
    s.write("web/dist/app.min.js", "function e(){}\n");
    s.write("web/src/app.min.js", "function e(){}\n");
    // Build output under the root and under a package root is left out; a source module
    // named like it (`src/build/`) is not.
    s.write("build/lib/copied.py", "def f(): pass\n");
    s.write("pkg/package.json", "{}\n");
    s.write("pkg/dist/bundle.js", "function g(){}\n");
    s.write("pkg/lib/out/render.js", "function h(){}\n");
    s.write("tools/src/build/steps.py", "def step(): pass\n");
    s.build_json();
    let dump = s.atlas(&["graph", "dump"]).success().stdout;
    let files: Vec<&str> = dump.lines().filter(|l| l.starts_with("file ")).collect();
    for excluded in [
        "ignored_by_git.py",
        ".hidden",
        "nested/inner.py",
        "target/",
        "node_modules",
        "app.min.js",
        "build/lib/copied.py",
        "pkg/dist/",
    ] {
        assert!(
            !files.iter().any(|f| f.contains(excluded)),
            "{excluded} leaked: {files:#?}"
        );
    }
    assert!(dump.contains("file tools/src/build/steps.py python source"));
    assert!(dump.contains("file pkg/lib/out/render.js javascript source"));
    assert!(dump.contains("file server/api.py python source"));
    assert!(dump.contains("file server/api_pb2.py python generated"));
    assert!(dump.contains("file server/test_api.py python test"));
    assert!(dump.contains("file vendor/leftpad/index.js javascript vendored"));
    assert!(dump.contains("file web/src/client.spec.ts typescript test"));
    assert!(dump.contains("file README.md - doc"));
    assert!(dump.contains("file package.json - manifest"));
}

#[test]
fn status_reports_staleness_and_edges_by_provenance() {
    let s = Sandbox::with_fixture("python");
    s.build_json();
    let fresh = s.atlas(&["status", "--format", "json"]).success().json();
    assert_eq!(fresh["staleness"]["stale"], false);
    assert_eq!(
        fresh["graph_dir_rule"], "ascending search",
        "the committed graph is found from --code"
    );
    assert_eq!(fresh["files_by_language"]["python"], 6);
    assert!(
        fresh["edges"]["calls"]["tree-sitter"]["import"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert_eq!(fresh["symbols_by_kind"]["method"], 7);
    assert_eq!(fresh["coverage"]["files_with_parse_errors"], 1);
    // The committed generation as read: format 5, modules and one group of files.
    assert_eq!(fresh["format_version"], 5);
    assert_eq!(fresh["segments"], 2);
    s.write("shop/util.py", "def changed():\n    pass\n");
    s.write("shop/new.py", "x = 1\n");
    std::fs::remove_file(s.repo().join("shop/__init__.py")).unwrap();
    let stale = s.atlas(&["status", "--format", "json"]).success().json();
    assert_eq!(stale["staleness"]["stale"], true);
    assert_eq!(
        (
            stale["staleness"]["changed"].as_u64(),
            stale["staleness"]["added"].as_u64(),
            stale["staleness"]["removed"].as_u64()
        ),
        (Some(1), Some(1), Some(1))
    );
    let text = s.atlas(&["status"]).success().stdout;
    assert!(text.contains("stale"), "{text}");
}

#[test]
fn completions_are_generated() {
    let s = Sandbox::new();
    let run = s
        .run_bin(env!("CARGO_BIN_EXE_atlas"), &["completions", "bash"])
        .success();
    assert!(run.stdout.contains("atlas"));
    assert!(run.stdout.contains("--strict"));
}

#[test]
fn graph_dir_env_and_flag_are_honoured() {
    let s = Sandbox::with_fixture("go");
    let custom = s.path().join("custom-graph");
    let run = s
        .atlas(&[
            "--graph",
            custom.to_str().unwrap(),
            "build",
            "--format",
            "json",
        ])
        .success()
        .json();
    assert!(custom.join("CURRENT").is_file());
    assert!(
        run["generation"]
            .as_str()
            .unwrap()
            .starts_with(custom.to_str().unwrap())
    );
    let status = s
        .atlas(&[
            "--graph",
            custom.to_str().unwrap(),
            "status",
            "--format",
            "json",
        ])
        .success()
        .json();
    assert_eq!(status["graph_dir_rule"], "flag --graph");
}

#[test]
fn fixture_repositories_build_in_a_nested_copy() {
    // The fixtures directory itself builds as one repository (nested layout, many languages).
    let s = Sandbox::new();
    copy_dir(&fixture(""), &s.repo());
    let report = s.build_json();
    assert!(report["files"].as_u64().unwrap() > 30);
    assert!(report["symbols"].as_u64().unwrap() > 100);
}

/// `src/link.rs`: on x86_64 Linux the binaries are linked without PIE (start-up time), so
/// the ELF type is `ET_EXEC` (2), not `ET_DYN` (3) — unless the build asked for PIE.
#[test]
#[cfg(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu"))]
fn the_binaries_are_linked_without_pie_on_x86_64_linux() {
    if option_env!("ATLAS_LINK_PIE").is_some() {
        return;
    }
    for binary in [
        env!("CARGO_BIN_EXE_atlas"),
        env!("CARGO_BIN_EXE_agent-spec"),
    ] {
        let mut header = [0u8; 18];
        std::io::Read::read_exact(&mut std::fs::File::open(binary).unwrap(), &mut header).unwrap();
        assert_eq!(&header[..4], b"\x7fELF", "{binary}");
        let elf_type = u16::from_le_bytes([header[16], header[17]]);
        assert_eq!(elf_type, 2, "{binary} is not a fixed-address executable");
    }
}
