//! The command line: a thin shell over the library. Parses flags, calls one library
//! function, renders its result as text or JSON, maps errors to exit codes.
//!
//! Architecture invariant: only this module prints, and only machine output goes to
//! stdout; progress and human diagnostics go to stderr.

pub mod eval;
pub mod observe;
pub mod status;

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use crate::build::inventory::InventoryLimits;
use crate::build::store::{self, Location, Store};
use crate::build::{self, BuildOptions, BuildReport};
use crate::error::AtlasError;
use crate::query::context::{self, ContextRequest, Freshness};
use crate::query::profile::ProfileName;
use status::StatusReport;

#[derive(Parser, Debug)]
#[command(
    name = "atlas",
    version,
    about = "Compile a repository into a memory-mapped code graph and query it.",
    long_about = "Atlas compiles a repository once (tree-sitter) into a memory-mapped, \
                  blake3-fingerprinted graph of symbols and edges, stored as generations \
                  under .agent-spec/graph.",
    after_help = "Examples:\n  atlas build\n  atlas status --format json\n  atlas graph dump --code fixtures/python"
)]
pub struct Cli {
    /// Repository root to compile (default: the directory of a found graph, else the CWD).
    #[arg(long, global = true, value_name = "DIR")]
    pub code: Option<PathBuf>,
    /// Graph directory (default: ATLAS_GRAPH_DIR, an ascending search, then <code>/.agent-spec/graph).
    #[arg(long, global = true, value_name = "DIR")]
    pub graph: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    #[default]
    Text,
    Json,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Compile the repository into a new graph generation (incremental).
    #[command(after_help = "Example:\n  atlas build --code . --strict --format json")]
    Build(BuildArgs),
    /// Show what the committed graph holds, its coverage and staleness.
    #[command(after_help = "Example:\n  atlas status --format json")]
    Status {
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// Compile a bounded, honest context for one query (two-stage: retrieval, projection).
    #[command(
        after_help = "Examples:\n  atlas context \"compile calls\" --profile flow\n  atlas context Cart.total --profile symbol --format text\n  atlas context shop/models.py --profile impact --frozen --max-bytes 8000"
    )]
    Context(ContextArgs),
    /// Hybrid search (BM25 + embeddings, fused by RRF) over the symbols of the graph.
    #[command(
        after_help = "Example:\n  atlas search \"parse config file\" --top-k 5 --format json"
    )]
    Search(SearchArgs),
    /// The source behind search hits' refs (≤ 5), hash-verified and paginated.
    #[command(after_help = "Example:\n  atlas expand 'shop/util.py#L1-L2@0a1b2c3d'")]
    Expand {
        /// Refs as returned by `atlas search` (`path#Lstart-Lend@hash`).
        #[arg(required = true)]
        refs: Vec<String>,
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// Score `atlas context` on a query-quality corpus; the receipt is written even on failure.
    #[command(
        after_help = "Example:\n  atlas eval --corpus corpus/context.toml --out target/eval-receipt.json"
    )]
    Eval(EvalArgs),
    /// Inspect the committed graph.
    #[command(subcommand)]
    Graph(GraphCommand),
    /// Print shell completions.
    #[command(after_help = "Example:\n  atlas completions bash > /etc/bash_completion.d/atlas")]
    Completions { shell: clap_complete::Shell },
}

#[derive(clap::Args, Debug)]
pub struct BuildArgs {
    /// Fail when any file parses with errors (partial extraction).
    #[arg(long)]
    pub strict: bool,
    /// Wait for a concurrent build to finish instead of failing with atlas-build-locked.
    #[arg(long)]
    pub wait: bool,
    /// Maximum number of files compiled (R-INV-3).
    #[arg(long, default_value_t = InventoryLimits::default().max_files)]
    pub max_files: usize,
    /// Maximum total bytes of source compiled.
    #[arg(long, default_value_t = InventoryLimits::default().max_total_bytes)]
    pub max_total_bytes: u64,
    /// Files larger than this are skipped with a diagnostic.
    #[arg(long, default_value_t = InventoryLimits::default().max_file_bytes)]
    pub max_file_bytes: u64,
    /// SCIP index to ingest (repeatable); `index.scip` at the code root is picked up too.
    #[arg(long, value_name = "FILE")]
    pub scip: Vec<PathBuf>,
    /// Run the SCIP indexers found on PATH for the languages present (also ATLAS_SCIP=1).
    #[arg(long)]
    pub scip_run: bool,
    /// Skip the hybrid-search index (built by default; `search` and free words in
    /// `context` build it on first use otherwise).
    #[arg(long)]
    pub no_search: bool,
    /// Hide the progress bar (it is only shown when stderr is a terminal).
    #[arg(long)]
    pub no_progress: bool,
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

#[derive(clap::Args, Debug)]
pub struct ContextArgs {
    /// Identifiers (`name`, `a::b`, `pkg.Class.method`), paths and relation words
    /// (calls callers callees references uses-type implements contains).
    pub query: String,
    #[arg(long, value_enum)]
    pub profile: ProfileName,
    /// Read the committed graph as it is: never build, never write.
    #[arg(long)]
    pub frozen: bool,
    /// Fail instead of building when no graph exists.
    #[arg(long)]
    pub no_build: bool,
    /// Byte ceiling of the printed JSON (overrides the profile).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1024..=1_000_000))]
    pub max_bytes: Option<u32>,
    /// Relevance threshold for optional evidence (overrides the profile).
    #[arg(long)]
    pub min_score: Option<u16>,
    /// Fingerprint the continuation expects (fails with atlas-context-graph-mismatch otherwise).
    #[arg(long, value_name = "FP")]
    pub expect_graph: Option<String>,
    /// Resume after this evidence id (`START` for the beginning).
    #[arg(long, value_name = "ID|START", requires = "expect_graph")]
    pub after: Option<String>,
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

#[derive(clap::Args, Debug)]
pub struct SearchArgs {
    /// Free text, identifiers or both.
    pub text: String,
    /// Hits to return (1..=1000).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub top_k: u16,
    /// Response profile (default full; ATLAS_CONTEXT_OPTIMIZATION=1 makes compact the default).
    #[arg(long, value_enum)]
    pub profile: Option<crate::query::search::ResponseProfile>,
    /// Response ceiling in tokens (o200k); whole results are cut from the tail to fit.
    #[arg(long, default_value_t = 4000)]
    pub max_tokens: usize,
    /// Read the committed generation as it is: never build the graph or the search index.
    #[arg(long)]
    pub frozen: bool,
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
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

#[derive(Subcommand, Debug)]
pub enum GraphCommand {
    /// Print a stable, sorted text rendering of the graph.
    #[command(after_help = "Example:\n  atlas graph dump --code fixtures/rust")]
    Dump,
}

/// Runs the CLI with `args` (argv[0] included) and returns the process exit code.
pub fn run(args: impl IntoIterator<Item = OsString>) -> i32 {
    let args: Vec<OsString> = args.into_iter().collect();
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(err) if !err.use_stderr() => {
            // --help and --version.
            return match print_stdout(&err.render().to_string()) {
                Ok(()) => 0,
                Err(e) => e.exit_code(),
            };
        }
        Err(err) => return report_usage_error(&err, &args),
    };
    let format = match &cli.command {
        Command::Build(args) => args.format,
        Command::Status { format } => *format,
        Command::Eval(EvalArgs {
            what: Some(EvalCommand::Edges { format, .. }),
            ..
        }) => *format,
        Command::Context(args) => args.format,
        Command::Search(args) => args.format,
        Command::Expand { format, .. } => *format,
        _ => Format::Text,
    };
    let start = std::time::Instant::now();
    match execute(&cli, start) {
        Ok(()) => 0,
        Err(err) => {
            report_error(&err, format);
            if let Some(tool) = tool_name(&cli.command) {
                // Sizes of what the caller read: the error line (never its text).
                let line = format!("error[{}]: {err}\n", err.code());
                observe(&cli, tool, format, None, err.code(), &line, 0, start);
            }
            err.exit_code()
        }
    }
}

/// A flag or value clap rejected: the same typed error as any other bad input —
/// `error[atlas-invalid-input]` on stderr and, under `--format json`, the JSON error body
/// on stdout.
fn report_usage_error(err: &clap::Error, args: &[OsString]) -> i32 {
    let rendered = err.render().to_string();
    let message = rendered
        .trim_start_matches("error: ")
        .lines()
        .next()
        .unwrap_or("")
        .to_string();
    let error = AtlasError::InvalidInput {
        what: "command line",
        reason: message,
    };
    let json = args
        .windows(2)
        .any(|w| w[0] == "--format" && w[1] == "json")
        || args.iter().any(|a| a == "--format=json");
    eprintln!(
        "error[{}]: {}",
        error.code(),
        rendered.trim_start_matches("error: ").trim_end()
    );
    if json {
        let _ = print_json(&error_body(&error));
    }
    error.exit_code()
}

fn error_body(err: &AtlasError) -> serde_json::Value {
    serde_json::json!({
        "error": {
            "code": err.code(),
            "message": err.to_string(),
            "exit_code": err.exit_code(),
            "details": err.details(),
        }
    })
}

/// Commands that answer a query and are observed (R-OBS-3).
fn tool_name(command: &Command) -> Option<&'static str> {
    match command {
        Command::Context(_) => Some("context"),
        Command::Search(_) => Some("search"),
        Command::Expand { .. } => Some("expand"),
        _ => None,
    }
}

/// Records an observability event when `ATLAS_OBSERVABILITY=1`; best effort.
#[allow(clippy::too_many_arguments)]
fn observe(
    cli: &Cli,
    tool: &str,
    format: Format,
    profile: Option<&str>,
    outcome: &str,
    output: &str,
    items: usize,
    start: std::time::Instant,
) {
    if !crate::cli::observe::enabled() {
        return;
    }
    let Ok(location) = location(cli) else {
        return;
    };
    let format = match format {
        Format::Json => "json",
        Format::Text => "text",
    };
    let event = crate::cli::observe::Event::builder(tool, format, profile, outcome)
        .output(output, items)
        .started(start)
        .build();
    crate::cli::observe::Recorder::new(&location.graph_dir).record(event);
}

fn absolute(path: &std::path::Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().map_or_else(|_| path.to_path_buf(), |cwd| cwd.join(path))
    }
}

fn location(cli: &Cli) -> Result<Location, AtlasError> {
    let cwd = std::env::current_dir().map_err(|e| AtlasError::io(".", e))?;
    Ok(store::locate(
        cli.graph.as_deref(),
        cli.code.as_deref(),
        &cwd,
        &|name| std::env::var(name).ok(),
    ))
}

fn execute(cli: &Cli, start: std::time::Instant) -> Result<(), AtlasError> {
    match &cli.command {
        Command::Build(args) => {
            let location = location(cli)?;
            let mut options = BuildOptions::new(&location.code_root, &location.graph_dir);
            options.strict = args.strict;
            options.lock_wait = if args.wait {
                build::LockWait::Forever
            } else {
                build::LockWait::Fail
            };
            options.progress = !args.no_progress;
            options.search = !args.no_search;
            options.scip = args.scip.iter().map(|p| absolute(p)).collect();
            options.scip_run = args.scip_run
                || std::env::var("ATLAS_SCIP")
                    .is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"));
            options.limits = InventoryLimits {
                max_files: args.max_files,
                max_total_bytes: args.max_total_bytes,
                max_file_bytes: args.max_file_bytes,
            };
            let report = build::build(&options)?;
            match args.format {
                Format::Json => print_json(&report)?,
                Format::Text => print_stdout(&render_build(&report))?,
            }
        }
        Command::Status { format } => {
            let location = location(cli)?;
            let report = status::status(&location)?;
            match format {
                Format::Json => print_json(&report)?,
                Format::Text => print_stdout(&render_status(&report))?,
            }
        }
        Command::Context(args) => {
            let location = location(cli)?;
            let request = ContextRequest {
                query: args.query.clone(),
                profile: args.profile,
                max_bytes: args.max_bytes.map(|b| b as usize),
                min_score: args.min_score,
                expect_graph: args.expect_graph.clone(),
                after: args.after.clone(),
                code_arg: cli.code.as_ref().map(|p| p.display().to_string()),
                graph_arg: cli.graph.as_ref().map(|p| p.display().to_string()),
                freshness: Freshness {
                    frozen: args.frozen,
                    no_build: args.no_build,
                },
                format: Some(match args.format {
                    Format::Json => "json",
                    Format::Text => "text",
                }),
            };
            let result = context::run(&location, &request)?;
            let text = match args.format {
                Format::Json => result.json.clone() + "\n",
                Format::Text => context::text::render(&result.output),
            };
            print_stdout(&text)?;
            let profile = result.output.profile.clone();
            let items = result.output.evidence.len();
            observe(
                cli,
                "context",
                args.format,
                Some(&profile),
                "ok",
                &text,
                items,
                start,
            );
        }
        Command::Expand { refs, format } => {
            let location = location(cli)?;
            let store = Store::new(&location.graph_dir);
            let (_, graph) = store.open_current()?;
            let root = location.read_root(&store);
            let output = crate::query::expand::expand(&graph, &root, refs)?;
            let text = match format {
                Format::Json => pretty_json(&output)?,
                Format::Text => {
                    let mut text = String::new();
                    for item in &output.items {
                        text.push_str(&format!(
                            "── {} (chars {}..{}){}\n{}\n",
                            item.reference,
                            item.content_range[0],
                            item.content_range[1],
                            if item.content_complete { "" } else { " …" },
                            item.content
                        ));
                        if let Some(next) = &item.next_ref {
                            text.push_str(&format!("   next: atlas expand '{next}'\n"));
                        }
                        for entry in item.outline.iter().flatten() {
                            text.push_str(&format!(
                                "   {} {} L{}-{}  {}\n",
                                entry.kind,
                                entry.symbol,
                                entry.lines[0],
                                entry.lines[1],
                                entry.reference
                            ));
                        }
                    }
                    text
                }
            };
            print_stdout(&text)?;
            let items = output.items.len();
            observe(cli, "expand", *format, None, "ok", &text, items, start);
        }
        Command::Search(args) => {
            if std::env::var("ATLAS_SEARCH_ARMS").map_or(true, |a| a.contains("vector")) {
                crate::query::search::embed::warm_up();
            }
            let location = location(cli)?;
            let freshness = Freshness {
                frozen: args.frozen,
                no_build: false,
            };
            let context::Session {
                fingerprint,
                graph,
                root,
                stale,
                ..
            } = context::open_session(&location, freshness, true)?;
            if let Some(reason) = &stale {
                eprintln!("warning[atlas-search-stale-graph]: {reason}");
            }
            let store = Store::new(&location.graph_dir);
            let embedder = crate::query::search::embed::Embedder::load()?;
            let output = crate::query::search::SearchIndex::query(
                &store,
                &fingerprint,
                &graph,
                &root,
                &embedder,
                args.frozen,
                &args.text,
                usize::from(args.top_k),
            )?;
            let profile = crate::query::search::ResponseProfile::resolve(args.profile);
            let (text, items) = match args.format {
                Format::Json => {
                    // Compact JSON: the ceiling is measured on exactly what is printed.
                    let response =
                        crate::query::search::respond(output, profile, args.max_tokens.max(1));
                    let items = response.hit_count();
                    let text =
                        serde_json::to_string(&response).map_err(|e| AtlasError::InvalidInput {
                            what: "search response",
                            reason: e.to_string(),
                        })?;
                    (text + "\n", items)
                }
                Format::Text => {
                    let mut text = String::new();
                    for (rank, hit) in output.hits.iter().enumerate() {
                        text.push_str(&format!(
                            "{:>3}. {}::{} ({}) L{}-{} · {:.4} · {}\n",
                            rank + 1,
                            hit.path,
                            hit.symbol,
                            hit.kind,
                            hit.lines[0],
                            hit.lines[1],
                            hit.score,
                            hit.match_arms.join("+")
                        ));
                    }
                    (text, output.hits.len())
                }
            };
            print_stdout(&text)?;
            observe(
                cli,
                "search",
                args.format,
                Some(profile.as_str()),
                "ok",
                &text,
                items,
                start,
            );
        }
        Command::Eval(EvalArgs {
            what: Some(EvalCommand::Edges { scip, format }),
            ..
        }) => {
            let location = location(cli)?;
            let mut options = BuildOptions::new(&location.code_root, &location.graph_dir);
            options.scip = scip.iter().map(|p| absolute(p)).collect();
            let report = build::evaluate_edges(&options)?;
            match format {
                Format::Json => print_json(&report)?,
                Format::Text => print_stdout(&render_edge_evaluation(&report))?,
            }
        }
        Command::Eval(EvalArgs {
            corpus: Some(corpus),
            out,
            repos,
            ..
        }) => {
            let report = crate::cli::eval::run_corpus(corpus, repos.as_deref())?;
            let text =
                serde_json::to_string_pretty(&report).map_err(|e| AtlasError::InvalidInput {
                    what: "eval receipt",
                    reason: e.to_string(),
                })?;
            if let Some(out) = out {
                std::fs::write(out, &text).map_err(|e| AtlasError::io(out, e))?;
            }
            print_stdout(&(text + "\n"))?;
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
        }
        Command::Eval(_) => {
            return Err(AtlasError::InvalidInput {
                what: "eval",
                reason: "give --corpus FILE or the `edges` subcommand".into(),
            });
        }
        Command::Graph(GraphCommand::Dump) => {
            let location = location(cli)?;
            let (_, graph) = Store::new(&location.graph_dir).open_current()?;
            print_stdout(&crate::graph::dump::dump(&graph))?;
        }
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let mut command = Cli::command();
            let mut out = Vec::new();
            clap_complete::generate(*shell, &mut command, "atlas", &mut out);
            print_stdout(&String::from_utf8_lossy(&out))?;
        }
    }
    Ok(())
}

/// Writes machine output. A failed write is an I/O error (`> /dev/full`, a closed
/// stdout); a reader that went away (`| head`) is `BrokenPipe`, reported quietly.
fn print_stdout(text: &str) -> Result<(), AtlasError> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                AtlasError::BrokenPipe
            } else {
                AtlasError::io("<stdout>", e)
            }
        })
}

fn pretty_json<T: serde::Serialize>(value: &T) -> Result<String, AtlasError> {
    serde_json::to_string_pretty(value)
        .map(|text| text + "\n")
        .map_err(|e| AtlasError::Internal {
            what: "JSON output",
            reason: e.to_string(),
        })
}

fn print_json<T: serde::Serialize>(value: &T) -> Result<(), AtlasError> {
    print_stdout(&pretty_json(value)?)
}

fn report_error(err: &AtlasError, format: Format) {
    if matches!(err, AtlasError::BrokenPipe) {
        // Whoever read stdout stopped reading: nothing to tell them.
        return;
    }
    eprintln!("error[{}]: {err}", err.code());
    if format == Format::Json {
        // Best effort: stdout may be the very thing that failed.
        let _ = print_json(&error_body(err));
    }
}

fn render_build(r: &BuildReport) -> String {
    let mut out = String::new();
    let verb = if r.unchanged {
        "unchanged"
    } else {
        "published"
    };
    out.push_str(&format!(
        "{verb} generation {}\n  files {} (parsed {}, cached {}), symbols {}, edges {}, frontier {}, graph {} bytes\n  {:.1} ms (inventory {:.1}, extract {:.1}, resolve {:.1}, compile {:.1}, publish {:.1})\n",
        r.fingerprint,
        r.files,
        r.parsed,
        r.cached,
        r.symbols,
        r.edges,
        r.frontier,
        r.graph_bytes,
        r.timings_ms.total,
        r.timings_ms.inventory,
        r.timings_ms.extract,
        r.timings_ms.resolve,
        r.timings_ms.compile,
        r.timings_ms.publish,
    ));
    for p in &r.partial {
        out.push_str(&format!(
            "  partial {} ({} errors, lines {:?})\n",
            p.path, p.errors, p.lines
        ));
    }
    for s in &r.skipped {
        out.push_str(&format!(
            "  skipped {} [{}] {}\n",
            s.path, s.reason, s.detail
        ));
    }
    if let Some(t) = &r.truncated {
        out.push_str(&format!(
            "  inventory.truncated: {} hit, kept {}/{} files ({}/{} bytes)\n",
            t.limit, t.files_kept, t.files_seen, t.bytes_kept, t.bytes_seen
        ));
    }
    out
}

fn render_edge_evaluation(r: &build::EdgeReport) -> String {
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

fn render_status(s: &StatusReport) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "graph dir   {} ({})\n",
        s.graph_dir.display(),
        s.graph_dir_rule
    ));
    out.push_str(&format!("code root   {}\n", s.code_root.display()));
    out.push_str(&format!(
        "fingerprint {} (format {}, {} bytes)\n",
        s.fingerprint, s.format_version, s.graph_bytes
    ));
    let join = |m: &std::collections::BTreeMap<String, usize>| {
        m.iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    out.push_str(&format!("languages   {}\n", join(&s.files_by_language)));
    out.push_str(&format!("classes     {}\n", join(&s.files_by_class)));
    out.push_str(&format!("symbols     {}\n", join(&s.symbols_by_kind)));
    out.push_str("edges\n");
    for (kind, by_provenance) in &s.edges {
        for (provenance, by_resolution) in by_provenance {
            out.push_str(&format!(
                "  {kind:<11} {provenance:<12} {}\n",
                join(by_resolution)
            ));
        }
    }
    out.push_str(&format!(
        "frontier    {} entries ({} ambiguous), {} external references\n",
        s.frontier.entries, s.frontier.ambiguous, s.frontier.external_references
    ));
    let c = &s.coverage;
    out.push_str(&format!(
        "coverage    {} inventoried: {} extracted ({} with parse errors), {} text only, {} skipped\n",
        c.files_inventoried, c.files_extracted, c.files_with_parse_errors, c.files_text_only, c.files_skipped
    ));
    if !c.unsupported_by_extension.is_empty() {
        let list: Vec<String> = c
            .unsupported_by_extension
            .iter()
            .map(|(k, v)| format!(".{k} {v}"))
            .collect();
        out.push_str(&format!("unsupported {}\n", list.join(", ")));
    }
    if let Some(t) = &c.truncated {
        out.push_str(&format!("truncated   {t}\n"));
    }
    if let Some(scip) = &s.scip {
        let stats = &scip["merge"]["stats"];
        out.push_str(&format!(
            "scip        {} documents ingested, {} stale, {} outside the inventory; {} precise edges, {} heuristic edges replaced, {} symbols added\n",
            stats["documents_ingested"], stats["documents_stale"], stats["documents_outside_inventory"],
            scip["merge"]["precise_edges"], scip["merge"]["heuristic_edges_replaced"], scip["merge"]["symbols_added"]
        ));
    }
    for p in &s.partial_files {
        out.push_str(&format!("partial     {} ({} errors)\n", p.path, p.errors));
    }
    let st = &s.staleness;
    if st.builder_changed {
        out.push_str("stale       built by another atlas version; the next read rebuilds it\n");
    }
    if st.changed + st.added + st.removed > 0 {
        out.push_str(&format!(
            "stale       {} changed, {} added, {} removed since this generation: {}\n",
            st.changed,
            st.added,
            st.removed,
            st.examples.join(", ")
        ));
    } else if !st.stale {
        out.push_str("fresh       the working tree matches this generation\n");
    }
    let o = &s.observability;
    if o.enabled || o.events > 0 {
        out.push_str(&format!(
            "observed    {} events in {} files ({} bytes), {} dropped{}\n",
            o.events,
            o.files,
            o.bytes,
            o.dropped_events,
            if o.enabled {
                ""
            } else {
                " (ATLAS_OBSERVABILITY is off)"
            }
        ));
    }
    out
}
