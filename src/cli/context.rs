//! `atlas context`: a bounded, honest context for one query.

use crate::build::session::Freshness;
use crate::error::AtlasError;
use crate::query::context::{self, ContextRequest};
use crate::query::profile::ProfileName;

use super::call::{Answer, Call};
use super::output::{Format, print_stdout};

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
    /// Top of a score band: optional evidence scoring above it is left to earlier pages
    /// (below-relevance continuations set it).
    #[arg(long)]
    pub max_score: Option<u16>,
    /// Fingerprint the continuation expects (fails with atlas-context-graph-mismatch otherwise).
    #[arg(long, value_name = "FP")]
    pub expect_graph: Option<String>,
    /// Resume after this evidence id (`START` for the beginning).
    #[arg(long, value_name = "ID|START", requires = "expect_graph")]
    pub after: Option<String>,
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// Where the query runs: in this process (default) or on a warm daemon's worker
    /// (`atlas daemon start`).
    #[arg(long, value_enum, default_value_t)]
    pub execution: Execution,
    /// After a worker attempt that did not answer, run the query directly; both attempts
    /// are recorded (stderr, `atlas_execution`).
    #[arg(long, requires = "execution")]
    pub fallback_direct: bool,
    /// Deadline of a worker request (at most the daemon's own).
    #[arg(long, value_name = "MS", requires = "execution", value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    pub deadline_ms: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Execution {
    #[default]
    Direct,
    Worker,
}

/// The request `args` make on `call`.
fn request(call: &Call, args: &ContextArgs) -> ContextRequest {
    ContextRequest {
        query: args.query.clone(),
        profile: args.profile,
        max_bytes: args.max_bytes.map(|b| b as usize),
        min_score: args.min_score,
        max_score: args.max_score,
        expect_graph: args.expect_graph.clone(),
        after: args.after.clone(),
        code_arg: call.code.as_ref().map(|p| p.display().to_string()),
        graph_arg: call.graph.as_ref().map(|p| p.display().to_string()),
        freshness: Freshness {
            frozen: args.frozen,
            no_build: args.no_build,
        },
        format: Some(args.format.as_str()),
    }
}

/// The JSON document `--format json` prints (without its final newline).
pub fn json(call: &Call, args: &ContextArgs) -> Result<String, AtlasError> {
    let result = context::run(&call.location()?, &request(call, args), &call.config)?;
    eprint!("{}", relevance_line(&result));
    Ok(result.json)
}

/// `atlas context`; returns the exit code (a worker relays the direct command's).
pub fn run(call: &Call, args: &ContextArgs) -> Result<i32, AtlasError> {
    match args.execution {
        Execution::Worker => super::daemon::context(call, args),
        Execution::Direct => {
            if args.fallback_direct || args.deadline_ms.is_some() {
                return Err(AtlasError::InvalidInput {
                    what: "--fallback-direct/--deadline-ms",
                    reason: "only with --execution worker".into(),
                });
            }
            direct(call, args).map(|()| 0)
        }
    }
}

/// The query, run in this process.
pub fn direct(call: &Call, args: &ContextArgs) -> Result<(), AtlasError> {
    let result = context::run(&call.location()?, &request(call, args), &call.config)?;
    eprint!("{}", relevance_line(&result));
    let text = match args.format {
        Format::Json => result.json.clone() + "\n",
        Format::Text => context::text::render(&result.output),
    };
    print_stdout(&text)?;
    call.observe(Answer {
        tool: "context",
        format: args.format,
        profile: Some(&result.output.profile),
        outcome: "ok",
        output: &text,
        items: result.output.evidence.len(),
    });
    Ok(())
}

/// The Jev cost line a context query writes to stderr when its search ran the judge
/// (R-J-9); empty otherwise.
pub fn relevance_line(result: &context::ContextResult) -> String {
    result.relevance.as_ref().map_or(String::new(), |report| {
        crate::query::search::relevance::Judgement::cost_line(Some(report)) + "\n"
    })
}
