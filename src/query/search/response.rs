//! Response profiles of `atlas search` (R-S-4): full hits, or compact hits cut to a
//! byte budget, with what was cut reported.

use super::*;

/// Response profiles of `atlas search` (R-S-4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ResponseProfile {
    /// Every field of every hit.
    Full,
    /// Fewer fields per hit (path, symbol, lines, ref), conservative dedup, a budget at
    /// 70% of the ceiling.
    Compact,
}

impl ResponseProfile {
    pub fn as_str(self) -> &'static str {
        match self {
            ResponseProfile::Full => "full",
            ResponseProfile::Compact => "compact",
        }
    }

    /// The per-call choice, else the configured default (`ATLAS_CONTEXT_OPTIMIZATION=1`
    /// makes it compact).
    pub fn resolve(flag: Option<ResponseProfile>, config: &SearchConfig) -> ResponseProfile {
        flag.unwrap_or(if config.compact_by_default {
            ResponseProfile::Compact
        } else {
            ResponseProfile::Full
        })
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct CompactHit {
    pub path: String,
    pub symbol: String,
    pub lines: [u32; 2],
    #[serde(rename = "ref")]
    pub reference: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Budget {
    /// `tokens` (exact, with `tokenizer`) or `chars` (fallback).
    pub mode: &'static str,
    pub tokenizer: String,
    /// The ceiling in tokens; `null` when counting fell back to characters.
    pub max_tokens: Option<usize>,
    /// The ceiling in the counting mode's units.
    pub ceiling: usize,
    /// What this response was allowed (70% of the ceiling in compact).
    pub budget: usize,
    pub used: usize,
    /// Whole results cut from the tail to fit.
    pub cut: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct SearchResponse {
    pub query: String,
    /// What was searched when it is not `query` (`SearchOutput::searched`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub searched: Option<String>,
    /// Sections of the query on the reporter's environment, not searched
    /// (`SearchOutput::set_aside`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub set_aside: Vec<crate::query::environment::SetAside>,
    pub profile: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hits: Option<Vec<Hit>>,
    #[serde(rename = "hits", skip_serializing_if = "Option::is_none")]
    pub compact_hits: Option<Vec<CompactHit>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arms: Option<ArmCounts>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reranked: Option<bool>,
    /// Present when results were cut to fit the budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
    /// The Jev judge's report, when `ATLAS_RELEVANCE` asked for it (R-J-*).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relevance: Option<super::relevance::RelevanceReport>,
    /// What the judge's selection left out (`omitted.relevance`), with the judge on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub omitted: Option<Omitted>,
    /// `--group-by file`: the hits by file, in ranking order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<FileGroup>>,
}

/// How `--group-by` arranges the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GroupBy {
    /// The hits' files in ranking order, each with its evidence and its hits.
    File,
}

/// One file of `--group-by file`: its evidence (the decayed sum of its candidates'
/// weighted scores, when file allocation ran) and the positions of its hits in `hits`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FileGroup {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<f64>,
    pub hits: Vec<usize>,
}

/// The hits' files in order of their first hit (the ranking's file order), with their
/// evidence from `files`.
pub fn group_by_file<'a>(
    paths: impl Iterator<Item = &'a str>,
    files: &[FileRank],
) -> Vec<FileGroup> {
    let mut groups: Vec<FileGroup> = Vec::new();
    for (position, path) in paths.enumerate() {
        match groups.iter_mut().find(|g| g.path == path) {
            Some(group) => group.hits.push(position),
            None => groups.push(FileGroup {
                path: path.to_string(),
                evidence: files
                    .iter()
                    .find(|f| f.path == path)
                    .map(|f| (f.evidence * 1e6).round() / 1e6),
                hits: vec![position],
            }),
        }
    }
    groups
}

#[derive(Debug, Clone, Serialize)]
pub struct Omitted {
    /// Judged candidates dropped by the cut or the conservative selection.
    pub relevance: usize,
}

impl SearchResponse {
    /// Hits in the response, whichever profile shaped it.
    pub fn hit_count(&self) -> usize {
        self.hits.as_ref().map_or(0, Vec::len) + self.compact_hits.as_ref().map_or(0, Vec::len)
    }

    /// Recomputes `groups` from the hits the response holds now.
    fn regroup(&mut self, files: &[FileRank]) {
        let paths: Vec<&str> = match (&self.hits, &self.compact_hits) {
            (Some(hits), _) => hits.iter().map(|h| h.path.as_str()).collect(),
            (None, Some(hits)) => hits.iter().map(|h| h.path.as_str()).collect(),
            (None, None) => Vec::new(),
        };
        self.groups = Some(group_by_file(paths.into_iter(), files));
    }
}

/// Shapes a search result for a profile and applies the response ceiling (R-OBS-2):
/// whole results are cut from the tail until the JSON fits.
pub fn respond(
    mut output: SearchOutput,
    profile: ResponseProfile,
    max_tokens: usize,
    tokenizer: Option<&Path>,
    group_by: Option<GroupBy>,
) -> SearchResponse {
    let files = std::mem::take(&mut output.files);
    let omitted = output.relevance.as_ref().map(|r| Omitted {
        relevance: r.removed,
    });
    let relevance = output.relevance.clone();
    let mut response = match profile {
        ResponseProfile::Full => SearchResponse {
            query: output.query,
            searched: output.searched,
            set_aside: output.set_aside,
            profile: "full",
            hits: Some(output.hits),
            compact_hits: None,
            arms: Some(output.arms),
            reranked: Some(output.reranked),
            budget: None,
            relevance,
            omitted,
            groups: None,
        },
        ResponseProfile::Compact => {
            // Conservative dedup: a hit inside an earlier hit's lines of the same file.
            let mut kept: Vec<CompactHit> = Vec::new();
            for hit in output.hits {
                let inside = kept.iter().any(|k| {
                    k.path == hit.path && k.lines[0] <= hit.lines[0] && hit.lines[1] <= k.lines[1]
                });
                if !inside {
                    kept.push(CompactHit {
                        path: hit.path,
                        symbol: hit.symbol,
                        lines: hit.lines,
                        reference: hit.reference,
                    });
                }
            }
            SearchResponse {
                query: output.query,
                searched: output.searched,
                set_aside: output.set_aside,
                profile: "compact",
                hits: None,
                compact_hits: Some(kept),
                arms: None,
                reranked: None,
                budget: None,
                relevance,
                omitted,
                groups: None,
            }
        }
    };
    let grouped = group_by == Some(GroupBy::File);
    if grouped {
        response.regroup(&files);
    }
    let share = |ceiling: usize| match profile {
        ResponseProfile::Full => ceiling,
        ResponseProfile::Compact => ceiling * 7 / 10,
    };
    // A text never has more tokens (nor chars) than bytes: a response within the budget
    // in bytes fits under any counting, and the tokenizer need not be loaded (~100 ms).
    if serde_json::to_string(&response).map_or(usize::MAX, |t| t.len()) <= share(max_tokens) {
        return response;
    }
    let counter = crate::query::tokens::counter(tokenizer);
    let exact = counter.mode() == "tokens";
    let ceiling = counter.ceiling(max_tokens);
    let budget = share(ceiling);
    let measure = |r: &SearchResponse| counter.count(&serde_json::to_string(r).unwrap_or_default());
    let mut cut = 0;
    loop {
        let used = measure(&response);
        let remaining = response.hits.as_ref().map_or(0, Vec::len)
            + response.compact_hits.as_ref().map_or(0, Vec::len);
        if used <= budget || remaining == 0 {
            if cut > 0 {
                response.budget = Some(Budget {
                    mode: counter.mode(),
                    tokenizer: counter.name.clone(),
                    max_tokens: exact.then_some(max_tokens),
                    ceiling,
                    budget,
                    used,
                    cut,
                });
            }
            return response;
        }
        if let Some(hits) = response.hits.as_mut() {
            hits.pop();
        }
        if let Some(hits) = response.compact_hits.as_mut() {
            hits.pop();
        }
        if grouped {
            response.regroup(&files);
        }
        cut += 1;
    }
}
