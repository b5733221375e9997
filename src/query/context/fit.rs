//! A page fitted under its byte ceiling (R-PROJ-1, R-PROJ-3): optional evidence is
//! dropped from the end until the whole answer fits; required evidence that cannot fit is
//! a typed error naming the ceiling that holds it.

use super::assemble::{self, Assembly};
use super::retrieve::Candidate;
use super::*;

/// Bytes a ceiling raised for the query's echoes adds beyond them: the receipt's own
/// digits, which the raised ceiling may lengthen.
pub(super) const ECHO_SLACK: usize = 16;

/// A fitted page: its projection, each evidence item's rendered length, its omissions.
pub(super) struct Page<'c> {
    pub(super) projection: project::Projection<'c>,
    pub(super) item_lengths: Vec<usize>,
    pub(super) omissions: Vec<Omission>,
}

pub(super) enum Fit<'c> {
    Page(Box<Page<'c>>),
    /// Required evidence over the ceiling: the first required item the page cannot hold
    /// with those before it (empty when the envelope alone is over).
    Over(String),
}

/// Widest timings: fitting decisions must not depend on clock digits.
fn widest() -> TimingsOut {
    TimingsOut {
        freshness: 99_999.999,
        retrieval: 99_999.999,
        projection: 99_999.999,
        total: 99_999.999,
    }
}

/// Fits `candidates` (in their total order) under `assembly.limits.max_bytes`.
pub(super) fn fit_page<'c>(
    input: &ProjectInput,
    assembly: &Assembly,
    candidates: &'c [Candidate],
) -> Result<Fit<'c>> {
    let limits = assembly.limits;
    // The envelope: everything but evidence, with the omission groups of earlier pages
    // (`after-cursor`), which are known before anything is projected.
    let start = project::cursor_start(candidates, assembly.request.after.as_deref())?;
    let empty = project::project(input, &candidates[..start], 0)?;
    let envelope =
        json_of(&assembly.output(&empty, assembly.omissions(&empty), widest(), 1_000_000))?.len();
    // Omission groups and the evidence array's own punctuation are not known yet.
    let reserve = envelope + 300;
    let budget = limits.max_bytes.saturating_sub(reserve);
    let mut projection = project::project(input, candidates, budget)?;
    // Each item is rendered once; each try measures the rest (`assemble::fitted_length`).
    let mut item_lengths = projection
        .evidence
        .iter()
        .map(|item| json_of(item).map(|json| json.len()))
        .collect::<Result<Vec<usize>>>()?;
    // Settling measures the page without its evidence; continuations depend on it (one
    // that could not fit at the top of the next page asks for a larger ceiling).
    let mut settles = 0;
    let mut omissions = assembly.omissions(&projection);
    loop {
        let frame = assembly.frame(&projection, omissions.clone(), widest(), 1_000_000);
        let frame = json_of(&frame)?.len();
        let size = assemble::fitted_length(frame, &item_lengths);
        if size <= limits.max_bytes {
            if settles < 3 && projection.settle_frame(frame) {
                settles += 1;
                // Measured again only when the settled page's groups differ.
                let settled = assembly.omissions(&projection);
                if settled != omissions {
                    omissions = settled;
                    continue;
                }
            }
            break;
        }
        if let Some(index) = projection.drop_last_optional() {
            item_lengths.remove(index);
            omissions = assembly.omissions(&projection);
        } else {
            let over = (0..item_lengths.len()).find(|&end| {
                assemble::fitted_length(frame, &item_lengths[..=end]) > limits.max_bytes
            });
            let id = over.map_or_else(String::new, |index| projection.evidence[index].id.clone());
            return Ok(Fit::Over(id));
        }
    }
    Ok(Fit::Page(Box::new(Page {
        projection,
        item_lengths,
        omissions,
    })))
}

/// The page with every optional candidate left out, and its items' rendered lengths.
fn minimal_page<'c>(
    input: &ProjectInput,
    candidates: &'c [Candidate],
) -> Result<(project::Projection<'c>, Vec<usize>)> {
    let mut minimal = project::project(input, candidates, usize::MAX / 4)?;
    while minimal.drop_last_optional().is_some() {}
    let lengths = minimal
        .evidence
        .iter()
        .map(|item| json_of(item).map(|json| json.len()))
        .collect::<Result<Vec<usize>>>()?;
    Ok((minimal, lengths))
}

/// `atlas-context-required-budget` for the item `id`, with the ceiling that holds the
/// answer with every optional candidate left out. That ceiling is asked for with
/// `--max-bytes`, which every continuation argv then carries and the receipt lists as
/// overridden: it is measured as that request, to a fixed point.
pub(super) fn required_budget(
    input: &ProjectInput,
    assembly: &Assembly,
    candidates: &[Candidate],
    id: String,
) -> AtlasError {
    let limits = assembly.limits;
    let measured = (|| -> Result<usize> {
        let (minimal, lengths) = minimal_page(input, candidates)?;
        let mut needs = limits.max_bytes;
        for _ in 0..4 {
            let request = ContextRequest {
                max_bytes: Some(needs),
                ..assembly.request.clone()
            };
            let mut overridden = limits.overridden.clone();
            if !overridden.contains(&"max_bytes") {
                overridden.push("max_bytes");
            }
            let asked = Limits {
                max_bytes: needs,
                overridden,
                ..limits.clone()
            };
            let asking = Assembly {
                request: &request,
                limits: &asked,
                ..*assembly
            };
            let frame = asking.frame(&minimal, asking.omissions(&minimal), widest(), 1_000_000);
            let length = assemble::fitted_length(json_of(&frame)?.len(), &lengths);
            if length <= needs {
                break;
            }
            needs = length;
        }
        // Continuations that raise the ceiling carry numbers that grow with it.
        Ok(needs + 64)
    })();
    match measured {
        Ok(needs) => AtlasError::ContextRequiredBudget {
            max_bytes: limits.max_bytes,
            id,
            needs,
        },
        Err(err) => err,
    }
}

/// How much of a page is the query said again: in its `query` and in each continuation
/// argv that asks it.
pub(super) struct Echoes {
    /// The query's length as a JSON string.
    pub(super) query_bytes: usize,
    /// Continuation argv that carry it.
    pub(super) argvs: usize,
    /// Both together: `query_bytes × (1 + argvs)`.
    pub(super) bytes: usize,
}

/// The query's echoes on the page with every optional candidate left out: the page with
/// the most omission groups, so the most argv.
pub(super) fn query_echoes(
    input: &ProjectInput,
    assembly: &Assembly,
    candidates: &[Candidate],
) -> Result<Echoes> {
    let (minimal, _) = minimal_page(input, candidates)?;
    let query = &assembly.request.query;
    let argvs = assembly
        .omissions(&minimal)
        .iter()
        .filter(|omission| omission.argv.get(2) == Some(query))
        .count();
    let query_bytes = json_of(query)?.len();
    Ok(Echoes {
        query_bytes,
        argvs,
        bytes: query_bytes * (1 + argvs),
    })
}
