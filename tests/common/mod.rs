//! Test harness: each test gets a temp dir and a clean environment; every command's argv,
//! cwd, stdout and stderr are printed when an assertion about it fails.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde::Deserialize;
use serde::de::DeserializeOwned;

pub struct Run {
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn describe(&self) -> String {
        format!(
            "$ {}\n(cwd {})\nexit {}\n--- stdout\n{}\n--- stderr\n{}",
            self.argv.join(" "),
            self.cwd.display(),
            self.code,
            self.stdout,
            self.stderr
        )
    }

    #[track_caller]
    pub fn success(self) -> Run {
        assert_eq!(self.code, 0, "command failed:\n{}", self.describe());
        self
    }

    #[track_caller]
    pub fn failure(self, code: i32, error_code: &str) -> Run {
        assert_eq!(self.code, code, "unexpected exit:\n{}", self.describe());
        assert!(
            self.stderr.contains(&format!("error[{error_code}]")),
            "expected {error_code}:\n{}",
            self.describe()
        );
        self
    }

    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.describe()))
    }
}

/// Removes every variable Atlas reads from `command`'s environment, so that a test runs
/// with the defaults unless it sets one.
fn without_atlas_env(command: &mut Command) {
    for (key, _) in std::env::vars() {
        if key.starts_with("ATLAS_")
            || key == "CLAUDE_PROJECT_DIR"
            || key == "WORKSPACE_FOLDER_PATHS"
        {
            command.env_remove(key);
        }
    }
}

pub struct Sandbox {
    pub temp: tempfile::TempDir,
}

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

impl Sandbox {
    pub fn new() -> Sandbox {
        Sandbox {
            temp: tempfile::tempdir().unwrap(),
        }
    }

    /// A sandbox whose `repo/` is a copy of a fixture repository.
    pub fn with_fixture(name: &str) -> Sandbox {
        let sandbox = Sandbox::new();
        copy_dir(&fixture(name), &sandbox.repo());
        sandbox
    }

    pub fn path(&self) -> &Path {
        self.temp.path()
    }

    pub fn repo(&self) -> PathBuf {
        self.temp.path().join("repo")
    }

    pub fn graph(&self) -> PathBuf {
        self.repo().join(".agent-spec/graph")
    }

    pub fn write(&self, relative: &str, content: impl AsRef<[u8]>) {
        let path = self.repo().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    pub fn run_bin(&self, bin: &str, args: &[&str]) -> Run {
        self.run_bin_env(bin, args, &[])
    }

    pub fn run_bin_env(&self, bin: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut command = Command::new(bin);
        command.args(args).current_dir(self.path());
        without_atlas_env(&mut command);
        command.envs(env.iter().copied());
        let output: Output = command.output().expect("binary runs");
        Run {
            argv: std::iter::once(bin.to_string())
                .chain(args.iter().map(|a| a.to_string()))
                .collect(),
            cwd: self.path().to_path_buf(),
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Runs `atlas <args>` with `--code repo` prepended.
    pub fn atlas(&self, args: &[&str]) -> Run {
        let repo = self.repo();
        let mut full = vec!["--code", repo.to_str().unwrap()];
        full.extend_from_slice(args);
        self.run_bin(env!("CARGO_BIN_EXE_atlas"), &full)
    }

    /// Runs `atlas <args>` with `--code repo` prepended and extra environment.
    pub fn atlas_env(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let repo = self.repo();
        let mut full = vec!["--code", repo.to_str().unwrap()];
        full.extend_from_slice(args);
        self.run_bin_env(env!("CARGO_BIN_EXE_atlas"), &full, env)
    }

    /// Starts `atlas --code repo <args>` as a child process in the background (a daemon, a
    /// watcher), with the same clean environment plus `env`, its output discarded.
    pub fn spawn_atlas(&self, args: &[&str], env: &[(&str, &str)]) -> std::process::Child {
        let repo = self.repo();
        let mut command = Command::new(env!("CARGO_BIN_EXE_atlas"));
        command
            .arg("--code")
            .arg(&repo)
            .args(args)
            .current_dir(self.path())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        without_atlas_env(&mut command);
        command.envs(env.iter().copied());
        command.spawn().expect("atlas starts")
    }

    pub fn build_json(&self) -> serde_json::Value {
        self.atlas(&["build", "--format", "json"]).success().json()
    }

    pub fn current(&self) -> String {
        std::fs::read_to_string(self.graph().join("CURRENT"))
            .unwrap()
            .trim()
            .to_string()
    }

    pub fn graph_file(&self) -> PathBuf {
        self.graph()
            .join("generations")
            .join(self.current())
            .join("graph.atlas")
    }
}

// ── Call builder ────────────────────────────────────────────────────────────────────

/// One `atlas` invocation under construction: `s.context("q").profile("flow").json().run()`.
/// Arguments keep the order they were added in, after `--code <repo>`; [`Call::arg`] is
/// the escape hatch for any other flag.
#[must_use = "a call does nothing until `.run()`"]
pub struct Call<'a> {
    sandbox: &'a Sandbox,
    bin: &'static str,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

impl Sandbox {
    /// `atlas --code <repo> <subcommand>`.
    pub fn call(&self, subcommand: &str) -> Call<'_> {
        Call {
            sandbox: self,
            bin: env!("CARGO_BIN_EXE_atlas"),
            args: vec![subcommand.to_string()],
            env: Vec::new(),
        }
    }

    /// `atlas --code <repo> context <query>`.
    pub fn context(&self, query: &str) -> Call<'_> {
        self.call("context").arg(query)
    }

    /// `atlas --code <repo> search <query>`.
    pub fn search(&self, query: &str) -> Call<'_> {
        self.call("search").arg(query)
    }

    /// `atlas --code <repo> expand <refs…>`.
    pub fn expand(&self, refs: &[&str]) -> Call<'_> {
        self.call("expand").args(refs.iter().copied())
    }

    /// Runs a literal argv printed by atlas (an omission's or a choice's `argv`, whose
    /// `argv[0]` is `atlas`) in a new process, as-is.
    #[track_caller]
    pub fn replay(&self, argv: &[String]) -> Run {
        assert_eq!(argv.first().map(String::as_str), Some("atlas"), "{argv:?}");
        let args: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
        self.run_bin(env!("CARGO_BIN_EXE_atlas"), &args)
    }
}

impl<'a> Call<'a> {
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    pub fn args<S: Into<String>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    fn flag(self, flag: &str, value: impl ToString) -> Self {
        self.arg(flag).arg(value.to_string())
    }

    pub fn profile(self, profile: &str) -> Self {
        self.flag("--profile", profile)
    }

    pub fn frozen(self) -> Self {
        self.arg("--frozen")
    }

    pub fn no_build(self) -> Self {
        self.arg("--no-build")
    }

    pub fn max_bytes(self, bytes: usize) -> Self {
        self.flag("--max-bytes", bytes)
    }

    pub fn min_score(self, score: u16) -> Self {
        self.flag("--min-score", score)
    }

    pub fn expect_graph(self, fingerprint: &str) -> Self {
        self.flag("--expect-graph", fingerprint)
    }

    pub fn after(self, cursor: &str) -> Self {
        self.flag("--after", cursor)
    }

    pub fn top_k(self, k: usize) -> Self {
        self.flag("--top-k", k)
    }

    pub fn max_tokens(self, tokens: usize) -> Self {
        self.flag("--max-tokens", tokens)
    }

    pub fn format(self, format: &str) -> Self {
        self.flag("--format", format)
    }

    /// `--format json`.
    pub fn json(self) -> Self {
        self.format("json")
    }

    /// `--format text`.
    pub fn text(self) -> Self {
        self.format("text")
    }

    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    /// Runs `agent-spec atlas …` (the alias binary) instead of `atlas …`.
    pub fn via_agent_spec(mut self) -> Self {
        self.bin = env!("CARGO_BIN_EXE_agent-spec");
        self
    }

    /// The argv after the binary name, as it will be run.
    pub fn argv(&self) -> Vec<String> {
        let mut argv = Vec::new();
        if self.bin == env!("CARGO_BIN_EXE_agent-spec") {
            argv.push("atlas".to_string());
        }
        argv.push("--code".to_string());
        argv.push(self.sandbox.repo().to_str().unwrap().to_string());
        argv.extend(self.args.iter().cloned());
        argv
    }

    pub fn run(self) -> Run {
        let argv = self.argv();
        let args: Vec<&str> = argv.iter().map(String::as_str).collect();
        let env: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        self.sandbox.run_bin_env(self.bin, &args, &env)
    }
}

// ── Typed JSON outputs (only the fields tests read; unknown fields are allowed) ─────

impl Run {
    /// Stdout parsed into a typed output.
    #[track_caller]
    pub fn parse<T: DeserializeOwned>(&self) -> T {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not a {} ({e}):\n{}",
                std::any::type_name::<T>(),
                self.describe()
            )
        })
    }

    /// `atlas context --format json` output.
    #[track_caller]
    pub fn context(&self) -> ContextOut {
        self.parse()
    }

    /// `atlas search --format json` output.
    #[track_caller]
    pub fn search(&self) -> SearchOut {
        self.parse()
    }

    /// `atlas expand --format json` output.
    #[track_caller]
    pub fn expand(&self) -> ExpandOut {
        self.parse()
    }

    /// The JSON error envelope of a failed `--format json` command; its `exit_code` is the
    /// process's and its `code` is the one on stderr.
    #[track_caller]
    pub fn error(&self) -> ErrorBody {
        let body = self.parse::<ErrorOut>().error;
        assert_eq!(body.exit_code, self.code, "{}", self.describe());
        assert!(
            self.stderr.contains(&format!("error[{}]", body.code)),
            "{}",
            self.describe()
        );
        body
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct ContextOut {
    pub graph: GraphOut,
    pub intent: IntentOut,
    /// Absent when empty.
    #[serde(default)]
    pub spine: Vec<SpineStep>,
    pub evidence: Vec<Evidence>,
    pub omissions: Vec<Omission>,
    pub diagnostics: Vec<Diagnostic>,
    pub receipt: Receipt,
}

impl ContextOut {
    /// The anchors' symbols, in order.
    pub fn anchor_symbols(&self) -> Vec<&str> {
        self.intent
            .anchors
            .iter()
            .map(|a| a.symbol.as_str())
            .collect()
    }

    pub fn classes(&self) -> Vec<&str> {
        self.evidence.iter().map(|e| e.class.as_str()).collect()
    }

    pub fn ids(&self) -> Vec<&str> {
        self.evidence.iter().map(|e| e.id.as_str()).collect()
    }

    /// Evidence items of one class.
    pub fn of_class<'s>(&'s self, class: &'s str) -> impl Iterator<Item = &'s Evidence> + 's {
        self.evidence.iter().filter(move |e| e.class == class)
    }

    /// Whether an item of `class` names `symbol`.
    pub fn has(&self, class: &str, symbol: &str) -> bool {
        self.of_class(class)
            .any(|e| e.symbol.as_deref() == Some(symbol))
    }

    pub fn statement_codes(&self) -> Vec<&str> {
        self.evidence
            .iter()
            .filter_map(|e| e.statement.as_ref().map(|s| s.code.as_str()))
            .collect()
    }

    pub fn omission_reasons(&self) -> Vec<&str> {
        self.omissions.iter().map(|o| o.reason.as_str()).collect()
    }

    /// The first omission group with `reason`.
    pub fn omission(&self, reason: &str) -> Option<&Omission> {
        self.omissions.iter().find(|o| o.reason == reason)
    }

    pub fn diagnostic(&self, code: &str) -> Option<&Diagnostic> {
        self.diagnostics.iter().find(|d| d.code == code)
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct GraphOut {
    pub fingerprint: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct IntentOut {
    pub anchors: Vec<Anchor>,
    pub free_terms: Vec<String>,
    pub alternative: Option<Anchor>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Anchor {
    pub term: String,
    pub symbol: String,
    pub tier: Option<String>,
    pub anchor_reason: String,
    #[serde(default)]
    pub arms: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct SpineStep {
    pub symbol: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Evidence {
    pub id: String,
    pub class: String,
    pub score: u16,
    pub required: bool,
    pub reasons: Vec<String>,
    pub symbol: Option<String>,
    pub path: Option<String>,
    pub relation: Option<Relation>,
    #[serde(default)]
    pub sites: Vec<Site>,
    pub site_count: Option<usize>,
    pub statement: Option<Statement>,
    pub source: Option<Source>,
    pub projection: String,
    #[serde(default)]
    pub diagnostics: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Relation {
    pub provenance: String,
    pub resolution: String,
    pub site: Option<Site>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Site {
    pub path: String,
    pub line: u32,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Statement {
    pub code: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Source {
    pub lines: [u32; 2],
    pub text: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Omission {
    pub class: String,
    pub reason: String,
    pub count: usize,
    pub top: TopCandidate,
    pub argv: Vec<String>,
}

/// The best-scored candidate of an omission group.
#[derive(Debug, Clone, Deserialize)]
pub struct TopCandidate {
    pub id: String,
    pub symbol: Option<String>,
    pub score: u16,
}

impl Omission {
    /// The value after `flag` in the continuation argv.
    pub fn flag(&self, flag: &str) -> Option<&str> {
        value_after(&self.argv, flag)
    }
}

/// The value after `flag` in an argv.
pub fn value_after<'s>(argv: &'s [String], flag: &str) -> Option<&'s str> {
    let at = argv.iter().position(|a| a == flag)?;
    argv.get(at + 1).map(String::as_str)
}

#[derive(Debug, Clone, Deserialize)]
pub struct Diagnostic {
    pub code: String,
    #[serde(default)]
    pub message: String,
    pub path: Option<String>,
    #[serde(default)]
    pub candidates: Vec<Choice>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Choice {
    pub symbol: String,
    pub argv: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Receipt {
    pub limits: Limits,
    pub retrieval: RetrievalReceipt,
    pub projection: ProjectionReceipt,
    pub serialized_bytes: usize,
    pub read_back_required: bool,
    pub refreshed: bool,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Limits {
    pub max_bytes: usize,
    pub min_score: u16,
    pub overridden: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RetrievalReceipt {
    pub total: usize,
    pub returned: usize,
    pub cursor_prefix: usize,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ProjectionReceipt {
    pub below_threshold: usize,
    pub byte_omitted: usize,
    pub item_capped: usize,
    pub skeletonized: usize,
    pub policy_skeletonized: usize,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ErrorOut {
    pub error: ErrorBody,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ErrorBody {
    pub code: String,
    pub exit_code: i32,
    pub message: String,
    /// `null` for errors without details.
    pub details: Option<ErrorDetails>,
}

impl ErrorBody {
    #[track_caller]
    pub fn details(&self) -> &ErrorDetails {
        self.details.as_ref().expect("error details")
    }
}

/// The union of the detail fields tests read; each error fills its own.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ErrorDetails {
    pub candidates: Vec<String>,
    pub choices: Vec<Choice>,
    pub evidence_id: Option<String>,
    pub needs_bytes: Option<usize>,
    pub limit: Option<String>,
    pub expected: Option<String>,
    pub suggestions: Vec<Suggestion>,
}

/// A name offered for a query's unmatched word (`atlas-context-no-match`).
#[derive(Debug, Clone, Deserialize)]
pub struct Suggestion {
    pub term: String,
    pub name: String,
    pub argv: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct SearchOut {
    pub query: String,
    /// What was searched when it is not `query` (a Portuguese question in English too).
    pub searched: Option<String>,
    /// Sections on the reporter's environment that were not searched.
    #[serde(default)]
    pub set_aside: Vec<SetAside>,
    pub profile: String,
    pub hits: Vec<Hit>,
    /// Absent in the compact profile.
    pub arms: Option<ArmCounts>,
    pub reranked: Option<bool>,
    /// Present when results were cut to fit.
    pub budget: Option<Budget>,
}

/// A section of a search's query that was not searched: its heading and its lines.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SetAside {
    pub heading: String,
    pub lines: usize,
}

impl SearchOut {
    #[track_caller]
    pub fn arms(&self) -> &ArmCounts {
        self.arms.as_ref().expect("`arms` (full profile)")
    }

    pub fn symbols(&self) -> Vec<&str> {
        self.hits.iter().map(|h| h.symbol.as_str()).collect()
    }
}

/// A search hit; the compact profile has only `path`, `symbol`, `lines` and `ref`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Hit {
    pub path: String,
    pub symbol: String,
    pub kind: Option<String>,
    pub lines: [u32; 2],
    pub score: Option<f64>,
    #[serde(default)]
    pub match_arms: Vec<String>,
    #[serde(rename = "ref")]
    pub reference: String,
    pub commit: Option<Commit>,
}

impl Hit {
    pub fn found_by(&self, arm: &str) -> bool {
        self.match_arms.iter().any(|a| a == arm)
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Commit {
    pub subject: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ArmCounts {
    pub bm25: usize,
    pub vector: usize,
    pub graph: usize,
    /// Symbols BM25 found within the best files that the other arms had not.
    #[serde(default)]
    pub file: usize,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Budget {
    pub mode: String,
    pub tokenizer: String,
    pub max_tokens: Option<usize>,
    pub budget: usize,
    pub used: usize,
    pub cut: usize,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ExpandOut {
    pub items: Vec<Expanded>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Expanded {
    pub content: String,
    pub content_range: [usize; 2],
    pub content_complete: bool,
    pub next_ref: Option<String>,
    pub outline: Option<Vec<OutlineEntry>>,
    #[serde(default)]
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct OutlineEntry {
    pub symbol: String,
}

/// `search/<generation>/index.json`, the search index's metadata.
#[derive(Debug, Clone, Deserialize)]
pub struct IndexMeta {
    pub mode: String,
    pub base: Option<String>,
    pub files_indexed: usize,
    pub symbols: usize,
    pub commits: usize,
    pub embedded: usize,
    pub head: Option<String>,
    /// Relative path → `{bytes, blake3}`.
    #[serde(default)]
    pub artifacts: std::collections::BTreeMap<String, IndexArtifact>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct IndexArtifact {
    pub bytes: u64,
    pub blake3: String,
}

impl Sandbox {
    /// The metadata of the current generation's search index.
    #[track_caller]
    pub fn index_meta(&self) -> IndexMeta {
        let path = self
            .graph()
            .join("search")
            .join(self.current())
            .join("index.json");
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }
}

/// One line of `observability/events.jsonl`.
#[derive(Debug, Clone, Deserialize)]
pub struct ObservedEvent {
    pub tool: String,
    pub outcome: String,
    pub chars: usize,
    pub bytes: usize,
    pub tokens: Option<usize>,
    pub tokenizer: ObservedTokenizer,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ObservedTokenizer {
    pub name: String,
    pub sha256: String,
}

/// `atlas build --format json` report.
#[derive(Debug, Clone, Deserialize)]
pub struct BuildOut {
    pub files: usize,
    pub skipped: Vec<SkippedFile>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct SkippedFile {
    pub path: String,
    pub reason: String,
}
