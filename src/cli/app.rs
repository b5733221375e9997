//! The command line's definition and dispatch: parse the arguments, read the environment
//! once into the configuration, run one command, map its error to an exit code.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Instant;

use clap::{CommandFactory, Parser, Subcommand};

use crate::config::Config;
use crate::error::AtlasError;

use super::call::{Answer, Call};
use super::eval::{EvalArgs, EvalCommand};
use super::graph::GraphCommand;
use super::output::{Format, exit_code, print_stdout, report_error, report_usage_error};
use super::{build, context, daemon, eval, expand, graph, inspect, mcp, search, status, watch};

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

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Compile the repository into a new graph generation (incremental).
    #[command(after_help = "Example:\n  atlas build --code . --strict --format json")]
    Build(build::BuildArgs),
    /// Show what the committed graph holds, its coverage and staleness.
    #[command(after_help = "Example:\n  atlas status --format json")]
    Status(status::StatusArgs),
    /// Compile a bounded, honest context for one query (two-stage: retrieval, projection).
    #[command(
        after_help = "Examples:\n  atlas context \"compile calls\" --profile flow\n  atlas context Cart.total --profile symbol --format text\n  atlas context shop/models.py --profile impact --frozen --max-bytes 8000"
    )]
    Context(context::ContextArgs),
    /// Hybrid search (BM25 + embeddings, fused by RRF) over the symbols of the graph.
    #[command(
        after_help = "Example:\n  atlas search \"parse config file\" --top-k 5 --format json"
    )]
    Search(search::SearchArgs),
    /// The source behind search hits' refs (≤ 5), hash-verified and paginated.
    #[command(after_help = "Example:\n  atlas expand 'shop/util.py#L1-L2@0a1b2c3d'")]
    Expand(expand::ExpandArgs),
    /// Literal occurrences of a text over the committed inventory (ripgrep's searcher);
    /// never call relations.
    #[command(
        after_help = "Examples:\n  atlas find-all 'round_money(' --format json\n  atlas find-all todo -i --max-hits 20 --offset 20"
    )]
    FindAll(inspect::FindAllArgs),
    /// A file's outline (signatures, docs, spans), with its text when it fits.
    #[command(after_help = "Example:\n  atlas file-api shop/models.py --format json")]
    FileApi(inspect::FileApiArgs),
    /// The architecture profile as a map: modules, counts, relations, representatives.
    #[command(after_help = "Example:\n  atlas repo-map --max-bytes 8000")]
    RepoMap(inspect::RepoMapArgs),
    /// Callers or callees of a symbol to a depth, with provenance and the frontier.
    #[command(
        after_help = "Example:\n  atlas trace-calls checkout --direction callees --depth 3 --format json"
    )]
    TraceCalls(inspect::TraceCallsArgs),
    /// Which inventoried files changed since the committed generation (never writes).
    #[command(after_help = "Example:\n  atlas check-freshness --format json")]
    CheckFreshness(inspect::CheckFreshnessArgs),
    /// Score `atlas context` on a query-quality corpus; the receipt is written even on failure.
    #[command(
        after_help = "Example:\n  atlas eval --corpus corpus/context.toml --out target/eval-receipt.json"
    )]
    Eval(EvalArgs),
    /// Inspect the committed graph.
    #[command(subcommand)]
    Graph(GraphCommand),
    /// Serve the query commands as MCP tools over stdio (protocol on stdout only).
    #[command(after_help = "Example:\n  claude mcp add atlas -- atlas mcp")]
    Mcp(mcp::McpArgs),
    /// Serve queries from a pool of warm workers over a Unix socket (R-D-1).
    #[command(
        after_help = "Examples:\n  atlas daemon start --query-workers 2 --queue 16\n  atlas context Cart.total --profile symbol --execution worker --fallback-direct\n  atlas daemon stop"
    )]
    Daemon(daemon::DaemonArgs),
    /// Keep the graph fresh: rebuild incrementally after each burst of changes (R-D-2).
    #[command(after_help = "Example:\n  atlas watch --debounce-ms 300 --format json")]
    Watch(watch::WatchArgs),
    /// Print shell completions.
    #[command(after_help = "Example:\n  atlas completions bash > /etc/bash_completion.d/atlas")]
    Completions { shell: clap_complete::Shell },
}

impl Command {
    /// The output format the command was asked for (its errors use it too).
    fn format(&self) -> Format {
        match self {
            Command::Build(args) => args.format,
            Command::Status(args) => args.format,
            Command::Eval(EvalArgs {
                what: Some(EvalCommand::Edges { format, .. }),
                ..
            }) => *format,
            Command::Context(args) => args.format,
            Command::Search(args) => args.format,
            Command::Expand(args) => args.format,
            Command::FindAll(args) => args.format,
            Command::FileApi(args) => args.format,
            Command::RepoMap(args) => args.format,
            Command::TraceCalls(args) => args.format,
            Command::CheckFreshness(args) => args.format,
            Command::Watch(args) => args.format,
            Command::Daemon(args) => match &args.command {
                daemon::DaemonCommand::Start(start) => start.format,
                daemon::DaemonCommand::Stop(status) | daemon::DaemonCommand::Status(status) => {
                    status.format
                }
            },
            _ => Format::Text,
        }
    }

    /// Commands that answer a query and are observed (R-OBS-3).
    fn tool(&self) -> Option<&'static str> {
        match self {
            Command::Context(_) => Some("context"),
            Command::Search(_) => Some("search"),
            Command::Expand(_) => Some("expand"),
            _ => None,
        }
    }
}

/// Runs the CLI with `args` (argv[0] included) and returns the process exit code.
pub fn run(args: impl IntoIterator<Item = OsString>) -> i32 {
    let args = pasted_text_as_query(args.into_iter().collect());
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(err) if !err.use_stderr() => {
            // --help and --version.
            return match print_stdout(&err.render().to_string()) {
                Ok(()) => 0,
                Err(e) => exit_code(&e),
            };
        }
        Err(err) => return report_usage_error(&err, &args),
    };
    let call = Call {
        code: cli.code.clone(),
        graph: cli.graph.clone(),
        // The only place the environment is read.
        config: Config::from_lookup(&|name| std::env::var_os(name)),
        started: Instant::now(),
        index_resolution: None,
    };
    let format = cli.command.format();
    match execute(&call, &cli.command) {
        Ok(code) => code,
        Err(err) => {
            report_error(&err, format);
            if let Some(tool) = cli.command.tool() {
                // Sizes of what the caller read: the error line (never its text).
                let line = format!("error[{}]: {err}\n", err.code());
                call.observe(Answer {
                    tool,
                    format,
                    profile: None,
                    outcome: err.code(),
                    output: &line,
                    items: 0,
                });
            }
            exit_code(&err)
        }
    }
}

/// The commands whose one positional argument is free text, which agents fill with what
/// they paste: a diff (`--- a/x.py`), a bullet list (`- the total is wrong`).
const FREE_TEXT_COMMANDS: [&str; 2] = ["context", "search"];

/// `args` with a pasted text that begins with a hyphen moved behind `--`, where it reads as
/// the query it is rather than as an option. Only an argument with whitespace is moved: no
/// option's name has any, so a typo such as `--profle` still gets the parser's own error.
fn pasted_text_as_query(mut args: Vec<OsString>) -> Vec<OsString> {
    let command = Cli::command();
    let takes_value = |cmd: &clap::Command, word: &str| {
        let long = word.strip_prefix("--").filter(|w| !w.contains('='));
        cmd.get_arguments()
            .any(|a| long.is_some() && a.get_long() == long && a.get_action().takes_values())
    };
    // The subcommand: the first word that is not a global option or its value.
    let mut at = 1;
    while let Some(word) = args.get(at).and_then(|w| w.to_str()) {
        if word.starts_with('-') {
            at += if takes_value(&command, word) { 2 } else { 1 };
            continue;
        }
        break;
    }
    let Some(sub) = args
        .get(at)
        .and_then(|w| w.to_str())
        .filter(|w| FREE_TEXT_COMMANDS.contains(w))
        .and_then(|w| command.find_subcommand(w))
    else {
        return args;
    };
    let mut i = at + 1;
    while i < args.len() {
        let Some(word) = args[i].to_str() else {
            i += 1;
            continue;
        };
        if word == "--" {
            return args;
        }
        let pasted = word.starts_with('-') && word.contains(char::is_whitespace);
        let is_value = args[i - 1]
            .to_str()
            .is_some_and(|before| takes_value(sub, before) || takes_value(&command, before));
        if pasted && !is_value {
            let text = args.remove(i);
            args.push("--".into());
            args.push(text);
            return args;
        }
        i += 1;
    }
    args
}

/// Runs `command`; the exit code of a success (0, or what a daemon's worker relayed).
fn execute(call: &Call, command: &Command) -> Result<i32, AtlasError> {
    if let Command::Context(args) = command {
        return context::run(call, args);
    }
    run_command(call, command).map(|()| 0)
}

fn run_command(call: &Call, command: &Command) -> Result<(), AtlasError> {
    match command {
        Command::Build(args) => build::run(call, args),
        Command::Status(args) => status::run(call, args),
        Command::Context(args) => context::run(call, args).map(|_| ()),
        Command::Search(args) => search::run(call, args),
        Command::Expand(args) => expand::run(call, args),
        Command::FindAll(args) => inspect::run(call, args),
        Command::FileApi(args) => inspect::run(call, args),
        Command::RepoMap(args) => inspect::run(call, args),
        Command::TraceCalls(args) => inspect::run(call, args),
        Command::CheckFreshness(args) => inspect::run(call, args),
        Command::Eval(args) => eval::run(call, args),
        Command::Graph(command) => graph::run(call, command),
        Command::Mcp(args) => mcp::run(call, args),
        Command::Watch(args) => watch::run(call, args),
        Command::Daemon(args) => daemon::run(call, args),
        Command::Completions { shell } => {
            let mut command = Cli::command();
            let mut out = Vec::new();
            clap_complete::generate(*shell, &mut command, "atlas", &mut out);
            print_stdout(&String::from_utf8_lossy(&out))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    #[test]
    fn a_pasted_text_that_begins_with_a_hyphen_is_the_query() {
        let diff = "--- a/shop/models.py\n+++ b/shop/models.py\n@@ -1 +1 @@\n-x\n+y";
        let moved = pasted_text_as_query(argv(&[
            "atlas",
            "--code",
            "repo",
            "context",
            diff,
            "--profile",
            "symbol",
        ]));
        assert_eq!(
            moved,
            argv(&[
                "atlas",
                "--code",
                "repo",
                "context",
                "--profile",
                "symbol",
                "--",
                diff
            ])
        );
        let cli = Cli::try_parse_from(&moved).expect("the diff parses as the query");
        let Command::Context(args) = cli.command else {
            panic!("not context: {:?}", cli.command)
        };
        assert_eq!(args.query, diff);
        let bullet = "- the total is wrong";
        let moved = pasted_text_as_query(argv(&["atlas", "search", bullet, "--top-k", "3"]));
        assert_eq!(
            moved,
            argv(&["atlas", "search", "--top-k", "3", "--", bullet])
        );
    }

    #[test]
    fn options_values_and_typos_are_left_to_the_parser() {
        for words in [
            // An option's value, even one with a hyphen and a space.
            &[
                "atlas",
                "context",
                "Foo",
                "--after",
                "- x y",
                "--profile",
                "symbol",
            ][..],
            // A typo: no whitespace, so the parser names it (and suggests `--profile`).
            &["atlas", "context", "--profle", "symbol", "Foo"],
            // Already escaped.
            &["atlas", "context", "--profile", "symbol", "--", "- a b"],
            // Not a free-text command.
            &["atlas", "expand", "- a b"],
            // A global option's value before the command.
            &["atlas", "--graph", "- odd dir", "status"],
        ] {
            assert_eq!(pasted_text_as_query(argv(words)), argv(words), "{words:?}");
        }
        let typo = Cli::try_parse_from(argv(&["atlas", "context", "--profle", "symbol", "Foo"]))
            .expect_err("a typo is an error");
        assert!(typo.to_string().contains("--profile"), "{typo}");
    }
}
