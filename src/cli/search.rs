//! `atlas search`: hybrid search over the committed generation.

use std::sync::Arc;

use crate::build::session::{self, Freshness};
use crate::build::store::Store;
use crate::error::AtlasError;
use crate::query::search::{
    self, GroupBy, IndexCompanion, ResponseProfile, SearchIndex, SearchOutput,
};

use super::call::{Answer, Call};
use super::output::{Format, print_stdout};

#[derive(clap::Args, Debug)]
pub struct SearchArgs {
    /// Free text, identifiers or both.
    pub text: String,
    /// Hits to return (1..=1000).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub top_k: u16,
    /// Response profile (default full; ATLAS_CONTEXT_OPTIMIZATION=1 makes compact the default).
    #[arg(long, value_enum)]
    pub profile: Option<ResponseProfile>,
    /// Response ceiling in tokens (o200k), of the JSON or of the text printed; whole
    /// results are cut from the tail to fit, and the cut is said.
    #[arg(long, default_value_t = 4000, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_tokens: u32,
    /// Read the committed generation as it is: never build the graph or the search index.
    #[arg(long)]
    pub frozen: bool,
    /// Arrange the hits by file, in ranking order, each file with its evidence: how the
    /// file-then-function allocation spent the slots.
    #[arg(long, value_enum)]
    pub group_by: Option<GroupBy>,
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// The hits for `args`, over a session opened (and refreshed unless frozen) for `call`.
fn search(call: &Call, args: &SearchArgs) -> Result<SearchOutput, AtlasError> {
    // Nothing to search is a wrong call, not an answer with no hits.
    if args.text.trim().is_empty() {
        return Err(AtlasError::InvalidInput {
            what: "search text",
            reason: "it is empty: give words, a name or a question".into(),
        });
    }
    // Nor is text with no word in it (`?!.`): the lexical arms have nothing to match,
    // and the vector arm's nearest neighbours of punctuation are arbitrary.
    if search::text::identifier_tokens(&args.text)
        .trim()
        .is_empty()
    {
        return Err(AtlasError::InvalidInput {
            what: "search text",
            reason: "it holds no word: give words, a name or a question".into(),
        });
    }
    crate::query::check_query_length(&args.text)?;
    let config = &call.config;
    if config.search.wants_vectors() {
        search::embed::warm_up(&config.embed);
    }
    let location = call.location()?;
    let freshness = Freshness {
        frozen: args.frozen,
        no_build: false,
    };
    let companion = IndexCompanion {
        embed: config.embed.clone(),
    };
    let session::Session {
        fingerprint,
        graph,
        root,
        stale,
        ..
    } = session::open_session(&location, freshness, Some(Arc::new(companion)), config)?;
    if let Some(reason) = &stale {
        eprintln!("warning[atlas-search-stale-graph]: {reason}");
    }
    let store = Store::new(&location.graph_dir);
    let embedder = search::embed::Embedder::load(&config.embed)?;
    let profile = ResponseProfile::resolve(args.profile, &config.search);
    let output = SearchIndex::query(
        &store,
        &fingerprint,
        &graph,
        &root,
        &embedder,
        args.frozen,
        &args.text,
        usize::from(args.top_k),
        profile == ResponseProfile::Compact,
        config,
    )?;
    if !output.set_aside.is_empty() {
        let headings: Vec<String> = output
            .set_aside
            .iter()
            .map(|s| format!("`{}` ({} lines)", s.heading, s.lines))
            .collect();
        eprintln!(
            "note[atlas-search-environment]: sections on the environment were not searched: {}",
            headings.join(", ")
        );
    }
    if let Some(searched) = &output.searched {
        eprintln!("note[atlas-search-glossary]: a Portuguese question, searched as `{searched}`");
    }
    // Exactly one cost line per search (R-J-9): zero when the judge did not run.
    eprintln!(
        "{}",
        search::relevance::Judgement::cost_line(output.relevance.as_ref())
    );
    Ok(output)
}

/// The JSON document `--format json` prints (without its final newline), and its hits.
fn respond(
    call: &Call,
    args: &SearchArgs,
    output: SearchOutput,
) -> Result<(String, usize), AtlasError> {
    let profile = ResponseProfile::resolve(args.profile, &call.config.search);
    // Compact JSON: the ceiling is measured on exactly what is printed.
    let response = search::respond(
        output,
        profile,
        args.max_tokens as usize,
        call.config.tokenizer.as_deref(),
        args.group_by,
    );
    let items = response.hit_count();
    let text = serde_json::to_string(&response).map_err(|e| AtlasError::Internal {
        what: "search response",
        reason: e.to_string(),
    })?;
    Ok((text, items))
}

/// The JSON document `--format json` prints (without its final newline).
pub fn json(call: &Call, args: &SearchArgs) -> Result<String, AtlasError> {
    let output = search(call, args)?;
    Ok(respond(call, args, output)?.0)
}

pub fn run(call: &Call, args: &SearchArgs) -> Result<(), AtlasError> {
    let output = search(call, args)?;
    let profile = ResponseProfile::resolve(args.profile, &call.config.search);
    let (text, items) = match args.format {
        Format::Json => {
            let (text, items) = respond(call, args, output)?;
            (text + "\n", items)
        }
        Format::Text => text_within(
            output,
            args.max_tokens as usize,
            call.config.tokenizer.as_deref(),
            args.group_by == Some(GroupBy::File),
        ),
    };
    print_stdout(&text)?;
    call.observe(Answer {
        tool: "search",
        format: args.format,
        profile: Some(profile.as_str()),
        outcome: "ok",
        output: &text,
        items,
    });
    Ok(())
}

/// The text answer under `max_tokens` (counted as the JSON answer is): hits cut from the
/// tail until it fits, with a last line that says how many; an answer with no hits says so.
fn text_within(
    mut output: SearchOutput,
    max_tokens: usize,
    tokenizer: Option<&std::path::Path>,
    by_file: bool,
) -> (String, usize) {
    if output.hits.is_empty() {
        return ("no hits\n".to_string(), 0);
    }
    let draw = |output: &SearchOutput| {
        if by_file {
            render_by_file(output)
        } else {
            render(output)
        }
    };
    let mut text = draw(&output);
    // No text has more tokens than bytes: within the ceiling in bytes, nothing is counted.
    if text.len() <= max_tokens {
        let hits = output.hits.len();
        return (text, hits);
    }
    let counter = crate::query::tokens::counter(tokenizer);
    let ceiling = counter.ceiling(max_tokens);
    let mut cut = 0;
    while counter.count(&text) > ceiling && !output.hits.is_empty() {
        output.hits.pop();
        cut += 1;
        text = draw(&output);
    }
    if cut > 0 {
        text.push_str(&format!(
            "… {cut} more hits cut to fit --max-tokens {max_tokens}\n"
        ));
    }
    let hits = output.hits.len();
    (text, hits)
}

fn render(output: &SearchOutput) -> String {
    let mut text = String::new();
    for (rank, hit) in output.hits.iter().enumerate() {
        text.push_str(&format!(
            "{:>3}. {}::{}\n",
            rank + 1,
            hit.path,
            hit_line(hit)
        ));
    }
    text
}

/// A hit after its path: `symbol (kind) Lstart-end · score · arms`.
fn hit_line(hit: &search::Hit) -> String {
    format!(
        "{} ({}) L{}-{} · {:.4} · {}",
        hit.symbol,
        hit.kind,
        hit.lines[0],
        hit.lines[1],
        hit.score,
        hit.match_arms.join("+")
    )
}

/// `--group-by file`: each file, its evidence and its share of the slots, then its hits
/// with their rank in the whole answer.
fn render_by_file(output: &SearchOutput) -> String {
    let groups = search::group_by_file(output.hits.iter().map(|h| h.path.as_str()), &output.files);
    let mut text = String::new();
    for group in groups {
        let evidence = group
            .evidence
            .map_or(String::new(), |e| format!("evidence {e:.4}, "));
        text.push_str(&format!(
            "{} ({evidence}{} of {} hits)\n",
            group.path,
            group.hits.len(),
            output.hits.len()
        ));
        for &rank in &group.hits {
            text.push_str(&format!(
                "  {:>3}. {}\n",
                rank + 1,
                hit_line(&output.hits[rank])
            ));
        }
    }
    text
}
