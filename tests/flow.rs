//! Flow spines (issue 11): one small repository per signal and per receiver form, built
//! with the real extractor and resolver, asked through the CLI.

mod common;

use common::Sandbox;
use serde_json::Value;

fn repo(files: &[(&str, &str)]) -> Sandbox {
    let s = Sandbox::new();
    for (path, text) in files {
        s.write(path, text);
    }
    s
}

fn flow(s: &Sandbox, query: &str) -> Value {
    s.atlas(&["context", query, "--profile", "flow", "--format", "json"])
        .success()
        .json()
}

/// The spine's symbols, in order.
fn spine(out: &Value) -> Vec<String> {
    out["spine"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["symbol"].as_str().unwrap().to_string())
        .collect()
}

/// The `why` of the spine step on `symbol`.
fn why(out: &Value, symbol: &str) -> String {
    out["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["symbol"] == symbol && e["class"] == "spine")
        .and_then(|e| e["why"].as_str())
        .unwrap_or_else(|| panic!("no spine step {symbol}: {out:#}"))
        .to_string()
}

/// Evidence entries of `class` on `symbol`.
fn entries<'a>(out: &'a Value, class: &str, symbol: &str) -> Vec<&'a Value> {
    out["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["class"] == class && e["symbol"] == symbol)
        .collect()
}

/// The `why` of an off-spine step: a callee, or the alternative that shows it instead.
fn off_spine_why(out: &Value, symbol: &str) -> String {
    ["callee", "alternative"]
        .iter()
        .flat_map(|class| entries(out, class, symbol))
        .find_map(|e| e["why"].as_str())
        .unwrap_or_else(|| panic!("no callee or alternative {symbol}: {out:#}"))
        .to_string()
}

fn dump(s: &Sandbox) -> String {
    s.atlas(&["build"]).success();
    s.atlas(&["graph", "dump"]).success().stdout
}

#[track_caller]
fn assert_edge(dump: &str, from: &str, to: &str) {
    let prefix = format!("edge calls {from} -> {to} ");
    assert!(
        dump.lines().any(|l| l.starts_with(&prefix)),
        "missing `{prefix}`:\n{dump}"
    );
}

/// Helpers with a downstream reach of `n` calls inside the repository.
fn chain(prefix: &str, n: usize) -> String {
    let mut out = String::new();
    for i in 0..n {
        let next = if i + 1 < n {
            format!("    return {prefix}{}(x)\n", i + 1)
        } else {
            "    return x\n".to_string()
        };
        out.push_str(&format!("\n\ndef {prefix}{i}(x):\n{next}"));
    }
    out
}

// ---- which chain dominates ---------------------------------------------------------

#[test]
fn the_main_path_wins_over_a_larger_error_handler() {
    let code = format!(
        "def serve(x):\n    try:\n        value = work0(x)\n    except ValueError:\n        recover0(x)\n        raise\n    return value\n{}{}",
        chain("work", 1),
        chain("recover", 5)
    );
    let s = repo(&[("app.py", &code)]);
    let out = flow(&s, "serve calls");
    assert_eq!(spine(&out)[..2], ["app.py::serve", "app.py::work0"]);
    assert!(why(&out, "app.py::work0").contains("main path"));
    // The handler is the labelled alternative, with its reason.
    let alternative = entries(&out, "alternative", "app.py::recover0");
    assert_eq!(alternative.len(), 1, "{out:#}");
    let reason = alternative[0]["why"].as_str().unwrap();
    assert!(
        reason.contains("error path") && reason.contains("error handler"),
        "{reason}"
    );
}

#[test]
fn an_early_exit_guard_and_logging_are_not_the_main_path() {
    let code = format!(
        "def serve(x):\n    if x is None:\n        fallback0(x)\n        return None\n    log_request(x)\n    return handle0(x)\n\n\ndef log_request(x):\n    return note0(x)\n{}{}{}",
        chain("fallback", 6),
        chain("note", 6),
        chain("handle", 1)
    );
    let s = repo(&[("app.py", &code)]);
    let out = flow(&s, "serve calls");
    assert_eq!(spine(&out)[1], "app.py::handle0", "{out:#}");
    assert!(off_spine_why(&out, "app.py::fallback0").contains("early-exit guard"));
    assert!(off_spine_why(&out, "app.py::log_request").contains("logging"));
}

#[test]
fn a_larger_reach_wins_and_is_reported() {
    let code = format!(
        "def serve(x):\n    small0(x)\n    large0(x)\n{}{}",
        chain("small", 1),
        chain("large", 4)
    );
    let s = repo(&[("app.py", &code)]);
    let out = flow(&s, "serve calls");
    assert_eq!(
        spine(&out)[..5],
        [
            "app.py::serve",
            "app.py::large0",
            "app.py::large1",
            "app.py::large2",
            "app.py::large3"
        ]
    );
    assert!(
        why(&out, "app.py::large0").starts_with("reach 3"),
        "{out:#}"
    );
}

#[test]
fn the_call_whose_result_is_returned_wins() {
    let code = format!(
        "def serve(x):\n    side0(x)\n    rv = main0(x)\n    return rv\n{}{}",
        chain("side", 3),
        chain("main", 1)
    );
    let s = repo(&[("app.py", &code)]);
    let out = flow(&s, "serve calls");
    assert_eq!(spine(&out)[1], "app.py::main0", "{out:#}");
    assert!(why(&out, "app.py::main0").contains("its result is returned"));
}

#[test]
fn constructors_builders_and_getters_are_demoted() {
    let code = "class Config:\n    def __init__(self):\n        self.port = 1\n\n\ndef get_name(c):\n    return c.port\n\n\ndef serve():\n    c = Config()\n    name = get_name(c)\n    return run(c, name)\n\n\ndef run(c, name):\n    return c\n";
    let s = repo(&[("app.py", code)]);
    let out = flow(&s, "serve calls");
    assert_eq!(spine(&out)[1], "app.py::run", "{out:#}");
    let reason = |symbol: &str| off_spine_why(&out, symbol);
    assert!(reason("app.py::Config").contains("constructor or builder"));
    assert!(reason("app.py::get_name").contains("getter"));
}

#[test]
fn rust_default_and_new_are_plumbing() {
    let code = "pub struct Options { pub n: u32 }\n\nimpl Default for Options {\n    fn default() -> Self { Options { n: 1 } }\n}\n\npub struct Engine;\n\nimpl Engine {\n    pub fn new() -> Engine { Engine }\n    pub fn run(&self, o: &Options) -> u32 { step(o.n) }\n}\n\nfn step(n: u32) -> u32 { n + 1 }\n\npub fn start() -> u32 {\n    let options = Options::default();\n    let engine = Engine::new();\n    engine.run(&options)\n}\n";
    let s = repo(&[("src/lib.rs", code)]);
    let out = flow(&s, "start calls");
    assert_eq!(
        spine(&out)[1..],
        ["src/lib.rs::Engine::run", "src/lib.rs::step"],
        "{out:#}"
    );
}

// ---- dynamic dispatch --------------------------------------------------------------

const HANDLERS: &str = "class Handler:\n    def handle(self, x):\n        raise NotImplementedError()\n\n\nclass JsonHandler(Handler):\n    def handle(self, x):\n        return encode(x)\n\n\nclass TextHandler(Handler):\n    def handle(self, x):\n        return str(x)\n\n\ndef encode(x):\n    return x\n\n\ndef pick(kind) -> Handler:\n    return JsonHandler() if kind else TextHandler()\n\n\ndef serve_request(kind, x):\n    handler = pick(kind)\n    return handler.handle(x)\n";

#[test]
fn a_call_to_an_abstract_method_continues_in_its_implementations() {
    let s = repo(&[
        ("app.py", HANDLERS),
        (
            "extra.py",
            "from app import TextHandler\n\n\ndef also():\n    return TextHandler().handle(1)\n",
        ),
    ]);
    let out = flow(&s, "serve_request calls");
    let steps = spine(&out);
    assert_eq!(steps[0], "app.py::serve_request");
    // `handler` is typed by pick's `-> Handler`; Handler.handle only declares.
    assert!(
        steps[1] == "app.py::TextHandler.handle" || steps[1] == "app.py::JsonHandler.handle",
        "{out:#}"
    );
    let step = out["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["symbol"] == steps[1].as_str() && e["class"] == "spine")
        .unwrap();
    assert_eq!(step["relation"]["dispatch"], true, "{step:#}");
    assert!(
        step["why"]
            .as_str()
            .unwrap()
            .starts_with("dispatch: app.py::Handler.handle → ")
    );
    // The implementation not taken is a labelled dispatch alternative.
    let other = if steps[1].contains("Json") {
        "app.py::TextHandler.handle"
    } else {
        "app.py::JsonHandler.handle"
    };
    let alternative = entries(&out, "alternative", other);
    assert_eq!(alternative.len(), 1, "{out:#}");
    assert!(alternative[0]["why"].as_str().unwrap().contains("dispatch"));
}

#[test]
fn the_implementation_the_query_names_is_taken() {
    let s = repo(&[("app.py", HANDLERS)]);
    let out = flow(&s, "serve_request JsonHandler.handle");
    assert_eq!(
        spine(&out),
        ["app.py::serve_request", "app.py::JsonHandler.handle"],
        "{out:#}"
    );
    let text = s
        .atlas(&[
            "context",
            "serve_request JsonHandler.handle",
            "--profile",
            "flow",
        ])
        .success()
        .stdout;
    assert!(text.contains("dispatch"), "{text}");
    // One anchor: the named implementation wins over the most called one.
    let out = flow(&s, "serve_request calls JsonHandler.handle encode");
    assert!(
        spine(&out).contains(&"app.py::JsonHandler.handle".to_string()),
        "{out:#}"
    );
}

#[test]
fn a_two_anchor_path_goes_through_dispatch() {
    let s = repo(&[("app.py", HANDLERS)]);
    let out = flow(&s, "serve_request encode");
    assert_eq!(
        spine(&out),
        [
            "app.py::serve_request",
            "app.py::JsonHandler.handle",
            "app.py::encode"
        ],
        "{out:#}"
    );
}

#[test]
fn a_concrete_base_method_is_what_runs() {
    // A base method with a body runs unless the query names an override.
    let code = "class Base:\n    def run(self):\n        return helper()\n\n\nclass Child(Base):\n    def run(self):\n        return 2\n\n\ndef helper():\n    return 1\n\n\ndef main(b: Base):\n    return b.run()\n";
    let s = repo(&[("app.py", code)]);
    let out = flow(&s, "main calls");
    assert_eq!(spine(&out)[1], "app.py::Base.run", "{out:#}");
}

// ---- honest failure ------------------------------------------------------------------

#[test]
fn no_path_names_the_hop_that_broke_it() {
    let code = "def serve_request(handler, x):\n    return handler.handle(x)\n\n\nclass A:\n    def handle(self, x):\n        return x\n\n\nclass B:\n    def handle(self, x):\n        return x\n";
    let s = repo(&[("app.py", code)]);
    let out = flow(&s, "serve_request A.handle");
    let failure = out["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["class"] == "failure")
        .unwrap_or_else(|| panic!("{out:#}"));
    let text = failure["statement"]
        .as_str()
        .or(failure["text"].as_str())
        .unwrap_or_default()
        .to_string()
        + &failure.to_string();
    assert!(
        text.contains("the hop that breaks it is the call to `handle`"),
        "{text}"
    );
    assert!(text.contains("app.py:2"), "{text}");
    assert!(text.contains("receiver"), "{text}");
    assert!(
        !entries(&out, "frontier", "app.py::serve_request").is_empty(),
        "{out:#}"
    );
}

// ---- receivers typed for calls (issue 11 §4) ------------------------------------------

#[test]
fn python_with_and_async_with_bind_their_value() {
    let code = "class Session:\n    def __enter__(self) -> \"Session\":\n        return self\n\n    def send(self):\n        return 1\n\n\ndef open_session() -> Session:\n    return Session()\n\n\ndef get():\n    with Session() as s:\n        return s.send()\n\n\nasync def aget():\n    async with open_session() as s:\n        return s.send()\n";
    let s = repo(&[("app.py", code)]);
    let dump = dump(&s);
    assert_edge(&dump, "app.py::get", "app.py::Session.send");
    assert_edge(&dump, "app.py::aget", "app.py::Session.send");
}

#[test]
fn python_return_annotations_type_the_value() {
    let code = "class BaseAdapter:\n    def send(self):\n        raise NotImplementedError\n\n\nclass HTTPAdapter(BaseAdapter):\n    def send(self):\n        return 1\n\n\nclass Session:\n    def get_adapter(self, url) -> BaseAdapter:\n        return HTTPAdapter()\n\n    def request(self, url):\n        adapter = self.get_adapter(url)\n        return adapter.send()\n";
    let s = repo(&[("app.py", code)]);
    assert_edge(
        &dump(&s),
        "app.py::Session.request",
        "app.py::BaseAdapter.send",
    );
    // The issue's own example: the path reaches the implementation through dispatch.
    let out = flow(&s, "Session.request HTTPAdapter.send");
    assert_eq!(
        spine(&out),
        ["app.py::Session.request", "app.py::HTTPAdapter.send"],
        "{out:#}"
    );
}

#[test]
fn python_self_attributes_are_typed_from_init() {
    let code = "class Store:\n    def put(self, x):\n        return x\n\n\nclass Route:\n    def matches(self):\n        return True\n\n\nclass App:\n    def __init__(self, store: Store, routes: list[Route] | None = None):\n        self.store = store\n        self.cache = Store()\n        self.routes = [] if routes is None else list(routes)\n\n    def save(self, x):\n        self.cache.put(x)\n        return self.store.put(x)\n\n    def find(self):\n        for route in self.routes:\n            if route.matches():\n                return route\n";
    let s = repo(&[("app.py", code)]);
    let dump = dump(&s);
    assert_edge(&dump, "app.py::App.save", "app.py::Store.put");
    // Loop items of a declared collection, through a conditional and `list(…)`.
    assert_edge(&dump, "app.py::App.find", "app.py::Route.matches");
}

#[test]
fn python_isinstance_narrows_a_receiver() {
    let code = "class Command:\n    def name(self):\n        return 1\n\n\nclass Group(Command):\n    def resolve(self):\n        return 2\n\n\ndef walk(command: Command):\n    if isinstance(command, Group):\n        return command.resolve()\n    return command.name()\n";
    let s = repo(&[("app.py", code)]);
    let dump = dump(&s);
    assert_edge(&dump, "app.py::walk", "app.py::Group.resolve");
}

#[test]
fn rust_let_constructors_and_builder_chains() {
    let code = "pub struct Server { port: u16 }\npub struct Builder { port: u16 }\n\nimpl Server {\n    pub fn new() -> Server { Server { port: 0 } }\n    pub fn builder() -> Builder { Builder { port: 0 } }\n    pub fn serve(&self) -> u16 { self.port }\n}\n\nimpl Builder {\n    pub fn port(mut self, port: u16) -> Self { self.port = port; self }\n    pub fn build(self) -> Server { Server { port: self.port } }\n}\n\npub fn plain() -> u16 {\n    let s = Server::new();\n    s.serve()\n}\n\npub fn chained() -> u16 {\n    let s = Server::builder().port(8080).build();\n    s.serve()\n}\n\npub fn inline() -> u16 {\n    Server::builder().port(1).build().serve()\n}\n";
    let s = repo(&[("src/lib.rs", code)]);
    let dump = dump(&s);
    assert_edge(&dump, "src/lib.rs::plain", "src/lib.rs::Server::serve");
    assert_edge(&dump, "src/lib.rs::chained", "src/lib.rs::Builder::port");
    assert_edge(&dump, "src/lib.rs::chained", "src/lib.rs::Builder::build");
    assert_edge(&dump, "src/lib.rs::chained", "src/lib.rs::Server::serve");
    assert_edge(&dump, "src/lib.rs::inline", "src/lib.rs::Server::serve");
}

#[test]
fn go_methods_on_values_and_pointers() {
    let code = "package app\n\ntype Server struct{ port int }\n\nfunc NewServer() *Server { return &Server{} }\n\nfunc (s *Server) Start() int { return s.port }\n\nfunc (s Server) Port() int { return s.port }\n\ntype Pool struct{}\n\nfunc (p *Pool) Get() any { return nil }\n\nfunc fromConstructor() int {\n\ts := NewServer()\n\treturn s.Start()\n}\n\nfunc fromValue() int {\n\tvar s Server\n\treturn s.Port()\n}\n\nfunc fromLiteral() int {\n\ts := &Server{}\n\treturn s.Start()\n}\n\nfunc fromAssertion(p *Pool) int {\n\ts := p.Get().(*Server)\n\treturn s.Start()\n}\n";
    let s = repo(&[("go.mod", "module example.com/app\n"), ("app.go", code)]);
    let dump = dump(&s);
    assert_edge(&dump, "app.go::fromConstructor", "app.go::Server.Start");
    assert_edge(&dump, "app.go::fromValue", "app.go::Server.Port");
    assert_edge(&dump, "app.go::fromLiteral", "app.go::Server.Start");
    assert_edge(&dump, "app.go::fromAssertion", "app.go::Server.Start");
}

#[test]
fn go_structs_implement_interfaces_structurally() {
    let code = "package app\n\ntype Router interface {\n\tRoute(path string) int\n}\n\ntype Tree struct{}\n\nfunc (t *Tree) Route(path string) int { return find(path) }\n\nfunc find(path string) int { return len(path) }\n\ntype Echo struct{ router Router }\n\nfunc (e *Echo) Serve(path string) int {\n\treturn e.router.Route(path)\n}\n";
    let s = repo(&[("go.mod", "module example.com/app\n"), ("app.go", code)]);
    let out = flow(&s, "Echo.Serve find");
    assert_eq!(
        spine(&out),
        ["app.go::Echo.Serve", "app.go::Tree.Route", "app.go::find"],
        "{out:#}"
    );
}

#[test]
fn typescript_fields_and_constructor_parameters() {
    let code = "export class Store {\n  save(x: number): number { return x; }\n}\n\nexport class Log {\n  write(x: number): number { return x; }\n}\n\nexport class Service {\n  private cache = new Store();\n  log: Log;\n\n  constructor(private store: Store, log: Log) {\n    this.log = log;\n  }\n\n  run(x: number): number {\n    this.cache.save(x);\n    this.log.write(x);\n    return this.store.save(x);\n  }\n}\n\nexport const makeStore = (): Store => new Store();\n\nexport function viaArrow(x: number): number {\n  const s = makeStore();\n  return s.save(x);\n}\n";
    let s = repo(&[("src/service.ts", code)]);
    let dump = dump(&s);
    assert_edge(
        &dump,
        "src/service.ts::Service.run",
        "src/service.ts::Store.save",
    );
    assert_edge(
        &dump,
        "src/service.ts::Service.run",
        "src/service.ts::Log.write",
    );
    // An arrow function's declared return type types its callers' values.
    assert_edge(
        &dump,
        "src/service.ts::viaArrow",
        "src/service.ts::Store.save",
    );
}

#[test]
fn overload_stubs_send_calls_to_the_implementation() {
    let code = "import typing as t\n\n\nclass Command:\n    @t.overload\n    def main(self, standalone: t.Literal[True] = True) -> t.NoReturn: ...\n\n    @t.overload\n    def main(self, standalone: bool = ...) -> t.Any: ...\n\n    def main(self, standalone=True):\n        return self.invoke()\n\n    def invoke(self):\n        return 1\n\n\ndef run_cli(cli: Command):\n    return cli.main()\n";
    let s = repo(&[("cli.py", code)]);
    let out = flow(&s, "run_cli Command.invoke");
    assert_eq!(
        spine(&out),
        [
            "cli.py::run_cli",
            "cli.py::Command.main",
            "cli.py::Command.invoke"
        ],
        "{out:#}"
    );
}

/// A name with overloads in one file and a plain definition in another is two choices,
/// one per implementation, never one per signature.
#[test]
fn overloads_are_one_choice_among_a_names_definitions() {
    let stubs = "import typing as t\n\n\n@t.overload\ndef convert(x: int) -> int: ...\n\n\n@t.overload\ndef convert(x: str) -> str: ...\n\n\ndef convert(x):\n    return x\n";
    let other = "def convert(value):\n    return str(value)\n";
    let s = repo(&[("core/convert.py", stubs), ("backend/convert.py", other)]);
    s.build_json();
    let run = s
        .context("convert")
        .profile("symbol")
        .frozen()
        .json()
        .run()
        .failure(7, "atlas-context-ambiguous");
    let error = run.error();
    let mut symbols: Vec<&str> = error
        .details()
        .choices
        .iter()
        .map(|c| c.symbol.as_str())
        .collect();
    symbols.sort_unstable();
    assert_eq!(
        symbols,
        ["backend/convert.py::convert", "core/convert.py::convert"]
    );
    // Each choice's argv answers with the implementation (line 12), not a stub.
    for choice in &error.details().choices {
        let out = s.replay(&choice.argv).success().context();
        assert_eq!(out.intent.anchors[0].symbol, choice.symbol);
    }
    let core = s
        .context("core/convert.py::convert")
        .profile("symbol")
        .frozen()
        .json()
        .run()
        .success()
        .json();
    let declaration = core["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["class"] == "declaration")
        .expect("a declaration");
    assert_eq!(declaration["lines"][0], 12, "{declaration:#}");
}

#[test]
fn an_in_repository_function_named_like_a_boundary_continues_the_spine() {
    // `send` names network I/O when it leaves the repository; here it is a wrapper, and
    // the behaviour goes on inside it (requests' `Session.request → Session.send`).
    let code = "import socket\n\n\nclass Session:\n    def request(self, url):\n        prep = self.prepare(url)\n        resp = self.send(prep)\n        return resp\n\n    def prepare(self, url):\n        return url\n\n    def send(self, prep):\n        return self.transmit(prep)\n\n    def transmit(self, prep):\n        conn = socket.create_connection((prep, 80))\n        return conn.send(b\"GET\")\n";
    let s = repo(&[("client.py", code)]);
    let out = flow(&s, "Session.request calls");
    assert_eq!(
        spine(&out),
        [
            "client.py::Session.request",
            "client.py::Session.send",
            "client.py::Session.transmit"
        ],
        "{out:#}"
    );
    // The boundary itself is the external call, required evidence.
    assert!(
        out["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["class"] == "runtime-boundary"),
        "{out:#}"
    );
}

#[test]
fn a_one_anchor_spine_stops_before_it_outgrows_the_page() {
    // Ten chained functions of 45 lines each: the steps are required evidence, so the
    // chain ends while the page still holds them (and grows with --max-bytes).
    let mut code = String::new();
    for i in 0..10 {
        code.push_str(&format!("\n\ndef step{i}(x):\n"));
        for line in 0..42 {
            code.push_str(&format!(
                "    x = x + {line}  # arithmetic that takes a line\n"
            ));
        }
        if i < 9 {
            code.push_str(&format!("    return step{}(x)\n", i + 1));
        } else {
            code.push_str("    return x\n");
        }
    }
    let s = repo(&[("chain.py", &code)]);
    let out = flow(&s, "step0 calls");
    let short = spine(&out).len();
    assert!((2..10).contains(&short), "{short} steps: {out:#}");
    assert!(out["receipt"]["serialized_bytes"].as_u64().unwrap() <= 32_000);
    let wide = s
        .atlas(&[
            "context",
            "step0 calls",
            "--profile",
            "flow",
            "--max-bytes",
            "96000",
            "--format",
            "json",
        ])
        .success()
        .json();
    assert!(spine(&wide).len() > short, "{wide:#}");
}
