//! The inspection helpers (R-MCP-2): `find-all`, `file-api`, `repo-map`, `trace-calls`,
//! `check-freshness`. Each has its flags and implements [`Inspection`]: [`json`] returns
//! exactly the document `--format json` prints (without the trailing newline) — the MCP
//! tools call it — and [`run`] prints that document or its text rendering
//! (`inspect/text.rs`).

mod text;

use crate::build::session::{Freshness, Session, open_session};
use crate::build::store::Store;
use crate::error::AtlasError;
use crate::query::inspect::{
    self, FileApiRequest, FindAllRequest, FreshnessRequest, Invocation, RepoMapRequest,
    TraceCallsRequest, TraceDirection,
};

use super::call::Call;
use super::output::{Format, print_stdout};

#[derive(clap::Args, Debug, Clone)]
pub struct FindAllArgs {
    /// The text to find, as is: never a regex (`a.b(` finds `a.b(`).
    pub literal: String,
    /// Match letters in any case.
    #[arg(long, short = 'i')]
    pub case_insensitive: bool,
    /// Skip this many hits (the `truncated.next` argv of the previous page sets it).
    #[arg(long, default_value_t = 0)]
    pub offset: usize,
    /// Hits per page (default 50, at most 500).
    #[arg(long)]
    pub max_hits: Option<usize>,
    /// Byte ceiling of the JSON answer (default 16000, 1024..=1000000).
    #[arg(long)]
    pub max_bytes: Option<usize>,
    /// Read the committed graph as it is: never build, never write.
    #[arg(long)]
    pub frozen: bool,
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

#[derive(clap::Args, Debug, Clone)]
pub struct FileApiArgs {
    /// A repository-relative path of the committed generation's inventory.
    pub path: String,
    /// Skip this many definitions (later pages never repeat the file's text).
    #[arg(long, default_value_t = 0)]
    pub offset: usize,
    /// Definitions per page (default 200, at most 2000).
    #[arg(long)]
    pub max_definitions: Option<usize>,
    /// Byte ceiling of the JSON answer (default 16000); the file's text is included when
    /// it fits in half of it.
    #[arg(long)]
    pub max_bytes: Option<usize>,
    /// Read the committed graph as it is: never build, never write.
    #[arg(long)]
    pub frozen: bool,
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

#[derive(clap::Args, Debug, Clone)]
pub struct RepoMapArgs {
    /// Skip this many modules (in the architecture profile's ranking).
    #[arg(long, default_value_t = 0)]
    pub offset: usize,
    /// Modules per page (default 60, at most 1000).
    #[arg(long)]
    pub max_modules: Option<usize>,
    /// Byte ceiling of the JSON answer (default 16000, 1024..=1000000).
    #[arg(long)]
    pub max_bytes: Option<usize>,
    /// Read the committed graph as it is: never build, never write.
    #[arg(long)]
    pub frozen: bool,
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

#[derive(clap::Args, Debug, Clone)]
pub struct TraceCallsArgs {
    /// One name, as `context` reads it (`checkout`, `Cart.total`, `shop/util.py::round_money`).
    pub symbol: String,
    /// Follow who calls it (`callers`) or what it calls (`callees`).
    #[arg(long, value_enum, default_value_t)]
    pub direction: TraceDirection,
    /// Hops from the symbol (default 2, at most 5).
    #[arg(long)]
    pub depth: Option<usize>,
    /// Calls followed per node (default 12, at most 100); the rest are counted.
    #[arg(long)]
    pub max_fanout: Option<usize>,
    /// Skip this many edges (breadth-first order).
    #[arg(long, default_value_t = 0)]
    pub offset: usize,
    /// Edges per page (default 100, at most 1000).
    #[arg(long)]
    pub max_edges: Option<usize>,
    /// Byte ceiling of the JSON answer (default 16000, 1024..=1000000).
    #[arg(long)]
    pub max_bytes: Option<usize>,
    /// Read the committed graph as it is: never build, never write.
    #[arg(long)]
    pub frozen: bool,
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

#[derive(clap::Args, Debug, Clone)]
pub struct CheckFreshnessArgs {
    /// Skip this many changed paths (in path order).
    #[arg(long, default_value_t = 0)]
    pub offset: usize,
    /// Changed paths per page (default 200, at most 5000).
    #[arg(long)]
    pub max_paths: Option<usize>,
    /// Byte ceiling of the JSON answer (default 16000, 1024..=1000000).
    #[arg(long)]
    pub max_bytes: Option<usize>,
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// How this call was spelled, for continuation argv.
fn invocation(call: &Call, format: Format, frozen: bool) -> Invocation {
    Invocation {
        code_arg: call.code.as_ref().map(|p| p.display().to_string()),
        graph_arg: call.graph.as_ref().map(|p| p.display().to_string()),
        format: Some(format.as_str()),
        frozen,
    }
}

/// The committed generation, refreshed first unless frozen (R-GEN-8). A read that only
/// inspects never builds a search index.
fn session(call: &Call, frozen: bool) -> Result<Session, AtlasError> {
    let freshness = Freshness {
        frozen,
        no_build: false,
    };
    open_session(&call.location()?, freshness, None, &call.config)
}

/// One inspection subcommand: its answer from the library and its text rendering.
pub trait Inspection {
    type Output: serde::Serialize;
    /// Opens the graph as the flags say and asks the library.
    fn answer(&self, call: &Call) -> Result<Self::Output, AtlasError>;
    fn render(output: &Self::Output) -> String;
    fn format(&self) -> Format;
}

/// The JSON document `--format json` prints for `args` (without the trailing newline):
/// what the MCP tools return.
pub fn json<A: Inspection>(call: &Call, args: &A) -> Result<String, AtlasError> {
    inspect::to_json(&args.answer(call)?)
}

/// Prints the JSON document, or the text rendering of the same answer.
pub fn run<A: Inspection>(call: &Call, args: &A) -> Result<(), AtlasError> {
    let output = args.answer(call)?;
    match args.format() {
        Format::Json => print_stdout(&(inspect::to_json(&output)? + "\n")),
        Format::Text => print_stdout(&A::render(&output)),
    }
}

impl Inspection for FindAllArgs {
    type Output = inspect::FindAllOutput;

    fn answer(&self, call: &Call) -> Result<Self::Output, AtlasError> {
        let session = session(call, self.frozen)?;
        let request = FindAllRequest {
            literal: self.literal.clone(),
            case_insensitive: self.case_insensitive,
            offset: self.offset,
            max_hits: self.max_hits,
            max_bytes: self.max_bytes,
            invocation: invocation(call, self.format, self.frozen),
        };
        inspect::find_all(&session.graph, &session.root, &request)
    }

    fn render(output: &Self::Output) -> String {
        text::find_all(output)
    }

    fn format(&self) -> Format {
        self.format
    }
}

impl Inspection for FileApiArgs {
    type Output = inspect::FileApiOutput;

    fn answer(&self, call: &Call) -> Result<Self::Output, AtlasError> {
        let session = session(call, self.frozen)?;
        let request = FileApiRequest {
            path: self.path.clone(),
            offset: self.offset,
            max_definitions: self.max_definitions,
            max_bytes: self.max_bytes,
            invocation: invocation(call, self.format, self.frozen),
        };
        inspect::file_api(&session.graph, &session.root, &request)
    }

    fn render(output: &Self::Output) -> String {
        text::file_api(output)
    }

    fn format(&self) -> Format {
        self.format
    }
}

impl Inspection for RepoMapArgs {
    type Output = inspect::RepoMapOutput;

    fn answer(&self, call: &Call) -> Result<Self::Output, AtlasError> {
        let session = session(call, self.frozen)?;
        let request = RepoMapRequest {
            offset: self.offset,
            max_modules: self.max_modules,
            max_bytes: self.max_bytes,
            invocation: invocation(call, self.format, self.frozen),
        };
        inspect::repo_map(&session.graph, &session.root, &request)
    }

    fn render(output: &Self::Output) -> String {
        text::repo_map(output)
    }

    fn format(&self) -> Format {
        self.format
    }
}

impl Inspection for TraceCallsArgs {
    type Output = inspect::TraceCallsOutput;

    fn answer(&self, call: &Call) -> Result<Self::Output, AtlasError> {
        let session = session(call, self.frozen)?;
        let request = TraceCallsRequest {
            symbol: self.symbol.clone(),
            direction: self.direction,
            depth: self.depth,
            max_fanout: self.max_fanout,
            offset: self.offset,
            max_edges: self.max_edges,
            max_bytes: self.max_bytes,
            invocation: invocation(call, self.format, self.frozen),
        };
        inspect::trace_calls(&session.graph, &session.root, &request)
    }

    fn render(output: &Self::Output) -> String {
        text::trace_calls(output)
    }

    fn format(&self) -> Format {
        self.format
    }
}

impl Inspection for CheckFreshnessArgs {
    type Output = inspect::FreshnessOutput;

    /// Never refreshes: it reports how far the committed generation is from the tree.
    fn answer(&self, call: &Call) -> Result<Self::Output, AtlasError> {
        let location = call.location()?;
        let store = Store::new(&location.graph_dir);
        let (fingerprint, graph) = store.open_current()?;
        let manifest = store.read_manifest(&fingerprint).ok();
        let root = location.read_root(&store)?;
        let request = FreshnessRequest {
            offset: self.offset,
            max_paths: self.max_paths,
            max_bytes: self.max_bytes,
            invocation: invocation(call, self.format, false),
        };
        inspect::check_freshness(&graph, &root, manifest.as_ref(), &request)
    }

    fn render(output: &Self::Output) -> String {
        text::check_freshness(output)
    }

    fn format(&self) -> Format {
        self.format
    }
}
