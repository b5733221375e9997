//! `atlas mcp`: Atlas as an MCP server over stdio (R-MCP-1, R-MCP-2), on rmcp.
//!
//! One contract, two transports: every tool builds the arguments of its CLI command and
//! calls that command's `json` function, so a tool answers with exactly the document
//! `--format json` prints. A typed Atlas error is a tool error whose content is the CLI's
//! JSON error envelope; only a malformed request is a protocol error. stdout carries the
//! protocol alone: nothing here prints, and diagnostics go to stderr.
//!
//! Which repository: the graph is located per R-GEN-1, exactly as for the CLI. When that
//! finds nothing (no flag, no environment, no graph above the working directory, no editor
//! root: a server started from the home directory), the first call asks the client for its
//! roots (`roots/list`) and serves the first root that is a directory.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{
    ErrorData, RoleServer, ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router,
};
use serde::Deserialize;
use tokio::sync::OnceCell;

use crate::build::store::GraphDirRule;
use crate::config::Config;
use crate::error::AtlasError;
use crate::query::inspect::TraceDirection;
use crate::query::profile::ProfileName;
use crate::query::search::ResponseProfile;

use super::call::{Answer, Call};
use super::output::{Format, error_body};
use super::{context, expand, inspect, search, status};

#[derive(clap::Args, Debug)]
pub struct McpArgs {}

/// Serves MCP on stdin/stdout until the client closes the connection.
pub fn run(call: &Call, _args: &McpArgs) -> Result<(), AtlasError> {
    // A warm server checks each generation's payload once, not on every call, and keeps
    // its loaded indexes and verified sources.
    crate::query::keep_warm(crate::query::context::project::KEPT_BYTES);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| AtlasError::io("<tokio runtime>", e))?;
    let mut server = AtlasServer::new(call);
    // Without a watcher, a read re-checks a tree found clean by `stat` alone.
    server.config.watch.fresh_by_recheck = true;
    // ATLAS_WATCH=1: a watcher keeps the graph fresh for as long as the server runs. It
    // needs a graph located from where the server starts (not from the client's roots).
    let location = call.location().ok();
    let located = location
        .as_ref()
        .is_some_and(|l| l.rule != GraphDirRule::CodeRoot || call.code.is_some());
    // While the client reads the tool list, the first question's model, graph and index
    // load, from the graph found where the server starts (the one a call without roots
    // reads): a first question paid about 90 ms on sympy, a warm one 6 ms.
    if let Some(location) = location {
        let config = call.config.clone();
        let _ = std::thread::Builder::new()
            .name("atlas-mcp-warm-start".into())
            .spawn(move || crate::query::warm_start(&location, &config));
    }
    let _watch = if call.config.watch.enabled && !located {
        eprintln!(
            "atlas mcp: not watching: no repository is located from where the server starts (pass --code)"
        );
        None
    } else if call.config.watch.enabled {
        match super::watch::start(call, None, false, true, true) {
            Ok(watch) => {
                server.config.watch.fresh_by_watcher = true;
                Some(watch)
            }
            Err(e) => {
                eprintln!("atlas mcp: not watching: error[{}]: {e}", e.code());
                None
            }
        }
    } else {
        None
    };
    runtime.block_on(async move {
        let service = match server.serve(rmcp::transport::stdio()).await {
            Ok(service) => service,
            // A client that closes stdin before it initialises asked nothing: no error.
            Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(e) => {
                return Err(AtlasError::io(
                    "<stdio>",
                    std::io::Error::other(e.to_string()),
                ));
            }
        };
        service
            .waiting()
            .await
            .map_err(|e| AtlasError::io("<stdio>", std::io::Error::other(e.to_string())))?;
        Ok(())
    })
}

/// The server's state: the global flags and configuration of `atlas mcp`, and the root
/// the client's `roots/list` named, once asked.
#[derive(Clone)]
pub struct AtlasServer {
    code: Option<PathBuf>,
    graph: Option<PathBuf>,
    config: Config,
    roots: Arc<OnceCell<Option<PathBuf>>>,
    /// The query tools and the inspection tools.
    tools: ToolRouter<AtlasServer>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    Symbol,
    Flow,
    Architecture,
    Impact,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextParams {
    /// Names, paths, relation words or a question.
    pub query: String,
    pub profile: Profile,
    /// Byte ceiling of the answer (1024..=1000000).
    pub max_bytes: Option<u32>,
    /// Continuation: the `--min-score` of an omission's argv.
    pub min_score: Option<u16>,
    /// Continuation: the `--max-score` of an omission's argv.
    pub max_score: Option<u16>,
    /// Continuation: the `--after` of an omission's argv.
    pub after: Option<String>,
    /// Continuation: the `--expect-graph` of an omission's argv.
    pub expect_graph: Option<String>,
    /// Read the committed graph as it is (no refresh).
    pub frozen: Option<bool>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SearchProfile {
    Full,
    Compact,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    /// Free text, identifiers or both.
    pub query: String,
    /// Hits to return (1..=1000, default 10).
    pub top_k: Option<u16>,
    pub profile: Option<SearchProfile>,
    pub frozen: Option<bool>,
    /// `file`: also answer `groups`, the hits by file in ranking order with each file's
    /// evidence.
    pub group_by: Option<SearchGroupBy>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SearchGroupBy {
    File,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExpandParams {
    /// Refs from search hits (`path#Lstart-Lend@hash`), at most 5.
    pub refs: Vec<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

/// A tool's arguments, kept when they do not fit its schema (missing, ill-typed, unknown),
/// so that the tool answers `atlas-invalid-input` in Atlas's own error envelope, as the
/// CLI does, rather than in rmcp's words. Its schema is `T`'s.
pub struct Lenient<T>(std::result::Result<T, String>);

impl<T> Lenient<T> {
    fn take(self) -> Result<T, AtlasError> {
        self.0.map_err(|reason| AtlasError::InvalidInput {
            what: "the tool's arguments",
            reason,
        })
    }
}

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        Ok(Lenient(T::deserialize(value).map_err(|e| e.to_string())))
    }
}

impl<T: schemars::JsonSchema> schemars::JsonSchema for Lenient<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        T::schema_id()
    }

    fn inline_schema() -> bool {
        T::inline_schema()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindAllParams {
    /// A fixed string (not a regex).
    pub literal: String,
    pub case_insensitive: Option<bool>,
    /// Continuation: the `--offset` of the `next` argv.
    pub offset: Option<usize>,
    pub frozen: Option<bool>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileApiParams {
    /// A repository-relative path of an indexed file.
    pub path: String,
    pub offset: Option<usize>,
    pub frozen: Option<bool>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PageParams {
    pub offset: Option<usize>,
    pub frozen: Option<bool>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Callers,
    Callees,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceParams {
    pub symbol: String,
    /// Default callers.
    pub direction: Option<Direction>,
    /// 1..=5, default 2.
    pub depth: Option<usize>,
    pub offset: Option<usize>,
    pub frozen: Option<bool>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OffsetParams {
    pub offset: Option<usize>,
}

impl AtlasServer {
    pub fn new(call: &Call) -> AtlasServer {
        AtlasServer {
            code: call.code.clone(),
            graph: call.graph.clone(),
            config: call.config.clone(),
            roots: Arc::new(OnceCell::new()),
            tools: Self::tool_router() + Self::inspection_router(),
        }
    }

    /// The call a tool runs as: the server's flags, or the client's root when R-GEN-1
    /// found nothing from where the server started.
    async fn call(&self, context: &RequestContext<RoleServer>) -> Result<Call, AtlasError> {
        let mut call = Call {
            code: self.code.clone(),
            graph: self.graph.clone(),
            config: self.config.clone(),
            started: Instant::now(),
            index_resolution: None,
        };
        if call.location()?.rule == GraphDirRule::CodeRoot && call.code.is_none() {
            let root = self
                .roots
                .get_or_init(|| client_root(context.peer.clone()))
                .await;
            if let Some(root) = root {
                call.code = Some(root.clone());
                call.index_resolution = Some("mcp roots");
            }
        }
        Ok(call)
    }

    /// Runs `work` (a blocking library call) off the protocol's thread and shapes its
    /// outcome: the JSON document, or a tool error holding the JSON error envelope. Query
    /// tools (`observed`) record an observability event as their commands do (R-OBS-3).
    async fn answer(
        &self,
        context: RequestContext<RoleServer>,
        observed: Option<&'static str>,
        work: impl FnOnce(&Call) -> Result<String, AtlasError> + Send + 'static,
    ) -> Result<CallToolResult, ErrorData> {
        let call = match self.call(&context).await {
            Ok(call) => call,
            Err(e) => return Ok(tool_error(&e)),
        };
        let outcome = tokio::task::spawn_blocking(move || {
            let outcome = work(&call);
            if let Some(tool) = observed {
                observe(&call, tool, &outcome);
            }
            outcome
        })
        .await
        .unwrap_or_else(|e| {
            Err(AtlasError::Internal {
                what: "tool call",
                reason: e.to_string(),
            })
        });
        Ok(match outcome {
            Ok(json) => CallToolResult::success(vec![ContentBlock::text(json)]),
            Err(e) => tool_error(&e),
        })
    }
}

fn tool_error(error: &AtlasError) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(error_body(error).to_string())])
}

/// The event a query tool's answer records (sizes and codes only, never the text).
fn observe(call: &Call, tool: &'static str, outcome: &Result<String, AtlasError>) {
    if !call.config.observability {
        return;
    }
    let (text, code, items) = match outcome {
        Ok(json) => {
            let items = serde_json::from_str::<serde_json::Value>(json)
                .ok()
                .and_then(|doc| {
                    ["evidence", "hits", "items"]
                        .iter()
                        .find_map(|key| doc.get(key)?.as_array().map(Vec::len))
                })
                .unwrap_or(0);
            (json.clone(), "ok", items)
        }
        Err(e) => (error_body(e).to_string(), e.code(), 0),
    };
    call.observe(Answer {
        tool,
        format: Format::Json,
        profile: None,
        outcome: code,
        output: &text,
        items,
    });
}

/// The first root the client names that is a local directory; `None` when the client
/// has no roots capability, answers nothing usable, or fails. (Roots are deprecated by a
/// protocol revision after 2025-11-25, SEP-2577; the clients agents use today still send
/// them, and the issue asks for them.)
#[allow(deprecated)]
async fn client_root(peer: rmcp::Peer<RoleServer>) -> Option<PathBuf> {
    let supports = peer
        .peer_info()
        .is_some_and(|info| info.capabilities.roots.is_some());
    if !supports {
        return None;
    }
    let roots = peer.list_roots().await.ok()?;
    roots.roots.iter().find_map(|root| {
        let path = PathBuf::from(root.uri.strip_prefix("file://")?);
        path.is_dir().then_some(path)
    })
}

/// `value` when it lies in `range`, else the typed error the command line gives for it.
fn within<T: PartialOrd + std::fmt::Display + Copy>(
    what: &'static str,
    value: Option<T>,
    range: std::ops::RangeInclusive<T>,
) -> Result<Option<T>, AtlasError> {
    match value {
        Some(v) if !range.contains(&v) => Err(AtlasError::InvalidInput {
            what,
            reason: format!("{v} is not in {}..={}", range.start(), range.end()),
        }),
        _ => Ok(value),
    }
}

#[tool_router]
impl AtlasServer {
    #[tool(
        description = "Bounded, relevance-ranked code evidence for a symbol, path or question. \
                       symbol: declaration, callers, callees; flow: the call path (what happens \
                       when…); architecture: modules and relations; impact: what depends on it. \
                       Omitted evidence comes with the argv that fetches it."
    )]
    async fn atlas_context(
        &self,
        Parameters(p): Parameters<Lenient<ContextParams>>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let p = match p.take() {
            Ok(p) => p,
            Err(e) => return Ok(tool_error(&e)),
        };
        self.answer(context, Some("context"), move |call| {
            crate::query::check_query_length(&p.query)?;
            let args = context::ContextArgs {
                query: p.query,
                profile: match p.profile {
                    Profile::Symbol => ProfileName::Symbol,
                    Profile::Flow => ProfileName::Flow,
                    Profile::Architecture => ProfileName::Architecture,
                    Profile::Impact => ProfileName::Impact,
                },
                frozen: p.frozen.unwrap_or(false),
                no_build: false,
                max_bytes: within("max_bytes", p.max_bytes, 1024..=1_000_000)?,
                min_score: p.min_score,
                max_score: p.max_score,
                expect_graph: p.expect_graph,
                after: p.after,
                format: Format::Json,
                execution: context::Execution::Direct,
                fallback_direct: false,
                deadline_ms: None,
            };
            context::json(call, &args)
        })
        .await
    }

    #[tool(
        description = "Hybrid search (BM25, embeddings, graph) over symbols, docs and history. \
                       Use for free text; each hit has a ref for atlas_expand."
    )]
    async fn atlas_search(
        &self,
        Parameters(p): Parameters<Lenient<SearchParams>>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let p = match p.take() {
            Ok(p) => p,
            Err(e) => return Ok(tool_error(&e)),
        };
        self.answer(context, Some("search"), move |call| {
            crate::query::check_query_length(&p.query)?;
            let args = search::SearchArgs {
                text: p.query,
                top_k: within("top_k", p.top_k, 1..=1000)?.unwrap_or(10),
                profile: p.profile.map(|profile| match profile {
                    SearchProfile::Full => ResponseProfile::Full,
                    SearchProfile::Compact => ResponseProfile::Compact,
                }),
                max_tokens: 4000,
                frozen: p.frozen.unwrap_or(false),
                group_by: p
                    .group_by
                    .map(|SearchGroupBy::File| crate::query::search::GroupBy::File),
                format: Format::Json,
            };
            if call.config.search.wants_vectors() {
                crate::query::search::embed::warm_up(&call.config.embed);
            }
            search::json(call, &args)
        })
        .await
    }

    #[tool(description = "The hash-verified source lines behind search refs (paginated).")]
    async fn atlas_expand(
        &self,
        Parameters(p): Parameters<Lenient<ExpandParams>>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let p = match p.take() {
            Ok(p) => p,
            Err(e) => return Ok(tool_error(&e)),
        };
        self.answer(context, Some("expand"), move |call| {
            let args = expand::ExpandArgs {
                refs: p.refs,
                format: Format::Json,
            };
            expand::json(call, &args)
        })
        .await
    }

    #[tool(
        description = "What the committed graph holds: coverage, staleness, edges, and how the \
                       repository was found."
    )]
    async fn atlas_status(
        &self,
        Parameters(p): Parameters<Lenient<NoParams>>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        if let Err(e) = p.take() {
            return Ok(tool_error(&e));
        }
        self.answer(context, None, status::json).await
    }
}

#[tool_router(router = inspection_router)]
impl AtlasServer {
    #[tool(
        description = "Literal occurrences of a fixed string in indexed files, with the \
                       enclosing symbol (text matches, not call relations). Paginated."
    )]
    async fn atlas_find_all(
        &self,
        Parameters(p): Parameters<Lenient<FindAllParams>>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let p = match p.take() {
            Ok(p) => p,
            Err(e) => return Ok(tool_error(&e)),
        };
        self.answer(context, None, move |call| {
            let args = inspect::FindAllArgs {
                literal: p.literal,
                case_insensitive: p.case_insensitive.unwrap_or(false),
                offset: p.offset.unwrap_or(0),
                max_hits: None,
                max_bytes: None,
                frozen: p.frozen.unwrap_or(false),
                format: Format::Json,
            };
            inspect::json(call, &args)
        })
        .await
    }

    #[tool(description = "A file's outline (signatures, docs, spans), and its text when small.")]
    async fn atlas_file_api(
        &self,
        Parameters(p): Parameters<Lenient<FileApiParams>>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let p = match p.take() {
            Ok(p) => p,
            Err(e) => return Ok(tool_error(&e)),
        };
        self.answer(context, None, move |call| {
            let args = inspect::FileApiArgs {
                path: p.path,
                offset: p.offset.unwrap_or(0),
                max_definitions: None,
                max_bytes: None,
                frozen: p.frozen.unwrap_or(false),
                format: Format::Json,
            };
            inspect::json(call, &args)
        })
        .await
    }

    #[tool(description = "A compact map of the repository's modules and their relations.")]
    async fn atlas_repo_map(
        &self,
        Parameters(p): Parameters<Lenient<PageParams>>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let p = match p.take() {
            Ok(p) => p,
            Err(e) => return Ok(tool_error(&e)),
        };
        self.answer(context, None, move |call| {
            let args = inspect::RepoMapArgs {
                offset: p.offset.unwrap_or(0),
                max_modules: None,
                max_bytes: None,
                frozen: p.frozen.unwrap_or(false),
                format: Format::Json,
            };
            inspect::json(call, &args)
        })
        .await
    }

    #[tool(
        description = "A call tree from a symbol, callers or callees, with each edge's \
                       provenance and confidence and the unresolved frontier."
    )]
    async fn atlas_trace_calls(
        &self,
        Parameters(p): Parameters<Lenient<TraceParams>>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let p = match p.take() {
            Ok(p) => p,
            Err(e) => return Ok(tool_error(&e)),
        };
        self.answer(context, None, move |call| {
            let args = inspect::TraceCallsArgs {
                symbol: p.symbol,
                direction: match p.direction {
                    Some(Direction::Callees) => TraceDirection::Callees,
                    _ => TraceDirection::Callers,
                },
                depth: p.depth,
                max_fanout: None,
                offset: p.offset.unwrap_or(0),
                max_edges: None,
                max_bytes: None,
                frozen: p.frozen.unwrap_or(false),
                format: Format::Json,
            };
            inspect::json(call, &args)
        })
        .await
    }

    #[tool(description = "Which indexed files changed since the graph was built; rebuild needed?")]
    async fn atlas_check_freshness(
        &self,
        Parameters(p): Parameters<Lenient<OffsetParams>>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let p = match p.take() {
            Ok(p) => p,
            Err(e) => return Ok(tool_error(&e)),
        };
        self.answer(context, None, move |call| {
            let args = inspect::CheckFreshnessArgs {
                offset: p.offset.unwrap_or(0),
                max_paths: None,
                max_bytes: None,
                format: Format::Json,
            };
            inspect::json(call, &args)
        })
        .await
    }
}

#[tool_handler(router = self.tools)]
impl ServerHandler for AtlasServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("atlas", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Atlas: compiled code knowledge of this repository. Start with atlas_context \
                 (a name, path or question); atlas_search for free text.",
            )
    }
}
