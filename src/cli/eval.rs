//! `atlas eval --corpus FILE`: scores `atlas context` on the versioned query corpus
//! (R-E-1). Runs offline on copies of the fixture repositories, and always produces its
//! receipt — also when cases fail.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use clap::Subcommand;
use serde::{Deserialize, Serialize};

use std::sync::Arc;

use crate::build::pipeline::{self, BuildOptions};
use crate::build::store::Location;
use crate::config::Config;
use crate::query::search::IndexCompanion;

use super::call::Call;
use super::output::{Format, absolute, error_body, pretty_json, print_json, print_stdout};
use crate::build::session::Freshness;
use crate::error::{AtlasError, IoContext, Result};
use crate::query::context::{self, ContextRequest};
use crate::query::profile::ProfileName;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Corpus {
    pub version: u32,
    /// Fixture repositories, relative to the corpus file.
    #[serde(default = "default_fixtures")]
    pub fixtures: String,
    /// Real repositories the cases may name (`repo = "<key>"`), checked out by the caller
    /// under `--repos DIR/<key>` at `rev` (they are never part of this repository).
    #[serde(default)]
    pub repos: BTreeMap<String, RepoSpec>,
    #[serde(rename = "case")]
    pub cases: Vec<Case>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RepoSpec {
    /// `owner/name` on GitHub.
    pub repo: String,
    /// The commit the cases were written against.
    pub rev: String,
    pub language: String,
}

fn default_fixtures() -> String {
    "../fixtures".into()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mutation {
    pub path: String,
    pub append: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub name: String,
    /// Defaults to the case's `signal`, else its profile.
    #[serde(default)]
    pub class: String,
    /// A fixture repository (`fixtures/<name>`) …
    #[serde(default)]
    pub fixture: String,
    /// … or a real repository of `[repos]`.
    pub repo: Option<String>,
    pub query: String,
    pub profile: String,
    pub max_bytes: Option<u32>,
    pub min_score: Option<u16>,
    #[serde(default)]
    pub expect_symbols: Vec<String>,
    #[serde(default)]
    pub expect_paths: Vec<String>,
    #[serde(default)]
    pub forbidden: Vec<String>,
    #[serde(default)]
    pub required_evidence: Vec<String>,
    #[serde(default)]
    pub required_diagnostics: Vec<String>,
    pub expect_error: Option<String>,
    #[serde(default)]
    pub allowed_ambiguity: bool,
    #[serde(default)]
    pub mutate: Vec<Mutation>,
    pub continue_reason: Option<String>,
    /// Symbols that must be on the spine (flow): spine recall.
    #[serde(default)]
    pub expect_spine: Vec<String>,
    /// Symbols expected somewhere in the evidence: evidence symbol recall.
    #[serde(default)]
    pub expect_evidence: Vec<String>,
    /// What the case exercises (flow benchmark): its class by default.
    pub signal: Option<String>,
    pub note: Option<String>,
}

impl Case {
    fn class(&self) -> String {
        if !self.class.is_empty() {
            return self.class.clone();
        }
        self.signal.clone().unwrap_or_else(|| self.profile.clone())
    }
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct CaseMetrics {
    pub name: String,
    pub class: String,
    /// The case's language (a repository case's, or `fixture`).
    pub language: String,
    pub passed: bool,
    pub failures: Vec<String>,
    pub recall: f64,
    pub mrr: f64,
    pub path_precision: f64,
    pub path_recall: f64,
    pub forbidden_hit_rate: f64,
    pub evidence_recall: f64,
    pub bytes: usize,
    pub latency_ms: f64,
    pub read_backs: usize,
    pub follow_ups: usize,
    pub pages: usize,
    /// 1 when every `expect_spine` symbol is on the spine (flow), else 0.
    pub spine_recall: f64,
    /// Share of `expect_spine` symbols on the spine.
    pub spine_symbol_recall: f64,
    /// Share of `expect_spine` and `expect_evidence` symbols found in the evidence.
    pub symbol_evidence_recall: f64,
    /// The spine as answered.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub spine: Vec<String>,
}

/// One case's outputs: the JSON of each page (or the error body) and its metrics.
pub struct CaseRun {
    pub pages: Vec<String>,
    pub error: Option<String>,
    pub metrics: CaseMetrics,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct ClassSummary {
    pub cases: usize,
    pub passed: usize,
    pub spine_recall: f64,
    pub spine_symbol_recall: f64,
    pub symbol_evidence_recall: f64,
    pub recall: f64,
    pub mrr: f64,
    pub path_precision: f64,
    pub path_recall: f64,
    pub forbidden_hit_rate: f64,
    pub evidence_recall: f64,
    pub bytes: f64,
    pub latency_ms: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct EvalReport {
    pub corpus: String,
    pub version: u32,
    pub cases: Vec<CaseMetrics>,
    pub classes: BTreeMap<String, ClassSummary>,
    pub languages: BTreeMap<String, ClassSummary>,
    pub overall: ClassSummary,
    pub passed: bool,
}

pub fn load(path: &Path) -> Result<Corpus> {
    let text = std::fs::read_to_string(path).at(path)?;
    toml::from_str(&text).map_err(|e| AtlasError::InvalidInput {
        what: "corpus",
        reason: format!("{}: {e}", path.display()),
    })
}

fn profile_of(name: &str) -> Result<ProfileName> {
    <ProfileName as clap::ValueEnum>::from_str(name, false).map_err(|_| AtlasError::InvalidInput {
        what: "corpus profile",
        reason: name.to_string(),
    })
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).at(to)?;
    for entry in std::fs::read_dir(from).at(from)? {
        let entry = entry.at(from)?;
        let target = to.join(entry.file_name());
        if entry.file_type().at(entry.path())?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target).at(&target)?;
        }
    }
    Ok(())
}

/// A scratch directory removed on drop.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(name: &str) -> Scratch {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    Scratch(std::env::temp_dir().join(format!("atlas-eval-{}-{n}-{name}", std::process::id())))
}

fn ratio(hits: usize, total: usize) -> f64 {
    if total == 0 {
        1.0
    } else {
        hits as f64 / total as f64
    }
}

/// Where cases run: a fixture copied and built per case, or a real repository built once
/// per run (its graph lives in a scratch directory, never in the checkout).
pub struct Workspaces {
    fixtures: PathBuf,
    repos: Option<PathBuf>,
    specs: BTreeMap<String, RepoSpec>,
    built: std::cell::RefCell<BTreeMap<String, (Scratch, Location)>>,
    /// The configuration cases run with.
    config: Config,
}

impl Workspaces {
    pub fn new(
        fixtures: PathBuf,
        repos: Option<PathBuf>,
        specs: BTreeMap<String, RepoSpec>,
        config: Config,
    ) -> Self {
        Workspaces {
            fixtures,
            repos,
            specs,
            built: Default::default(),
            config,
        }
    }

    /// Build options that publish the search index with the generation.
    fn build_options(&self, root: &Path, graph_dir: &Path) -> BuildOptions {
        let mut options = BuildOptions::configured(root, graph_dir, &self.config);
        options.scip_run = false;
        options.companion = Some(Arc::new(IndexCompanion {
            embed: self.config.embed.clone(),
        }));
        options
    }

    /// The language a case is scored under.
    fn language(&self, case: &Case) -> String {
        case.repo
            .as_ref()
            .and_then(|key| self.specs.get(key))
            .map_or_else(|| "fixture".into(), |spec| spec.language.clone())
    }

    /// The built repository of a `repo` case.
    fn repository(&self, key: &str) -> Result<Location> {
        if let Some((_, location)) = self.built.borrow().get(key) {
            return Ok(location.clone());
        }
        let invalid = |reason: String| AtlasError::InvalidInput {
            what: "corpus repository",
            reason,
        };
        let root = self
            .repos
            .as_ref()
            .ok_or_else(|| invalid(format!("case needs `{key}`: pass --repos DIR")))?
            .join(key);
        if !self.specs.contains_key(key) {
            return Err(invalid(format!("`{key}` is not in [repos]")));
        }
        if !root.is_dir() {
            return Err(AtlasError::CodeDirMissing(root));
        }
        let scratch = scratch(key);
        let graph_dir = scratch.0.join("graph");
        pipeline::build(&self.build_options(&root, &graph_dir))?;
        let location = Location {
            graph_dir,
            rule: crate::build::store::GraphDirRule::Flag,
            code_root: root,
            code_given: true,
        };
        self.built
            .borrow_mut()
            .insert(key.to_string(), (scratch, location.clone()));
        Ok(location)
    }
}

/// Runs one case: on a fresh copy of its fixture, or on its built repository.
pub fn run_case(workspaces: &Workspaces, case: &Case) -> Result<CaseRun> {
    let fixture_scratch;
    let location = match &case.repo {
        Some(key) => workspaces.repository(key)?,
        None => {
            fixture_scratch = scratch(&case.name);
            let repo = fixture_scratch.0.join("repo");
            copy_dir(&workspaces.fixtures.join(&case.fixture), &repo)?;
            let graph_dir = repo.join(crate::build::store::DEFAULT_GRAPH_DIR);
            // Free words use hybrid search and the queries below are frozen: build its
            // index too.
            pipeline::build(&workspaces.build_options(&repo, &graph_dir))?;
            for mutation in &case.mutate {
                let path = repo.join(&mutation.path);
                let mut text = std::fs::read_to_string(&path).at(&path)?;
                text.push_str(&mutation.append);
                std::fs::write(&path, text).at(&path)?;
            }
            Location {
                graph_dir,
                rule: crate::build::store::GraphDirRule::CodeRoot,
                code_root: repo.clone(),
                code_given: true,
            }
        }
    };
    let mut request = ContextRequest::new(case.query.clone(), profile_of(&case.profile)?);
    request.max_bytes = case.max_bytes.map(|b| b as usize);
    request.min_score = case.min_score;
    request.freshness = Freshness {
        frozen: true,
        no_build: true,
    };

    let started = Instant::now();
    let mut pages = Vec::new();
    let mut outputs = Vec::new();
    let mut error = None;
    match context::run(&location, &request, &workspaces.config) {
        Ok(result) => {
            pages.push(result.json);
            outputs.push(result.output);
        }
        Err(e) => error = Some(e),
    }
    if let (Some(reason), Some(first)) = (&case.continue_reason, outputs.first())
        && let Some(omission) = first.omissions.iter().find(|o| o.reason.as_str() == reason)
    {
        let next = ContextRequest::from_argv(&omission.argv)?;
        let result = context::run(&location, &next, &workspaces.config)?;
        pages.push(result.json);
        outputs.push(result.output);
    }
    let latency_ms = started.elapsed().as_secs_f64() * 1e3;

    let mut metrics = CaseMetrics {
        name: case.name.clone(),
        class: case.class(),
        language: workspaces.language(case),
        latency_ms: (latency_ms * 1e3).round() / 1e3,
        pages: pages.len(),
        ..CaseMetrics::default()
    };
    let mut failures = Vec::new();
    let error_body = error.as_ref().map(|e| error_body(e).to_string());
    match (&case.expect_error, &error) {
        (Some(expected), Some(e)) if e.code() == expected => {}
        (Some(expected), Some(e)) => {
            failures.push(format!("expected {expected}, got {}", e.code()))
        }
        (Some(expected), None) => failures.push(format!("expected {expected}, got a context")),
        (None, Some(e)) if case.allowed_ambiguity && e.code() == "atlas-context-ambiguous" => {}
        (None, Some(e)) => failures.push(format!("unexpected error {}: {e}", e.code())),
        (None, None) => {}
    }

    // Evidence across all pages, in order.
    let mut symbols: Vec<String> = Vec::new();
    let mut paths: Vec<String> = Vec::new();
    let mut classes: Vec<&str> = Vec::new();
    let mut diagnostics: Vec<&str> = Vec::new();
    for output in &outputs {
        for item in &output.evidence {
            if let Some(symbol) = &item.symbol {
                symbols.push(symbol.clone());
            }
            if let Some(path) = &item.path
                && !paths.contains(path)
            {
                paths.push(path.clone());
            }
            classes.push(item.class.as_str());
        }
        diagnostics.extend(output.diagnostics.iter().map(|d| d.code.as_str()));
        metrics.bytes += output.receipt.serialized_bytes;
        metrics.read_backs += usize::from(output.receipt.read_back_required);
        metrics.follow_ups += output.omissions.len();
    }
    if case.continue_reason.is_some() && pages.len() < 2 {
        failures.push("no continuation was offered for the requested reason".into());
    }
    if let Some(second) = outputs.get(1)
        && second.receipt.retrieval.cursor_prefix == 0
    {
        failures.push("the continuation did not resume after a cursor".into());
    }
    let spine: Vec<String> = outputs
        .first()
        .map(|o| o.spine.iter().map(|s| s.symbol.clone()).collect())
        .unwrap_or_default();
    let on_spine = case
        .expect_spine
        .iter()
        .filter(|s| spine.contains(s))
        .count();
    metrics.spine_symbol_recall = ratio(on_spine, case.expect_spine.len());
    metrics.spine_recall = if on_spine == case.expect_spine.len() {
        1.0
    } else {
        0.0
    };
    let expected_evidence: Vec<&String> = case
        .expect_spine
        .iter()
        .chain(&case.expect_evidence)
        .collect();
    let in_evidence = expected_evidence
        .iter()
        .filter(|s| symbols.contains(s))
        .count();
    metrics.symbol_evidence_recall = ratio(in_evidence, expected_evidence.len());
    if error.is_none() {
        for s in case.expect_spine.iter().filter(|s| !spine.contains(s)) {
            failures.push(format!("not on the spine: {s}"));
        }
        for s in case.expect_evidence.iter().filter(|s| !symbols.contains(s)) {
            failures.push(format!("missing evidence {s}"));
        }
    }
    metrics.spine = spine;
    let found = |s: &String| symbols.contains(s);
    let hits = case.expect_symbols.iter().filter(|s| found(s)).count();
    metrics.recall = ratio(hits, case.expect_symbols.len());
    metrics.mrr = symbols
        .iter()
        .position(|s| case.expect_symbols.contains(s))
        .map_or(
            if case.expect_symbols.is_empty() {
                1.0
            } else {
                0.0
            },
            |rank| 1.0 / (rank + 1) as f64,
        );
    let path_hits = case
        .expect_paths
        .iter()
        .filter(|p| paths.contains(p))
        .count();
    metrics.path_recall = ratio(path_hits, case.expect_paths.len());
    metrics.path_precision = if case.expect_paths.is_empty() {
        1.0
    } else {
        ratio(
            paths
                .iter()
                .filter(|p| case.expect_paths.contains(p))
                .count(),
            paths.len(),
        )
    };
    let forbidden_hits = case.forbidden.iter().filter(|s| found(s)).count();
    metrics.forbidden_hit_rate = if case.forbidden.is_empty() {
        0.0
    } else {
        forbidden_hits as f64 / case.forbidden.len() as f64
    };
    let evidence_hits = case
        .required_evidence
        .iter()
        .filter(|c| classes.contains(&c.as_str()))
        .count();
    metrics.evidence_recall = ratio(evidence_hits, case.required_evidence.len());
    if error.is_none() {
        for s in case.expect_symbols.iter().filter(|s| !found(s)) {
            failures.push(format!("missing symbol {s}"));
        }
        for c in case
            .required_evidence
            .iter()
            .filter(|c| !classes.contains(&c.as_str()))
        {
            failures.push(format!("missing evidence class {c}"));
        }
        for d in case
            .required_diagnostics
            .iter()
            .filter(|d| !diagnostics.contains(&d.as_str()))
        {
            failures.push(format!("missing diagnostic {d}"));
        }
    }
    for s in case.forbidden.iter().filter(|s| found(s)) {
        failures.push(format!("forbidden hit {s}"));
    }
    metrics.passed = failures.is_empty();
    metrics.failures = failures;
    Ok(CaseRun {
        pages,
        error: error_body,
        metrics,
    })
}

fn summarize<'a>(cases: impl Iterator<Item = &'a CaseMetrics>) -> ClassSummary {
    let cases: Vec<&CaseMetrics> = cases.collect();
    let n = cases.len().max(1) as f64;
    let mean = |f: &dyn Fn(&CaseMetrics) -> f64| {
        (cases.iter().map(|c| f(c)).sum::<f64>() / n * 1e4).round() / 1e4
    };
    ClassSummary {
        cases: cases.len(),
        passed: cases.iter().filter(|c| c.passed).count(),
        spine_recall: mean(&|c| c.spine_recall),
        spine_symbol_recall: mean(&|c| c.spine_symbol_recall),
        symbol_evidence_recall: mean(&|c| c.symbol_evidence_recall),
        recall: mean(&|c| c.recall),
        mrr: mean(&|c| c.mrr),
        path_precision: mean(&|c| c.path_precision),
        path_recall: mean(&|c| c.path_recall),
        forbidden_hit_rate: mean(&|c| c.forbidden_hit_rate),
        evidence_recall: mean(&|c| c.evidence_recall),
        bytes: mean(&|c| c.bytes as f64),
        latency_ms: mean(&|c| c.latency_ms),
    }
}

/// Runs every case; a case that cannot run at all is a failed case, not an abort.
/// Repository cases need `repos`: a directory holding each `[repos]` key checked out.
fn run_corpus(path: &Path, repos: Option<&Path>, config: &Config) -> Result<EvalReport> {
    let corpus = load(path)?;
    let fixtures = path
        .parent()
        .unwrap_or(Path::new("."))
        .join(&corpus.fixtures);
    let workspaces = Workspaces::new(
        fixtures,
        repos.map(Path::to_path_buf),
        corpus.repos.clone(),
        config.clone(),
    );
    let mut cases = Vec::new();
    for case in &corpus.cases {
        let metrics = match run_case(&workspaces, case) {
            Ok(run) => run.metrics,
            Err(e) => CaseMetrics {
                name: case.name.clone(),
                class: case.class(),
                language: workspaces.language(case),
                passed: false,
                failures: vec![format!("case could not run: {} ({e})", e.code())],
                ..CaseMetrics::default()
            },
        };
        cases.push(metrics);
    }
    let group = |key: &dyn Fn(&CaseMetrics) -> &str| {
        let names: std::collections::BTreeSet<&str> = cases.iter().map(key).collect();
        names
            .into_iter()
            .map(|name| {
                (
                    name.to_string(),
                    summarize(cases.iter().filter(|c| key(c) == name)),
                )
            })
            .collect::<BTreeMap<_, _>>()
    };
    let classes = group(&|c| c.class.as_str());
    let languages = group(&|c| c.language.as_str());
    let overall = summarize(cases.iter());
    Ok(EvalReport {
        corpus: path.display().to_string(),
        version: corpus.version,
        passed: cases.iter().all(|c| c.passed),
        cases,
        classes,
        languages,
        overall,
    })
}

#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct EvalArgs {
    #[command(subcommand)]
    pub what: Option<EvalCommand>,
    /// Corpus file (TOML, see corpus/context.toml).
    #[arg(long)]
    pub corpus: Option<PathBuf>,
    /// Also write the receipt to this file.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Where the corpus's `[repos]` are checked out (`DIR/<key>`, at their `rev`).
    #[arg(long, value_name = "DIR")]
    pub repos: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
pub enum EvalCommand {
    /// Compare tree-sitter call/reference edges with a SCIP index's precise edges at the
    /// same sites: precision, recall and F1 per language and resolution kind.
    #[command(after_help = "Example:\n  atlas eval edges --scip index.scip --code .")]
    Edges {
        /// SCIP index (repeatable).
        #[arg(long, required = true, value_name = "FILE")]
        scip: Vec<PathBuf>,
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
}

/// `atlas eval`: a corpus, or `eval edges`.
pub fn run(call: &Call, args: &EvalArgs) -> Result<()> {
    match args {
        EvalArgs {
            what: Some(EvalCommand::Edges { scip, format }),
            ..
        } => {
            let location = call.location()?;
            let mut options = BuildOptions::new(&location.code_root, &location.graph_dir);
            options.scip = scip.iter().map(|p| absolute(p)).collect();
            let report = pipeline::evaluate_edges(&options)?;
            match format {
                Format::Json => print_json(&report),
                Format::Text => print_stdout(&render_edge_evaluation(&report)),
            }
        }
        EvalArgs {
            corpus: Some(corpus),
            out,
            repos,
            ..
        } => {
            let report = run_corpus(corpus, repos.as_deref(), &call.config)?;
            let text = pretty_json(&report)?;
            if let Some(out) = out {
                std::fs::write(out, text.trim_end()).map_err(|e| AtlasError::io(out, e))?;
            }
            print_stdout(&text)?;
            for case in report.cases.iter().filter(|c| !c.passed) {
                eprintln!("FAIL {}: {}", case.name, case.failures.join("; "));
            }
            eprintln!(
                "{} of {} cases passed; recall {:.3}, MRR {:.3}, evidence recall {:.3}",
                report.overall.passed,
                report.overall.cases,
                report.overall.recall,
                report.overall.mrr,
                report.overall.evidence_recall
            );
            if !report.passed {
                return Err(AtlasError::EvalFailed {
                    failed: report.overall.cases - report.overall.passed,
                });
            }
            Ok(())
        }
        _ => Err(AtlasError::InvalidInput {
            what: "eval",
            reason: "give --corpus FILE or the `edges` subcommand".into(),
        }),
    }
}

fn render_edge_evaluation(r: &pipeline::EdgeReport) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "SCIP: {} documents ingested, {} stale, {} outside the inventory\n\nlanguage/edges        precision  recall     F1   TP    FP  precise\n",
        r.scip.documents_ingested, r.scip.documents_stale, r.scip.documents_outside_inventory
    ));
    for (key, s) in &r.evaluation.by_language {
        out.push_str(&format!(
            "{key:<21} {:>9.3} {:>7.3} {:>6.3} {:>4} {:>5} {:>8}\n",
            s.precision, s.recall, s.f1, s.true_positives, s.false_positives, s.precise_edges
        ));
    }
    out.push_str("\nby resolution                     precision   TP   FP  unjudged\n");
    for (key, b) in &r.evaluation.by_resolution {
        out.push_str(&format!(
            "{key:<33} {:>9.3} {:>4} {:>4} {:>9}\n",
            b.precision, b.true_positives, b.false_positives, b.unjudged
        ));
    }
    if !r.evaluation.top_missed_calls.is_empty() {
        out.push_str("\nmost missed precise call targets\n");
        for (target, count) in &r.evaluation.top_missed_calls {
            out.push_str(&format!("  {count:>4} × `{target}`\n"));
        }
    }
    if !r.evaluation.top_false_sources.is_empty() {
        out.push_str("\ntop sources of false edges\n");
        for f in &r.evaluation.top_false_sources {
            out.push_str(&format!(
                "  {:>4} × {} → `{}` ({})\n",
                f.count, f.resolution, f.target, f.reason
            ));
        }
    }
    out
}
