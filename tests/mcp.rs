//! `atlas mcp` with a real MCP client: rmcp's client spawns the real binary over stdio on
//! a copy of a fixture repository and calls every tool (issue 13). Offline.

#![allow(deprecated)] // MCP roots: deprecated by a later protocol revision, still sent today.

mod common;

use std::path::Path;
use std::process::Stdio;

use common::Sandbox;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientInfo, Implementation,
    ListRootsResult, Root,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};

const ATLAS: &str = env!("CARGO_BIN_EXE_atlas");

/// A client that answers `roots/list` with `roots` (and says so in its capabilities).
#[derive(Clone, Default)]
struct Client {
    roots: Vec<String>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientInfo {
        let capabilities = if self.roots.is_empty() {
            ClientCapabilities::default()
        } else {
            ClientCapabilities::builder().enable_roots().build()
        };
        ClientInfo::new(capabilities, Implementation::new("atlas-tests", "0"))
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        Ok(ListRootsResult::new(
            self.roots
                .iter()
                .map(|uri| Root::new(uri.clone()))
                .collect(),
        ))
    }
}

/// `atlas mcp` started in `cwd` with a clean environment (plus `args` before `mcp`).
async fn connect(cwd: &Path, args: &[&str], client: Client) -> RunningService<RoleClient, Client> {
    connect_env(cwd, args, &[], client).await
}

async fn connect_env(
    cwd: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    client: Client,
) -> RunningService<RoleClient, Client> {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let cwd = cwd.to_path_buf();
    let (transport, _) =
        TokioChildProcess::builder(tokio::process::Command::new(ATLAS).configure(|cmd| {
            cmd.args(&args).arg("mcp").current_dir(&cwd);
            for (key, _) in std::env::vars() {
                if key.starts_with("ATLAS_")
                    || key == "CLAUDE_PROJECT_DIR"
                    || key == "WORKSPACE_FOLDER_PATHS"
                {
                    cmd.env_remove(key);
                }
            }
            cmd.envs(env.iter().map(|(k, v)| (k, v)));
        }))
        .stderr(Stdio::null())
        .spawn()
        .expect("atlas mcp starts");
    client.serve(transport).await.expect("the MCP handshake")
}

async fn call(
    client: &RunningService<RoleClient, Client>,
    tool: &str,
    arguments: Value,
) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object");
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(arguments))
        .await
        .unwrap_or_else(|e| panic!("{tool}: protocol failure {e}"))
}

/// The single text content of a tool result, parsed as JSON.
fn document(result: &CallToolResult) -> Value {
    assert_eq!(result.content.len(), 1, "{result:?}");
    let text = result.content[0]
        .as_text()
        .unwrap_or_else(|| panic!("not text: {result:?}"))
        .text
        .clone();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

fn ok(result: &CallToolResult) -> Value {
    assert_ne!(result.is_error, Some(true), "tool error: {result:?}");
    document(result)
}

fn error_code(result: &CallToolResult) -> String {
    assert_eq!(
        result.is_error,
        Some(true),
        "expected a tool error: {result:?}"
    );
    document(result)["error"]["code"]
        .as_str()
        .expect("an error code")
        .to_string()
}

/// Timings differ between two runs of the same query; everything else must not.
fn without_timings(mut value: Value) -> Value {
    if let Some(receipt) = value.get_mut("receipt").and_then(Value::as_object_mut) {
        receipt.remove("timings_ms");
        receipt.remove("serialized_bytes");
    }
    value
}

fn built() -> Sandbox {
    let s = Sandbox::with_fixture("python");
    s.atlas(&["build", "--no-progress"]).success();
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_answers_the_document_its_cli_command_prints() {
    let s = built();
    // The same global flags as the CLI runs below (`--code` is in continuation argv).
    let repo = s.repo().display().to_string();
    let client = connect(&s.repo(), &["--code", &repo], Client::default()).await;

    let tools = client.list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "atlas_check_freshness",
            "atlas_context",
            "atlas_expand",
            "atlas_file_api",
            "atlas_find_all",
            "atlas_repo_map",
            "atlas_search",
            "atlas_status",
            "atlas_trace_calls",
        ]
    );

    let context = ok(&call(
        &client,
        "atlas_context",
        json!({"query": "Cart.total", "profile": "symbol", "frozen": true}),
    )
    .await);
    let cli = s
        .atlas(&[
            "context",
            "Cart.total",
            "--profile",
            "symbol",
            "--frozen",
            "--format",
            "json",
        ])
        .success()
        .json();
    assert_eq!(without_timings(context), without_timings(cli));

    let search = ok(&call(
        &client,
        "atlas_search",
        json!({"query": "cart total", "top_k": 3, "frozen": true}),
    )
    .await);
    let cli = s
        .atlas(&[
            "search",
            "cart total",
            "--top-k",
            "3",
            "--frozen",
            "--format",
            "json",
        ])
        .success()
        .json();
    assert_eq!(search, cli);
    let grouped = ok(&call(
        &client,
        "atlas_search",
        json!({"query": "cart total", "top_k": 3, "frozen": true, "group_by": "file"}),
    )
    .await);
    let cli = s
        .atlas(&[
            "search",
            "cart total",
            "--top-k",
            "3",
            "--frozen",
            "--group-by",
            "file",
            "--format",
            "json",
        ])
        .success()
        .json();
    assert_eq!(grouped, cli);
    assert!(
        grouped["groups"].as_array().is_some_and(|g| !g.is_empty()),
        "{grouped}"
    );
    let reference = search["hits"][0]["ref"]
        .as_str()
        .expect("a ref")
        .to_string();

    let expanded = ok(&call(
        &client,
        "atlas_expand",
        json!({"refs": [reference.clone()]}),
    )
    .await);
    let cli = s
        .atlas(&["expand", &reference, "--format", "json"])
        .success()
        .json();
    assert_eq!(expanded, cli);
    assert!(!expanded["items"][0]["content"].as_str().unwrap().is_empty());

    let status = ok(&call(&client, "atlas_status", json!({})).await);
    let cli = s.atlas(&["status", "--format", "json"]).success().json();
    assert_eq!(status["fingerprint"], cli["fingerprint"]);
    assert_eq!(status["coverage"], cli["coverage"]);
    assert_eq!(status["index_resolution"], "flag --code");

    // The inspection tools, each against its subcommand.
    for (tool, arguments, argv) in [
        (
            "atlas_find_all",
            json!({"literal": "total", "frozen": true}),
            vec!["find-all", "total", "--frozen"],
        ),
        (
            "atlas_file_api",
            json!({"path": "shop/models.py", "frozen": true}),
            vec!["file-api", "shop/models.py", "--frozen"],
        ),
        (
            "atlas_repo_map",
            json!({"frozen": true}),
            vec!["repo-map", "--frozen"],
        ),
        (
            "atlas_trace_calls",
            json!({"symbol": "Cart.total", "direction": "callers", "frozen": true}),
            vec![
                "trace-calls",
                "Cart.total",
                "--direction",
                "callers",
                "--frozen",
            ],
        ),
        ("atlas_check_freshness", json!({}), vec!["check-freshness"]),
    ] {
        let answer = ok(&call(&client, tool, arguments).await);
        let mut argv = argv;
        argv.extend(["--format", "json"]);
        let cli = s.atlas(&argv).success().json();
        assert_eq!(answer, cli, "{tool}");
    }
    let outside = call(
        &client,
        "atlas_file_api",
        json!({"path": "../../../../etc/passwd", "frozen": true}),
    )
    .await;
    assert_eq!(error_code(&outside), "atlas-ref-unknown");
    assert!(!format!("{outside:?}").contains("root:"));
    client.cancel().await.unwrap();
}

/// The tool arguments an omission's argv (`atlas context Q --profile P …`) stands for.
fn arguments_of(argv: &[&str]) -> Value {
    assert_eq!(&argv[..2], ["atlas", "context"], "{argv:?}");
    let mut arguments = json!({"query": argv[2]});
    let mut rest = argv[3..].iter();
    while let Some(flag) = rest.next() {
        let mut value = || rest.next().expect("a flag's value").to_string();
        match *flag {
            "--profile" => arguments["profile"] = json!(value()),
            "--max-bytes" => arguments["max_bytes"] = json!(value().parse::<u32>().unwrap()),
            "--min-score" => arguments["min_score"] = json!(value().parse::<u16>().unwrap()),
            "--max-score" => arguments["max_score"] = json!(value().parse::<u16>().unwrap()),
            "--after" => arguments["after"] = json!(value()),
            "--expect-graph" => arguments["expect_graph"] = json!(value()),
            "--frozen" => arguments["frozen"] = json!(true),
            "--format" => assert_eq!(value(), "json"),
            other => panic!("a flag the tool does not take: {other}"),
        }
    }
    arguments
}

/// Every tool's schema together stays small (issue 13: ≤ 1,500 o200k tokens).
const TOOLS_LIST_TOKEN_BUDGET: usize = 1500;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tool_list_fits_its_token_budget() {
    let s = Sandbox::with_fixture("python");
    let client = connect(&s.repo(), &[], Client::default()).await;
    let tools = client.list_all_tools().await.unwrap();
    let listed = serde_json::to_string(&json!({ "tools": tools })).unwrap();
    let tokens = atlas::query::tokens::counter(None).count(&listed);
    eprintln!(
        "tools/list: {} tools, {} bytes, {tokens} o200k tokens",
        tools.len(),
        listed.len()
    );
    assert!(
        tokens <= TOOLS_LIST_TOKEN_BUDGET,
        "{tokens} tokens > {TOOLS_LIST_TOKEN_BUDGET}: {listed}"
    );
    for tool in &tools {
        let description = tool.description.as_deref().unwrap_or("");
        assert!(
            !description.is_empty() && description.len() <= 400,
            "{}",
            tool.name
        );
    }
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_continuation_chain_runs_across_two_calls() {
    let s = built();
    let client = connect(&s.repo(), &[], Client::default()).await;
    let first = ok(&call(
        &client,
        "atlas_context",
        json!({"query": "shop/models.py", "profile": "symbol", "max_bytes": 3000, "frozen": true}),
    )
    .await);
    let omission = first["omissions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["reason"] == "byte-ceiling")
        .unwrap_or_else(|| panic!("a byte-ceiling omission: {first}"))
        .clone();
    let argv: Vec<&str> = omission["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let second = ok(&call(&client, "atlas_context", arguments_of(&argv)).await);
    let ids = |doc: &Value| -> Vec<String> {
        doc["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_str().unwrap().to_string())
            .collect()
    };
    let (page1, page2) = (ids(&first), ids(&second));
    assert!(!page2.is_empty(), "the second page is empty: {second}");
    assert!(
        page2.iter().all(|id| !page1.contains(id)),
        "pages overlap: {page1:?} / {page2:?}"
    );
    assert!(
        second["receipt"]["retrieval"]["cursor_prefix"]
            .as_u64()
            .unwrap()
            > 0
    );
    // A below-relevance continuation is a score band, taken as the tool's arguments.
    let checkout = ok(&call(
        &client,
        "atlas_context",
        json!({"query": "checkout", "profile": "symbol", "frozen": true}),
    )
    .await);
    let below = checkout["omissions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["reason"] == "below-relevance")
        .unwrap_or_else(|| panic!("a below-relevance omission: {checkout}"));
    let argv: Vec<&str> = below["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let band = ok(&call(&client, "atlas_context", arguments_of(&argv)).await);
    assert_eq!(band["receipt"]["limits"]["max_score"], json!(299));
    let optional: Vec<&Value> = band["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["required"] == false)
        .collect();
    assert!(!optional.is_empty(), "{band}");
    assert!(
        optional.iter().all(|e| e["score"].as_u64().unwrap() <= 299),
        "{band}"
    );
    assert!(ids(&band).iter().all(|id| !ids(&checkout).contains(id) || {
        band["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["id"] == json!(id) && e["required"] == true)
    }));
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_errors_are_tool_errors_and_the_server_keeps_serving() {
    let s = built();
    let client = connect(&s.repo(), &[], Client::default()).await;
    let no_match = call(
        &client,
        "atlas_context",
        json!({"query": "NoSuchSymbolAnywhere", "profile": "symbol", "frozen": true}),
    )
    .await;
    assert_eq!(error_code(&no_match), "atlas-context-no-match");
    let document = document(&no_match);
    assert_eq!(document["error"]["exit_code"], 7);

    // Over budget: the required declaration cannot fit in the smallest ceiling.
    let over = call(
        &client,
        "atlas_context",
        json!({"query": "Cart", "profile": "symbol", "max_bytes": 1024, "frozen": true}),
    )
    .await;
    assert_eq!(error_code(&over), "atlas-context-required-budget");

    // Outside the repository: the uniform ref error, no content.
    let outside = call(
        &client,
        "atlas_expand",
        json!({"refs": ["/etc/passwd#L1-L5@00000000"]}),
    )
    .await;
    assert_eq!(error_code(&outside), "atlas-ref-unknown");
    assert!(!format!("{outside:?}").contains("root:"));

    // A 1 MB query is refused, typed.
    let huge = "word ".repeat(200_000);
    let long = call(
        &client,
        "atlas_search",
        json!({"query": huge, "frozen": true}),
    )
    .await;
    assert_eq!(error_code(&long), "atlas-invalid-input");

    // Values out of their range are refused as the command line refuses them, not moved
    // into it.
    for (tool, arguments) in [
        (
            "atlas_context",
            json!({"query": "Cart", "profile": "symbol", "max_bytes": 5, "frozen": true}),
        ),
        (
            "atlas_context",
            json!({"query": "Cart", "profile": "symbol", "max_bytes": 2_000_000, "frozen": true}),
        ),
        (
            "atlas_search",
            json!({"query": "cart", "top_k": 0, "frozen": true}),
        ),
        (
            "atlas_search",
            json!({"query": "cart", "top_k": 5000, "frozen": true}),
        ),
    ] {
        let refused = call(&client, tool, arguments.clone()).await;
        assert_eq!(error_code(&refused), "atlas-invalid-input", "{arguments}");
    }

    // Unknown tool, missing and ill-typed arguments: protocol errors, not a dead server.
    let unknown = client
        .call_tool(CallToolRequestParams::new("atlas_nothing"))
        .await;
    assert!(unknown.is_err(), "{unknown:?}");
    // Arguments that do not fit the schema are `atlas-invalid-input` in Atlas's own error
    // envelope, naming what is wrong, as on the command line.
    for (tool, arguments, named) in [
        ("atlas_context", json!({"profile": "symbol"}), "query"),
        (
            "atlas_context",
            json!({"query": "Cart", "profile": 5}),
            "invalid type",
        ),
        (
            "atlas_context",
            json!({"query": "Cart", "profile": "symbol", "extra": true}),
            "extra",
        ),
        ("atlas_search", json!({"query": ["Cart"]}), "invalid type"),
        ("atlas_status", json!({"verbose": true}), "verbose"),
    ] {
        let Value::Object(arguments) = arguments else {
            unreachable!()
        };
        let bad = client
            .call_tool(CallToolRequestParams::new(tool).with_arguments(arguments))
            .await
            .expect("a tool error, not a protocol failure");
        assert_eq!(bad.is_error, Some(true), "{bad:?}");
        assert_eq!(error_code(&bad), "atlas-invalid-input", "{tool} {named}");
        let text = &bad.content[0].as_text().unwrap().text;
        assert!(text.contains(named), "{named}: {text}");
    }

    let status = ok(&call(&client, "atlas_status", json!({})).await);
    assert!(status["fingerprint"].as_str().is_some());
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_started_elsewhere_serves_the_clients_root() {
    let s = Sandbox::with_fixture("python");
    let elsewhere = s.path().join("home");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let root = format!("file://{}", s.repo().display());
    let client = connect(&elsewhere, &[], Client { roots: vec![root] }).await;
    // Not frozen: the first call builds the client's repository.
    let context = ok(&call(
        &client,
        "atlas_context",
        json!({"query": "Cart.total", "profile": "symbol"}),
    )
    .await);
    assert!(
        context["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["symbol"] == "shop/models.py::Cart.total"),
        "{context}"
    );
    let status = ok(&call(&client, "atlas_status", json!({})).await);
    assert_eq!(status["index_resolution"], "mcp roots");
    assert_eq!(
        Path::new(status["code_root"].as_str().unwrap()),
        s.repo().as_path()
    );
    assert!(s.graph().join("CURRENT").is_file());
    assert!(!elsewhere.join(".agent-spec").exists());
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_build_once_and_all_answer() {
    let s = Sandbox::with_fixture("python");
    let client = connect(&s.repo(), &[], Client::default()).await;
    let tasks: Vec<_> = (0..6)
        .map(|i| {
            let peer = client.peer().clone();
            let (tool, arguments) = if i % 2 == 0 {
                (
                    "atlas_context",
                    json!({"query": "Cart.total", "profile": "symbol"}),
                )
            } else {
                ("atlas_search", json!({"query": "cart total"}))
            };
            let Value::Object(arguments) = arguments else {
                unreachable!()
            };
            tokio::spawn(async move {
                peer.call_tool(CallToolRequestParams::new(tool).with_arguments(arguments))
                    .await
                    .expect("no protocol failure")
            })
        })
        .collect();
    let mut results = Vec::new();
    for task in tasks {
        results.push(task.await.unwrap());
    }
    let mut fingerprints = Vec::new();
    for result in &results {
        let doc = ok(result);
        if let Some(fp) = doc["graph"]["fingerprint"].as_str() {
            fingerprints.push(fp.to_string());
        }
    }
    fingerprints.dedup();
    assert_eq!(fingerprints.len(), 1, "{fingerprints:?}");
    let generations = std::fs::read_dir(s.graph().join("generations"))
        .unwrap()
        .count();
    assert_eq!(generations, 1, "one build for six concurrent first calls");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_build_in_progress_blocks_neither_status_nor_a_query() {
    let s = built();
    s.write(
        "shop/util.py",
        "def apply_discount(amount, rate):\n    return amount\n",
    );
    // Another process is building: it holds the store's lock for as long as this test.
    let lock = std::fs::OpenOptions::new()
        .write(true)
        .open(s.graph().join("lock"))
        .unwrap();
    lock.lock().unwrap();
    let client = connect_env(
        &s.repo(),
        &[],
        &[("ATLAS_LOCK_WAIT_MS", "100")],
        Client::default(),
    )
    .await;
    let status = ok(&call(&client, "atlas_status", json!({})).await);
    assert_eq!(status["staleness"]["stale"], true, "{status}");
    // Not frozen: the refresh cannot take the lock, so the committed generation answers,
    // saying it is stale.
    let context = ok(&call(
        &client,
        "atlas_context",
        json!({"query": "apply_discount", "profile": "symbol"}),
    )
    .await);
    assert!(
        context["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["code"] == "atlas-context-stale-graph"),
        "{context}"
    );
    client.cancel().await.unwrap();
    drop(lock);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_tools_record_observability_events_without_their_text() {
    let s = built();
    let client = connect_env(
        &s.repo(),
        &[],
        &[("ATLAS_OBSERVABILITY", "1")],
        Client::default(),
    )
    .await;
    ok(&call(
        &client,
        "atlas_context",
        json!({"query": "Cart.total", "profile": "symbol", "frozen": true}),
    )
    .await);
    let failed = call(
        &client,
        "atlas_context",
        json!({"query": "NoSuchSymbolAnywhere", "profile": "symbol", "frozen": true}),
    )
    .await;
    assert_eq!(error_code(&failed), "atlas-context-no-match");
    ok(&call(&client, "atlas_status", json!({})).await);
    client.cancel().await.unwrap();
    let events = std::fs::read_to_string(s.graph().join("observability/events.jsonl")).unwrap();
    let events: Vec<Value> = events
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let outcomes: Vec<(&str, &str)> = events
        .iter()
        .map(|e| (e["tool"].as_str().unwrap(), e["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(
        outcomes,
        [("context", "ok"), ("context", "atlas-context-no-match")],
        "status is not a query tool"
    );
    let text = serde_json::to_string(&events).unwrap();
    assert!(!text.contains("Cart.total") && !text.contains("NoSuchSymbolAnywhere"));
}

#[test]
fn a_client_that_disconnects_mid_call_leaves_the_server_exiting_cleanly() {
    let s = built();
    let mut child = std::process::Command::new(ATLAS)
        .arg("mcp")
        .current_dir(s.repo())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let stdin = child.stdin.as_mut().unwrap();
        for message in [
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "atlas_search", "arguments": {"query": "cart total"}}}),
        ] {
            writeln!(stdin, "{message}").unwrap();
        }
    }
    // The client goes away with the call in flight.
    drop(child.stdin.take());
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_ne!(output.status.code(), Some(101), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_atlas_watch_the_server_answers_an_edit_once_its_watcher_has_built() {
    let s = built();
    let client = connect_env(
        &s.repo(),
        &[],
        &[("ATLAS_WATCH", "1"), ("ATLAS_WATCH_DEBOUNCE_MS", "100")],
        Client::default(),
    )
    .await;
    let watch_builds = || {
        std::fs::read_to_string(s.graph().join("watch.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .filter(|w| w["state"] == "idle")
            .and_then(|w| w["builds"].as_u64())
    };
    let started = std::time::Instant::now();
    let before = loop {
        if let Some(builds) = watch_builds() {
            break builds;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(60));
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    let status = ok(&call(&client, "atlas_status", json!({})).await);
    assert_eq!(status["watch"]["backend"], "inotify", "{status:#}");

    s.write("shop/watched.py", "def seen_through_mcp():\n    return 1\n");
    while watch_builds().is_none_or(|b| b <= before) {
        assert!(started.elapsed() < std::time::Duration::from_secs(60));
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // Not frozen, yet no scan of its own: the server trusts its watcher.
    let answer = ok(&call(
        &client,
        "atlas_context",
        json!({"query": "seen_through_mcp", "profile": "symbol"}),
    )
    .await);
    assert_eq!(
        answer["evidence"][0]["symbol"],
        "shop/watched.py::seen_through_mcp"
    );
    assert_eq!(answer["graph"]["refreshed"], false);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_search_over_many_symbols_answers_what_a_one_shot_search_answers() {
    // A serving process rules vector rows out through an int8 copy of the vectors
    // (`query::search::quantized`); over more symbols than the vector arm keeps (50 of a
    // kind), its answers must still be the one-shot CLI's, to the score.
    let s = Sandbox::with_fixture("python");
    let words = [
        "parse", "render", "cache", "token", "money", "discount", "matrix", "stream", "socket",
        "retry", "schedule", "encode", "invoice", "refund",
    ];
    for file in 0..12 {
        let mut text = String::new();
        for i in 0..20 {
            let n = file * 20 + i;
            let (a, b) = (words[n % words.len()], words[(n / 3 + file) % words.len()]);
            text.push_str(&format!(
                "def {a}_{b}_{n}(value):\n    \"\"\"{a} the {b} of value.\"\"\"\n    return value\n\n"
            ));
        }
        s.write(&format!("gen/m{file}.py"), text);
    }
    s.atlas(&["build", "--no-progress"]).success();
    let repo = s.repo().display().to_string();
    let client = connect(&s.repo(), &["--code", &repo], Client::default()).await;
    let mut by_vector = 0;
    for query in [
        "parse the token stream",
        "retry socket",
        "refund money",
        "encode invoice",
    ] {
        let warm = ok(&call(
            &client,
            "atlas_search",
            json!({"query": query, "top_k": 20, "frozen": true}),
        )
        .await);
        let cli = s
            .atlas(&[
                "search", query, "--top-k", "20", "--frozen", "--format", "json",
            ])
            .success()
            .json();
        assert_eq!(warm, cli, "{query}");
        by_vector += cli["hits"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|h| h["match_arms"].to_string().contains("vector"))
            .count();
    }
    assert!(by_vector > 0, "the vector arm found nothing to compare");
}

/// A client that connects and closes stdin before it initialises (a probe, a launcher
/// that gave up) asked nothing: the server exits 0 and says nothing.
#[test]
fn a_client_gone_before_it_initialises_is_not_an_error() {
    let s = built();
    for input in ["", "\n"] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_atlas"))
            .args(["--code", s.repo().to_str().unwrap(), "mcp"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(input.as_bytes()).unwrap();
        }
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{input:?}: {stderr}");
        assert!(!stderr.contains("error["), "{input:?}: {stderr}");
    }
}
