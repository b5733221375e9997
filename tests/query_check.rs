//! In-process checks of the two query stages, expect-test style: a multi-file fixture is
//! written to a temp dir and built in process, then `atlas context` (through
//! `query::context::run`) or hybrid search (through `SearchIndex::query`) runs in the same
//! process with a `Config` passed in (no environment variable, no spawned binary), and a
//! compact, deterministic rendering of the answer (never a timing) is compared with an
//! expectation written in the test. On a mismatch the actual rendering is printed in full,
//! ready to paste over the expectation once it has been checked by hand.
//!
//! Fixture syntax: `//- /path/in/repo` starts a file; the lines up to the next header are
//! its text. Fixture and expectation are de-indented (their common indentation removed).

#[path = "common/fixture.rs"]
mod fixture;

use fixture::trim_indent;

use std::path::PathBuf;
use std::sync::Arc;

use atlas::build::pipeline::{self, BuildOptions};
use atlas::build::session::Freshness;
use atlas::build::store::{self, Location, Store};
use atlas::config::{Arms, Config, Placement, SearchConfig};
use atlas::graph::reader::Graph;
use atlas::query::context::{
    self, ContextOutput, ContextRequest, ContextResult, DiagnosticCode, OmissionReason,
};
use atlas::query::profile::{EvidenceClass, ProfileName};
use atlas::query::search::embed::Embedder;
use atlas::query::search::{IndexCompanion, SearchIndex, SearchOutput};

// ── Harness ──────────────────────────────────────────────────────────────────────────

/// The files of a fixture: `(path, text)` in order of appearance.
fn parse_fixture(fixture: &str) -> Vec<(String, String)> {
    fixture::split_files(fixture)
        .into_iter()
        .map(|(path, lines)| {
            let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
            (path, text)
        })
        .collect()
}

/// A fixture written to a temp dir and built in process, search index included.
struct Repo {
    temp: tempfile::TempDir,
    root: PathBuf,
    graph: PathBuf,
}

impl Repo {
    fn new(fixture: &str) -> Repo {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().join("repo");
        let graph = temp.path().join("graph");
        for (path, text) in parse_fixture(fixture) {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let config = Config::default();
        let mut options = BuildOptions::configured(&root, &graph, &config);
        // The search index is published with the generation, as `atlas build` does, so
        // that every read below can be `--frozen`.
        options.companion = Some(Arc::new(IndexCompanion {
            embed: config.embed.clone(),
        }));
        pipeline::build(&options).unwrap_or_else(|e| panic!("build failed: {e}"));
        Repo { temp, root, graph }
    }

    /// Where a request's `--graph` and `--code` point, resolved from the temp dir as the
    /// CLI resolves them from its working directory.
    fn location_of(&self, request: &ContextRequest) -> Location {
        let flag = |value: &Option<String>| PathBuf::from(value.as_deref().expect("named"));
        store::locate(
            Some(&flag(&request.graph_arg)),
            Some(&flag(&request.code_arg)),
            self.temp.path(),
            &Placement::default(),
        )
    }

    /// A frozen request with `--code repo --graph graph` (relative to the temp dir, so
    /// that byte counts do not depend on where the temp dir is), whose printed argv
    /// (omissions, ambiguity candidates) replays on its own.
    fn request(&self, query: &str, profile: ProfileName) -> ContextRequest {
        ContextRequest {
            code_arg: Some("repo".into()),
            graph_arg: Some("graph".into()),
            freshness: Freshness {
                frozen: true,
                no_build: false,
            },
            ..ContextRequest::new(query, profile)
        }
    }

    fn context(&self, request: &ContextRequest, config: &Config) -> ContextResult {
        let location = self.location_of(request);
        assert_eq!(
            (&location.code_root, &location.graph_dir),
            (&self.root, &self.graph)
        );
        context::run(&location, request, config)
            .unwrap_or_else(|e| panic!("context `{}` failed: {e}", request.query))
    }

    #[track_caller]
    fn check_context(&self, request: &ContextRequest, expect: &str) -> ContextResult {
        let result = self.context(request, &Config::default());
        assert_rendering(&render_context(&result.output), expect);
        result
    }

    fn search(&self, query: &str, config: &Config, top_k: usize) -> SearchOutput {
        let store = Store::new(&self.graph);
        let fingerprint = store.current().unwrap().expect("a committed generation");
        let graph = Graph::open(&store.graph_path(&fingerprint)).unwrap();
        let embedder = Embedder::load(&config.embed).unwrap();
        SearchIndex::query(
            &store,
            &fingerprint,
            &graph,
            &self.root,
            &embedder,
            true,
            query,
            top_k,
            false,
            config,
        )
        .unwrap_or_else(|e| panic!("search `{query}` failed: {e}"))
    }

    #[track_caller]
    fn check_search(&self, query: &str, config: &Config, expect: &str) -> SearchOutput {
        let output = self.search(query, config, TOP_K);
        assert_rendering(&render_search(&output), expect);
        output
    }
}

/// Hits compared by the search checks.
const TOP_K: usize = 5;

#[track_caller]
fn assert_rendering(actual: &str, expect: &str) {
    let expect = trim_indent(expect);
    if actual.trim_end() != expect.trim_end() {
        panic!(
            "rendering differs from the expectation\n--- expected\n{expect}\n--- actual (full)\n{actual}\n---"
        );
    }
}

/// The answer in a few stable lines, never a timing, score, id or fingerprint:
///
/// ```text
/// anchor <symbol> (<reason>[: <arms>])
/// alternative-start <symbol>            (flow: where an alternative chain starts)
/// spine <a> > <b> > <c>                 (the spine steps, in order)
/// <class> <symbol>[ [<projection>]]     (every other evidence item, in order)
/// omitted <class> <reason> <count> (top <symbol>)
/// diagnostic <code>[: <other candidates>]
/// ```
fn render_context(output: &ContextOutput) -> String {
    let mut lines = Vec::new();
    for anchor in &output.intent.anchors {
        let mut reason = anchor.anchor_reason.to_string();
        if !anchor.arms.is_empty() {
            reason = format!("{reason}: {}", anchor.arms.join("+"));
        }
        lines.push(format!("anchor {} ({reason})", anchor.symbol));
    }
    if let Some(alternative) = &output.intent.alternative {
        lines.push(format!("alternative-start {}", alternative.symbol));
    }
    if !output.spine.is_empty() {
        let steps: Vec<&str> = output.spine.iter().map(|s| s.symbol.as_str()).collect();
        lines.push(format!("spine {}", steps.join(" > ")));
    }
    for item in output
        .evidence
        .iter()
        .filter(|e| e.class != EvidenceClass::Spine)
    {
        let what = match (&item.symbol, &item.statement) {
            (Some(symbol), _) => symbol.clone(),
            (None, Some(statement)) => format!("statement:{}", statement.code),
            (None, None) => format!("({})", item.class),
        };
        let projection = match item.projection {
            "full" | "graph" => String::new(),
            other => format!(" [{other}]"),
        };
        lines.push(format!("{} {what}{projection}", item.class));
    }
    for omission in &output.omissions {
        let top = omission.top.symbol.as_deref().unwrap_or(&omission.top.id);
        lines.push(format!(
            "omitted {} {} {} (top {top})",
            omission.class, omission.reason, omission.count
        ));
    }
    for diagnostic in &output.diagnostics {
        let others: Vec<&str> = diagnostic
            .candidates
            .iter()
            .map(|c| c.symbol.as_str())
            .collect();
        if others.is_empty() {
            lines.push(format!("diagnostic {}", diagnostic.code));
        } else {
            lines.push(format!(
                "diagnostic {}: {}",
                diagnostic.code,
                others.join(", ")
            ));
        }
    }
    lines.join("\n")
}

/// One line per hit, best first: `path::symbol arm+arm` (the arms that found it).
fn render_search(output: &SearchOutput) -> String {
    output
        .hits
        .iter()
        .map(|hit| format!("{}::{} {}", hit.path, hit.symbol, hit.match_arms.join("+")))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Builds `fixture`, asks `query` under `profile` (frozen, default config) and compares
/// the rendering with `expect`.
#[track_caller]
fn check_context(fixture: &str, query: &str, profile: ProfileName, expect: &str) -> ContextResult {
    let repo = Repo::new(fixture);
    let request = repo.request(query, profile);
    repo.check_context(&request, expect)
}

/// Builds `fixture`, searches `query` with `config` and compares the top hits with
/// `expect`.
#[track_caller]
fn check_search(fixture: &str, query: &str, config: &Config, expect: &str) -> SearchOutput {
    Repo::new(fixture).check_search(query, config, expect)
}

fn config_with(arms: Arms, rerank: bool) -> Config {
    let mut search = SearchConfig::with_arms(arms);
    search.rerank = rerank;
    Config {
        search,
        ..Config::default()
    }
}

const BM25_ONLY: Arms = Arms {
    bm25: true,
    vector: false,
    graph: false,
    propagate: false,
};

// ── Fixtures ─────────────────────────────────────────────────────────────────────────

const BILLING: &str = r#"
    //- /billing/__init__.py
    """Billing: invoices, tax and storage."""
    //- /billing/invoice.py
    from billing.tax import add_tax
    from billing.store import save_invoice


    class Invoice:
        """An invoice of order lines."""

        def __init__(self, lines):
            self.lines = lines

        def subtotal(self):
            return sum(line.amount for line in self.lines)

        def finalize(self):
            """Adds the tax to the subtotal and stores the invoice."""
            total = add_tax(self.subtotal())
            save_invoice(self, total)
            return total


    def issue_invoice(lines):
        invoice = Invoice(lines)
        return invoice.finalize()
    //- /billing/tax.py
    RATE = 0.2


    def add_tax(amount):
        """The amount with value added tax, rounded to cents."""
        return round_cents(amount * (1 + RATE))


    def round_cents(value):
        return round(value, 2)
    //- /billing/store.py
    def save_invoice(invoice, total):
        """Persists an invoice row."""
        return write_row("invoices", total)


    def write_row(table, value):
        return (table, value)
    //- /billing/cli.py
    from billing.invoice import issue_invoice


    def main(argv):
        return issue_invoice(argv[1:])
    //- /tests/test_tax.py
    from billing.tax import round_cents


    def test_round_cents():
        assert round_cents(1.005) == 1.0
"#;

/// A second `finalize`, for ambiguity.
const RECEIPT: &str = r#"
    //- /billing/receipt.py
    class Receipt:
        """A printed receipt of an invoice."""

        def __init__(self, invoice):
            self.invoice = invoice

        def finalize(self):
            return print_receipt(self.invoice)


    def print_receipt(invoice):
        return str(invoice)
"#;

/// A module written in Portuguese.
const NOTA: &str = r#"
    //- /billing/nota.py
    def emitir_nota(fatura):
        """Emite a nota fiscal de uma fatura."""
        return gravar_nota(fatura)


    def gravar_nota(fatura):
        """Grava a nota no arquivo."""
        return ("notas", fatura)
"#;

// ── Context ──────────────────────────────────────────────────────────────────────

#[test]
fn a_flow_question_with_one_code_name_follows_the_call_path() {
    // The total is `add_tax(self.subtotal())`, assigned and returned: the flow goes
    // through `add_tax` (and on to `round_cents`, whose result `add_tax` returns), not
    // through `subtotal` (an argument) nor `save_invoice` (a statement).
    check_context(
        BILLING,
        "how does issue_invoice compute the total with tax",
        ProfileName::Flow,
        r#"
        anchor billing/invoice.py::issue_invoice (name)
        spine billing/invoice.py::issue_invoice > billing/invoice.py::Invoice.finalize > billing/tax.py::add_tax > billing/tax.py::round_cents
        alternative billing/invoice.py::Invoice
        alternative billing/invoice.py::Invoice.subtotal
        callee billing/store.py::save_invoice
        caller billing/cli.py::main
        search-hit billing/store.py::save_invoice
        search-hit billing/cli.py::main
        search-hit billing/invoice.py::Invoice.__init__
        search-hit tests/test_tax.py::test_round_cents [policy-skeleton]
        search-hit billing/tax.py::RATE
        omitted search-hit policy 1 (top tests/test_tax.py::test_round_cents)
        "#,
    );
}

#[test]
fn the_symbol_profile_of_a_method_shows_its_declaration_callers_and_callees() {
    // Direct callees first, then the ones reached through them; the caller of the caller
    // (`main`) scores under the profile's threshold.
    check_context(
        BILLING,
        "Invoice.finalize",
        ProfileName::Symbol,
        r#"
        anchor billing/invoice.py::Invoice.finalize (name)
        declaration billing/invoice.py::Invoice.finalize
        caller billing/invoice.py::issue_invoice
        callee billing/tax.py::add_tax
        callee billing/store.py::save_invoice
        callee billing/invoice.py::Invoice.subtotal
        callee billing/tax.py::round_cents
        callee billing/store.py::write_row
        omitted caller below-relevance 1 (top billing/cli.py::main)
        "#,
    );
}

#[test]
fn an_ambiguous_name_in_a_question_is_a_diagnostic_not_an_error() {
    // Two methods are named `finalize`; the question's other words (store, invoice) rank
    // `Invoice.finalize` first, and `Receipt.finalize` is listed, with an argv.
    let repo = Repo::new(&format!("{BILLING}{RECEIPT}"));
    let request = repo.request(
        "why does `finalize` store the invoice twice",
        ProfileName::Symbol,
    );
    let result = repo.check_context(
        &request,
        r#"
        anchor billing/invoice.py::Invoice.finalize (ranked)
        declaration billing/invoice.py::Invoice.finalize
        caller billing/invoice.py::issue_invoice
        callee billing/tax.py::add_tax
        callee billing/store.py::save_invoice
        callee billing/invoice.py::Invoice.subtotal
        callee billing/tax.py::round_cents
        callee billing/store.py::write_row
        search-hit billing/receipt.py::Receipt.finalize
        omitted caller below-relevance 1 (top billing/cli.py::main)
        omitted search-hit item-cap 10 (top billing/store.py::save_invoice)
        diagnostic atlas-context-ambiguous: billing/receipt.py::Receipt.finalize
        "#,
    );
    // The candidate's argv asks the same question naming it alone.
    let diagnostic = &result.output.diagnostics[0];
    assert_eq!(diagnostic.code, DiagnosticCode::Ambiguous);
    let replay = ContextRequest::from_argv(&diagnostic.candidates[0].argv).unwrap();
    let again = repo.context(&replay, &Config::default());
    let anchors: Vec<(&str, &str)> = again
        .output
        .intent
        .anchors
        .iter()
        .map(|a| (a.symbol.as_str(), a.anchor_reason))
        .collect();
    assert_eq!(
        anchors,
        [("billing/receipt.py::Receipt.finalize", "name")],
        "{}",
        render_context(&again.output)
    );
}

#[test]
fn a_portuguese_question_is_anchored_by_search_on_its_words() {
    // No word is a name (`como`, `a`, `é` are stop words; `nota`, `fiscal`, `emitida`
    // name no symbol): search finds the function whose docstring says it.
    check_context(
        &format!("{BILLING}{NOTA}"),
        "como a nota fiscal é emitida?",
        ProfileName::Flow,
        r#"
        anchor billing/nota.py::emitir_nota (search: bm25+vector)
        spine billing/nota.py::emitir_nota > billing/nota.py::gravar_nota
        "#,
    );
}

#[test]
fn a_byte_ceiling_omits_evidence_whose_argv_fetches_it_in_process() {
    let repo = Repo::new(BILLING);
    let request = ContextRequest {
        max_bytes: Some(BYTE_CEILING),
        ..repo.request("Invoice.finalize", ProfileName::Symbol)
    };
    let first = repo.check_context(
        &request,
        r#"
        anchor billing/invoice.py::Invoice.finalize (name)
        declaration billing/invoice.py::Invoice.finalize
        caller billing/invoice.py::issue_invoice
        omitted callee byte-ceiling 5 (top billing/tax.py::add_tax)
        omitted caller below-relevance 1 (top billing/cli.py::main)
        "#,
    );
    assert!(first.json.len() <= BYTE_CEILING, "{}", first.json.len());
    let omission = first
        .output
        .omissions
        .iter()
        .find(|o| o.reason == OmissionReason::ByteCeiling)
        .unwrap();
    // The printed argv parses back into the same request, resumed after the cursor.
    let replay = ContextRequest::from_argv(&omission.argv).unwrap();
    assert_eq!(
        (
            replay.query.as_str(),
            replay.profile,
            replay.max_bytes,
            replay.freshness.frozen
        ),
        (
            "Invoice.finalize",
            ProfileName::Symbol,
            Some(BYTE_CEILING),
            true
        )
    );
    assert_eq!(
        replay.expect_graph.as_deref(),
        Some(first.output.graph.fingerprint.as_str())
    );
    let next = repo.context(&replay, &Config::default());
    let page = render_context(&next.output);
    assert!(next.json.len() <= BYTE_CEILING, "{page}");
    // The omitted group's top item comes back, and nothing the first page showed does.
    assert_eq!(
        next.output.evidence.first().map(|e| &e.id),
        Some(&omission.top.id),
        "{page}"
    );
    for shown in &first.output.evidence {
        assert!(
            next.output.evidence.iter().all(|e| e.id != shown.id),
            "{} again:\n{page}",
            shown.id
        );
    }
}

/// Fits the declaration and its caller of `Invoice.finalize` in full, no callee: the
/// first page is 3.4 KB and the smallest callee (a skeleton) would make it 4 KB.
const BYTE_CEILING: usize = 3900;

// ── Search ───────────────────────────────────────────────────────────────────────────

#[test]
fn search_arms_toggle_in_process_by_config() {
    // One build, two configurations, no environment: all three arms find `write_row`
    // (the graph arm because the query names it), and the BM25-only ranking differs.
    let repo = Repo::new(BILLING);
    let query = "where is write_row called when saving an invoice";
    repo.check_search(
        query,
        &Config::default(),
        r#"
        billing/store.py::write_row bm25+vector+graph+propagate+file
        billing/store.py::save_invoice bm25+vector+propagate+file
        billing/invoice.py::issue_invoice bm25+vector+propagate+file
        billing/invoice.py::Invoice.finalize bm25+vector+propagate+file
        billing/invoice.py::Invoice.__init__ bm25+vector+propagate+file
        "#,
    );
    repo.check_search(
        query,
        &config_with(BM25_ONLY, true),
        r#"
        billing/store.py::write_row bm25+file
        billing/store.py::save_invoice bm25+file
        billing/invoice.py::Invoice.finalize bm25+file
        billing/invoice.py::issue_invoice bm25+file
        billing/invoice.py::Invoice.__init__ bm25+file
        "#,
    );
}

#[test]
fn a_code_shaped_name_ranks_its_definition_first() {
    // `invoice` is in many names; the definition of `save_invoice` still comes first,
    // found by every arm.
    check_search(
        BILLING,
        "save_invoice",
        &Config::default(),
        r#"
        billing/store.py::save_invoice bm25+vector+graph+propagate+file
        billing/invoice.py::issue_invoice bm25+vector+propagate+file
        billing/invoice.py::Invoice.finalize bm25+vector+propagate+file
        billing/invoice.py::Invoice bm25+vector+propagate+file
        billing/invoice.py::Invoice.subtotal bm25+vector+propagate+file
        "#,
    );
    // A qualified method name, with BM25 alone: the definition before `issue_invoice`,
    // whose body spells the call `invoice.finalize()`; then the rest of its file (split
    // fusion: invoice.py is the first file RRF shows) before store.py.
    check_search(
        BILLING,
        "Invoice.finalize",
        &config_with(BM25_ONLY, true),
        r#"
        billing/invoice.py::Invoice.finalize bm25+file
        billing/invoice.py::issue_invoice bm25+file
        billing/invoice.py::Invoice bm25+file
        billing/invoice.py::Invoice.__init__ bm25+file
        billing/invoice.py::Invoice.subtotal bm25+file
        "#,
    );
}

#[test]
fn rerank_toggles_in_process_by_config() {
    let repo = Repo::new(BILLING);
    // A one-word query: with rerank, the exact name (`Invoice`) first, then names that
    // contain the word in BM25 order, then the fused order; without, RRF order.
    repo.check_search(
        "invoice",
        &config_with(Arms::ALL, true),
        r#"
        billing/invoice.py::Invoice bm25+vector+file
        billing/store.py::save_invoice bm25+vector+file
        billing/invoice.py::issue_invoice bm25+vector+file
        billing/invoice.py::Invoice.finalize bm25+vector+file
        billing/invoice.py::Invoice.__init__ bm25+vector+file
        "#,
    );
    repo.check_search(
        "invoice",
        &config_with(Arms::ALL, false),
        r#"
        billing/invoice.py::Invoice bm25+vector
        billing/invoice.py::issue_invoice bm25+vector
        billing/store.py::save_invoice bm25+vector
        billing/invoice.py::Invoice.finalize bm25+vector
        billing/cli.py::main bm25+vector
        "#,
    );
    // With rerank a test weighs less than code: `test_round_cents` (matched by its
    // path, tests/test_tax.py) drops out of the top five.
    repo.check_search(
        "tax",
        &config_with(Arms::ALL, true),
        r#"
        billing/tax.py::add_tax bm25+vector+file
        billing/tax.py::RATE bm25+file
        billing/tax.py::round_cents bm25+file
        billing/invoice.py::Invoice.finalize bm25+file
        billing/invoice.py::Invoice bm25+file
        "#,
    );
    let plain = repo.check_search(
        "tax",
        &config_with(Arms::ALL, false),
        r#"
        billing/tax.py::add_tax bm25+vector
        billing/invoice.py::Invoice.finalize bm25
        billing/tax.py::RATE bm25
        billing/tax.py::round_cents bm25
        tests/test_tax.py::test_round_cents bm25
        "#,
    );
    assert!(!plain.reranked);
}

// ── The harness itself ───────────────────────────────────────────────────────────────

#[test]
fn a_fixture_is_split_at_its_headers_and_de_indented() {
    let files = parse_fixture(
        r#"
        //- /a.py
        def f():
            return 1
        //- /pkg/b.py
        x = 1
        "#,
    );
    assert_eq!(
        files,
        [
            ("a.py".to_string(), "def f():\n    return 1\n".to_string()),
            ("pkg/b.py".to_string(), "x = 1\n".to_string()),
        ]
    );
}

#[test]
#[should_panic(expected = "--- actual (full)\nanchor a")]
fn a_mismatch_prints_the_actual_rendering_in_full() {
    assert_rendering("anchor a\nspine a > b", "anchor a");
}
