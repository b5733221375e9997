//! One search: the arms (BM25 over symbols and sections, vectors, the graph arm)
//! run side by side, fused by reciprocal rank, reranked (code before tests and prose; by
//! default files in that order and symbols by the learned scorer within it, `split`; exact
//! names first), with history hits and what each arm could not answer.

use std::collections::HashSet;

use crate::config::Fusion;
use crate::graph::ids::FileId;

use super::*;

impl SearchIndex {
    /// Runs the arms, fuses, reranks, dedups and cuts to `top_k`; commits fill what is
    /// left empty.
    pub fn search(
        &self,
        graph: &Graph,
        embedder: &Embedder,
        query: &str,
        top_k: usize,
        config: &SearchConfig,
        relevance: Option<&relevance::Setting>,
    ) -> Result<SearchOutput> {
        // A Portuguese question is searched with its English words as well (`glossary`);
        // the answer echoes what was asked and says what was added (`searched`). The
        // judge reads the question as asked.
        let asked = query;
        // An issue's sections on the reporter's environment are set aside (`environment`),
        // and said so.
        let without = crate::query::environment::without_environment(asked);
        let (kept, set_aside) = match &without {
            Some(w) => (w.text.as_str(), w.set_aside.clone()),
            None => (asked, Vec::new()),
        };
        let searched = crate::query::glossary::with_english(kept);
        let query = searched.as_deref().unwrap_or(kept);
        let arms = config.arms()?;
        // Split fusion's files, weighed with their own BM25 evidence (`split`).
        let file_order = config.file_order()?;
        let by_evidence = config.rerank
            && matches!(config.fusion()?, Fusion::Split | Fusion::SplitFiles)
            && file_order != crate::config::FileOrder::Rrf;
        let by_text = by_evidence
            && matches!(
                file_order,
                crate::config::FileOrder::Fused | crate::config::FileOrder::Learned
            );
        let prose = query.split_whitespace().count() > VECTOR_RERANK_WORDS;
        let files = self.files(graph);
        let node_count = graph.node_count() as u32;
        // The vector arm (which may first load the model) runs beside the others.
        // Sections are ranked in lists of their own so that prose never takes a code
        // candidate's place in an arm's pool; fusion then weighs them together.
        // Each arm is isolated: damaged data or a panic inside one (tantivy reading a
        // bad segment) makes that arm unavailable, reported, and the others answer.
        let mut unavailable: std::collections::BTreeMap<&'static str, String> =
            std::collections::BTreeMap::new();
        // The vector arm, the longest (a memory-bound scan), runs on this thread from the
        // start; the lexical and graph arms on a helper thread (`beside`), which then
        // helps with the vector arm's int8 scan (`quantized::Scan`).
        let scan: std::sync::OnceLock<quantized::Scan> = std::sync::OnceLock::new();
        let (vectors, (lexical, graph_arm)) = beside::beside(
            || {
                arms.vector.then(|| {
                    crate::isolate::isolate(|| {
                        self.cosines(embedder, query, (!prose).then_some(node_count), &scan)
                    })
                    .unwrap_or_else(|panic| Err(format!("panicked: {panic}")))
                })
            },
            || {
                let lexical = arms.bm25.then(|| {
                    crate::isolate::isolate(
                        || -> Result<(Vec<u32>, Vec<u32>, split::FileEvidence)> {
                            let (symbols, by_symbols) =
                                self.symbols_by_bm25(graph, &files, query, by_evidence)?;
                            let evidence = split::FileEvidence {
                                symbols: by_symbols,
                                text: if by_text {
                                    self.files_by_text(graph, &files, query)?
                                } else {
                                    Vec::new()
                                },
                            };
                            Ok((
                                symbols,
                                self.bm25(graph, &files, query, index::KIND_SECTION)?,
                                evidence,
                            ))
                        },
                    )
                    .unwrap_or_else(|panic| {
                        Err(AtlasError::SearchCorrupt {
                            path: PathBuf::from("tantivy"),
                            reason: format!("panicked: {panic}"),
                        })
                    })
                });
                let graph_arm = arms.graph.then(|| {
                    crate::isolate::isolate(|| signals::rank(graph, query, POOL))
                        .map_err(|panic| format!("panicked: {panic}"))
                });
                if let Some(scan) = scan.get() {
                    // A panic here loses the chunk, which fails the vector arm (reported).
                    let _ = crate::isolate::isolate(|| scan.help());
                }
                (lexical, graph_arm)
            },
        );
        let (bm25, bm25_sections, evidence) = match lexical {
            None => (Vec::new(), Vec::new(), split::FileEvidence::default()),
            Some(Ok(lists)) => lists,
            Some(Err(e)) => {
                unavailable.insert("bm25", e.to_string());
                (Vec::new(), Vec::new(), split::FileEvidence::default())
            }
        };
        // Search items: a node's id, or `node_count + i` for section `i`.
        let graph_arm: Vec<u32> = match graph_arm {
            None => Vec::new(),
            Some(Ok(list)) => list.into_iter().map(|node| node.0).collect(),
            Some(Err(reason)) => {
                unavailable.insert("graph", reason);
                Vec::new()
            }
        };
        let mut cosines = match vectors {
            None => Vec::new(),
            Some(Ok(list)) => list,
            Some(Err(reason)) => {
                unavailable.insert("vector", reason);
                Vec::new()
            }
        };
        // One hop along the graph's edges from what the query names (and what matches
        // it best) to neighbours that match the text too.
        let propagated: Vec<signals::Propagated> = if arms.propagate {
            let named: Vec<NodeId> = graph_arm.iter().map(|&n| NodeId(n)).collect();
            let lexical: Vec<NodeId> = bm25.iter().map(|&n| NodeId(n)).collect();
            match crate::isolate::isolate(|| signals::propagate(graph, &named, &lexical, POOL)) {
                Ok(list) => list,
                Err(panic) => {
                    unavailable.insert("propagate", format!("panicked: {panic}"));
                    Vec::new()
                }
            }
        } else {
            Vec::new()
        };
        let propagate_arm: Vec<u32> = propagated.iter().map(|p| p.node.0).collect();
        let via: HashMap<u32, String> = propagated
            .iter()
            .map(|p| (p.node.0, p.describe(graph)))
            .collect();
        let requested = [arms.bm25, arms.vector, arms.graph, arms.propagate]
            .iter()
            .filter(|on| **on)
            .count();
        if requested > 0 && unavailable.len() == requested {
            return Err(AtlasError::SearchCorrupt {
                path: PathBuf::from("search"),
                reason: unavailable
                    .iter()
                    .map(|(arm, reason)| format!("{arm}: {reason}"))
                    .collect::<Vec<_>>()
                    .join("; "),
            });
        }
        // A long text (an issue, a bug report) embeds to a blur close to everything: its
        // nearest neighbours are noise (measured: docs/QUALITY.md), but its similarity
        // still tells the lexical candidates apart. So on prose the vector arm ranks
        // those candidates only (alone, it searches everything).
        if prose && (arms.bm25 || arms.graph) {
            let candidates: std::collections::HashSet<u32> = bm25
                .iter()
                .chain(&bm25_sections)
                .chain(&graph_arm)
                .copied()
                .collect();
            cosines.retain(|(_, item)| candidates.contains(item));
        }
        let (vector_sections, vector): (Vec<_>, Vec<_>) = cosines
            .into_iter()
            .partition(|(_, item)| *item >= node_count);
        let (vector, vector_sections) = (nearest(vector), nearest(vector_sections));
        let mut ranked = fuse(&[
            (&bm25, Arm::Bm25),
            (&bm25_sections, Arm::Bm25),
            (&vector, Arm::Vector),
            (&vector_sections, Arm::Vector),
            (&graph_arm, Arm::Graph),
            (&propagate_arm, Arm::Propagate),
        ]);
        let pooled = ranked.len();
        let rerank = config.rerank;
        let allocation = config.allocation()?;
        let fusion = config.fusion()?;
        let (exact, files_ranked) = if rerank {
            let mut priors = Priors::new(graph, &self.sections, &files, query, fusion);
            // On prose, the learned file scorer orders the files (`ATLAS_FILE_ORDER`).
            priors.learned_files = split::files_by_scorer(fusion, file_order, prose);
            // Where files stand are learned features only: RRF weighing never reads them.
            if fusion != Fusion::Rrf || config.features_out.is_some() {
                priors.stand_files(&ranked, &evidence);
            }
            // Split fusion ranks symbols within files: the first files RRF shows bring
            // their own symbols by BM25 within each (the `file` arm), which the global
            // pools of 50 per arm rarely hold, for the learned scorer to rank.
            if matches!(fusion, Fusion::Split | Fusion::SplitFiles)
                && arms.bm25
                && allocation != crate::config::Allocation::File
            {
                let first_files = split::first_code_files(
                    &Self::candidates(&priors, &ranked),
                    allocate::IN_FILE_FILES,
                );
                self.add_file_arm(graph, &files, query, &mut ranked, &first_files, false);
            }
            if let Some(path) = &config.features_out {
                write_features(graph, &priors, &ranked, path, &mut unavailable);
            }
            let (exact, promoted) = rerank_ranked(graph, &priors, query, &mut ranked);
            // Allocation ranks files by BM25 within them: an ablation without the BM25 arm
            // keeps the other arms' order.
            // Without it, files are still ranked by evidence for `--group-by file`.
            let files_ranked = match allocation {
                crate::config::Allocation::File if arms.bm25 => {
                    self.allocate(graph, &files, &priors, query, &mut ranked, promoted)
                }
                _ => file_ranks(
                    graph,
                    allocate::rank_files(&Self::candidates(&priors, &ranked)),
                ),
            };
            (exact, files_ranked)
        } else {
            (HashSet::new(), Vec::new())
        };
        let judged = match relevance {
            Some(setting) if config.relevance.requested && rerank => {
                Some(self.judge(graph, &files, asked, &ranked, &exact, setting))
            }
            Some(_) if config.relevance.requested => Some(relevance::Judgement {
                evaluations: HashMap::new(),
                report: relevance::RelevanceReport::rerank_disabled(
                    &config.relevance,
                    ranked.len(),
                ),
                selection: relevance::policy::Selection::conservative(3.0),
            }),
            _ => None,
        };
        // Candidates the file arm added to the arms' pool.
        let file_added = ranked.len() - pooled;
        let fused: HashMap<u32, Fused> = ranked.iter().copied().collect();
        let pool: Vec<u32> = ranked.iter().map(|r| r.0).collect();
        // Labels dedup the pool (overloads, a section indexed twice); `None` is an item
        // with nothing to show.
        let mut seen = HashSet::new();
        let mut shown = |item: u32| -> Option<Hit> {
            let (key, hit) = if item < node_count {
                (graph.label(NodeId(item)), symbol_hit(graph, NodeId(item)))
            } else {
                let section = self.sections.get((item - node_count) as usize)?;
                (
                    format!("{}#{}", section.path, section.ordinal),
                    section_hit(graph, &files, section),
                )
            };
            seen.insert(key).then_some(hit)
        };
        let (chosen, mut report) = match judged {
            None => {
                let mut chosen = Vec::new();
                for &item in &pool {
                    if chosen.len() >= top_k {
                        break;
                    }
                    if let Some(hit) = shown(item) {
                        chosen.push((item, hit));
                    }
                }
                (chosen, None)
            }
            Some(judgement) => {
                let relevance::Judgement {
                    evaluations,
                    mut report,
                    selection,
                } = judgement;
                let is_exact = |item: u32| exact.contains(&item);
                let order = relevance::policy::order(&pool, &evaluations, &is_exact);
                let mut hits: HashMap<u32, Hit> = HashMap::new();
                let deduped: Vec<u32> = order
                    .iter()
                    .filter_map(|&item| shown(item).map(|hit| (item, hit)))
                    .map(|(item, hit)| {
                        hits.insert(item, hit);
                        item
                    })
                    .collect();
                // What the local ranking alone would have answered.
                let local: Vec<u32> = pool
                    .iter()
                    .filter(|item| hits.contains_key(item))
                    .take(top_k)
                    .copied()
                    .collect();
                let selected = relevance::policy::select(
                    &deduped,
                    top_k,
                    selection,
                    &evaluations,
                    &is_exact,
                    local.first().copied(),
                );
                report.removed = selected.removed;
                report.distinct = deduped.len();
                report.selected = selected.items.len();
                report.ranking_changed = selected.items != local;
                if selected.fallback {
                    report.warnings.push("relevance_unconfirmed_fallback");
                }
                let chosen = selected
                    .items
                    .iter()
                    .filter_map(|item| {
                        let mut hit = hits.remove(item)?;
                        hit.relevance = evaluations.get(item).map(|e| HitRelevance {
                            score: (e.score * 1e4).round() / 1e4,
                            confidence: (e.confidence * 1e4).round() / 1e4,
                            uncertain: e.confidence < relevance::policy::UNCERTAIN_BELOW,
                        });
                        Some((*item, hit))
                    })
                    .collect();
                (chosen, Some(report))
            }
        };
        let mut hits = Vec::with_capacity(chosen.len());
        for (item, hit) in chosen {
            let fused = fused.get(&item).copied().unwrap_or_default();
            hits.push(Hit {
                score: (fused.score * 1e6).round() / 1e6,
                match_arms: fused.ranks.arms(),
                ranks: fused.ranks,
                via: fused.ranks.propagate.and_then(|_| via.get(&item).cloned()),
                ..hit
            });
        }
        // With the cut, a dropped candidate's slot is not given to history either (the
        // conservative selection refilled its slots from the pool already).
        let removed = report
            .as_ref()
            .filter(|r| r.policy == relevance::policy::Selection::cut(1.0).policy())
            .map_or(0, |r| r.removed);
        // History only takes slots the pool left empty (R-S-5).
        let free = top_k.saturating_sub(hits.len() + removed);
        let history = if arms.bm25 && free > 0 && !unavailable.contains_key("bm25") {
            match self.history_hits(graph, &files, query, free) {
                Ok(commits) => commits,
                Err(e) => {
                    unavailable.insert("history", e.to_string());
                    Vec::new()
                }
            }
        } else {
            Vec::new()
        };
        let history_count = history.len();
        hits.extend(history);
        Ok(SearchOutput {
            query: asked.to_string(),
            searched,
            set_aside,
            hits,
            arms: ArmCounts {
                bm25: bm25.len() + bm25_sections.len(),
                vector: vector.len() + vector_sections.len(),
                graph: graph_arm.len(),
                propagate: propagate_arm.len(),
                file: file_added,
                history: history_count,
                unavailable,
            },
            reranked: rerank,
            relevance: report.take(),
            files: files_ranked,
        })
    }

    /// File first (`allocate`): the best files' own symbols join the pool by BM25 within
    /// each file (the `file` arm), then the pool is reordered by file evidence. Returns
    /// the files by evidence.
    fn allocate(
        &self,
        graph: &Graph,
        files: &FileLookup,
        priors: &Priors,
        query: &str,
        ranked: &mut Vec<(u32, Fused)>,
        promoted: usize,
    ) -> Vec<FileRank> {
        let node_count = graph.node_count() as u32;
        let before = allocate::rank_files(&Self::candidates(priors, ranked));
        let best_code_files = before
            .iter()
            .filter(|f| {
                ranked.iter().any(|(item, _)| {
                    *item < node_count && graph.node(NodeId(*item)).file() == f.file
                })
            })
            .take(allocate::IN_FILE_FILES)
            .map(|f| f.file)
            .collect::<Vec<_>>();
        self.add_file_arm(graph, files, query, ranked, &best_code_files, true);
        let candidates = Self::candidates(priors, ranked);
        let (order, by_file) = allocate::allocate(graph, &candidates, promoted);
        let reordered: Vec<(u32, Fused)> = order.iter().map(|&i| ranked[i]).collect();
        *ranked = reordered;
        file_ranks(graph, by_file)
    }

    /// The `file` arm: each of `chosen`'s own symbols by BM25 within it join the pool,
    /// with their rank within the file. With `fused`, that rank adds to the RRF score like
    /// any arm's (allocation); without, the RRF score and so RRF's file order stay as the
    /// other arms made them, and only the learned scorer reads the rank (split fusion).
    fn add_file_arm(
        &self,
        graph: &Graph,
        files: &FileLookup,
        query: &str,
        ranked: &mut Vec<(u32, Fused)>,
        chosen: &[FileId],
        fused: bool,
    ) {
        if chosen.is_empty() {
            return;
        }
        let mut position: HashMap<u32, usize> =
            ranked.iter().enumerate().map(|(i, r)| (r.0, i)).collect();
        let paths: Vec<&str> = chosen.iter().map(|&file| graph.file_path(file)).collect();
        // A failure here only leaves the pool as the arms made it.
        let in_files = crate::isolate::isolate(|| {
            self.bm25_in_files(graph, files, query, &paths, allocate::IN_FILE_POOL)
        })
        .ok()
        .and_then(|r| r.ok())
        .unwrap_or_default();
        for in_file in in_files {
            for (rank, item) in in_file.into_iter().enumerate() {
                let at = *position.entry(item).or_insert_with(|| {
                    ranked.push((item, Fused::default()));
                    ranked.len() - 1
                });
                let candidate = &mut ranked[at].1;
                if candidate.ranks.file.is_none() {
                    if fused {
                        candidate.score += 1.0 / (RRF_K + rank as f64);
                    }
                    candidate.ranks.file = Some(rank);
                }
            }
        }
    }

    /// The pool as allocation sees it: each candidate's file, weight and node.
    fn candidates(priors: &Priors, ranked: &[(u32, Fused)]) -> Vec<allocate::Candidate> {
        ranked
            .iter()
            .map(|(item, fused)| priors.candidate(*item, priors.weigh(*item, fused)))
            .collect()
    }

    /// Runs the judge over the reranked pool (R-J-*): each candidate with its path,
    /// symbol, kind, language and up to 2,000 characters of its text, read from the
    /// inventory file the graph names.
    fn judge(
        &self,
        graph: &Graph,
        files: &FileLookup,
        query: &str,
        ranked: &[(u32, Fused)],
        exact: &HashSet<u32>,
        setting: &relevance::Setting,
    ) -> relevance::Judgement {
        let node_count = graph.node_count() as u32;
        let pool: Vec<u32> = ranked.iter().map(|r| r.0).collect();
        let texts = std::cell::RefCell::new(HashMap::<String, Option<LinedText>>::new());
        let describe = |item: u32| -> Option<relevance::WireCandidate> {
            let hit = if item < node_count {
                symbol_hit(graph, NodeId(item))
            } else {
                section_hit(
                    graph,
                    files,
                    self.sections.get((item - node_count) as usize)?,
                )
            };
            let language =
                crate::syntax::lang::Language::from_path(&hit.path).map_or("text", |l| l.as_str());
            let language = if hit.kind == "section" {
                "markdown"
            } else {
                language
            };
            let content = {
                let mut texts = texts.borrow_mut();
                let text = texts
                    .entry(hit.path.clone())
                    .or_insert_with(|| inventory_text(setting.root, &hit.path).map(LinedText::new));
                text.as_ref()
                    .map(|t| excerpt(t, hit.lines))
                    .unwrap_or_default()
            };
            Some(relevance::WireCandidate {
                id: relevance::candidate_id(&hit.path, &hit.symbol, hit.kind),
                path: hit.path,
                symbol: hit.symbol,
                kind: hit.kind.to_string(),
                language: language.to_string(),
                content,
            })
        };
        let is_callable_or_class = |item: u32| {
            item < node_count
                && matches!(
                    graph.kind(NodeId(item)),
                    crate::syntax::facts::SymbolKind::Function
                        | crate::syntax::facts::SymbolKind::Method
                        | crate::syntax::facts::SymbolKind::Class
                )
        };
        let identifier_query = relevance::is_identifier_query(query);
        let gate = relevance::GateFacts {
            identifier_query,
            unique_exact_symbol: identifier_query
                && pool
                    .iter()
                    .filter(|i| exact.contains(i) && is_callable_or_class(**i))
                    .count()
                    == 1,
        };
        relevance::judge(setting, query, &pool, &describe, gate)
    }

    /// Commits whose messages match the query, as hits on the first file they touched.
    fn history_hits(
        &self,
        graph: &Graph,
        files: &FileLookup,
        query: &str,
        limit: usize,
    ) -> Result<Vec<Hit>> {
        let commits =
            crate::isolate::isolate(|| self.commits(query, limit)).unwrap_or_else(|panic| {
                Err(AtlasError::SearchCorrupt {
                    path: PathBuf::from("tantivy"),
                    reason: format!("panicked: {panic}"),
                })
            })?;
        let mut hits = Vec::new();
        for commit in commits {
            let Some(path) = commit.files.first() else {
                continue;
            };
            let Some(&file) = files.get(path.as_str()) else {
                continue;
            };
            let Some(record) = graph.file(file) else {
                continue;
            };
            let lines = record.lines.to_native().max(1);
            hits.push(Hit {
                path: path.clone(),
                symbol: format!(
                    "commit:{}",
                    commit.hash.chars().take(12).collect::<String>()
                ),
                kind: "commit",
                lines: [1, lines],
                score: 0.0,
                match_arms: vec!["history"],
                reference: format!(
                    "{path}#L1-L{lines}@{}",
                    crate::graph::format::hex(&record.hash[..4])
                ),
                commit: Some(commit),
                node: None,
                ranks: Ranks::default(),
                relevance: None,
                via: None,
            });
        }
        Ok(hits)
    }
}

/// Appends one JSON line to `path`: each candidate of the fused pool with its learned
/// features (`ATLAS_SEARCH_FEATURES`, for `bench/fusion/train.py`). A failure to write is
/// reported as the `features` entry of `arms.unavailable`, never fails the search.
fn write_features(
    graph: &Graph,
    priors: &Priors,
    ranked: &[(u32, Fused)],
    path: &std::path::Path,
    unavailable: &mut std::collections::BTreeMap<&'static str, String>,
) {
    let node_count = graph.node_count() as u32;
    let candidates: Vec<serde_json::Value> = ranked
        .iter()
        .filter(|(item, _)| *item < node_count)
        .map(|(item, fused)| {
            let hit = symbol_hit(graph, NodeId(*item));
            serde_json::json!({
                "path": hit.path,
                "symbol": hit.symbol,
                "x": priors.features(*item, fused).to_vec(),
            })
        })
        .collect();
    let line = serde_json::json!({ "features": learned::FEATURES, "candidates": candidates });
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| {
            use std::io::Write;
            writeln!(f, "{line}")
        });
    if let Err(e) = written {
        unavailable.insert("features", e.to_string());
    }
}

fn file_ranks(graph: &Graph, by_file: Vec<allocate::FileEvidence>) -> Vec<FileRank> {
    by_file
        .into_iter()
        .map(|f| FileRank {
            path: graph.file_path(f.file).to_string(),
            evidence: f.evidence,
        })
        .collect()
}

/// How much a candidate weighs in the rerank and the allocation.
///
/// With RRF (the default), its fused score with hand priors: tests and prose (Markdown
/// sections) keep their order among themselves but weigh less against the code they test
/// or describe; a candidate under the scope a commit-style query names (`sync: …`) weighs
/// more. With learned fusion (`ATLAS_FUSION=learned`), the scorer's probability over the
/// candidate's features (`learned`), which replaces both the fixed RRF weights and those
/// priors.
pub(super) struct Priors<'a> {
    graph: &'a Graph,
    sections: &'a [Section],
    files: &'a FileLookup<'a>,
    scope: Vec<String>,
    fusion: Fusion,
    /// Where each file stands (learned features; empty unless learned fusion or the
    /// feature dump asks): its evidence over the best file's, from the prior-weighted
    /// pool the arms fused, and its places in the merging file order and by whole text.
    file_standing: HashMap<FileId, learned::FileStanding>,
    /// Each file's score in the fused file order (`split::fused_file_order`), which split
    /// fusion merges the results by; empty where that order is RRF's alone.
    fused_file_scores: HashMap<FileId, f64>,
    /// Split fusion orders the files that hold symbols by the learned file scorer
    /// (`split::file_scores`), not by `fused_file_scores`.
    learned_files: bool,
}

impl<'a> Priors<'a> {
    pub(super) fn new(
        graph: &'a Graph,
        sections: &'a [Section],
        files: &'a FileLookup<'a>,
        query: &str,
        fusion: Fusion,
    ) -> Self {
        Priors {
            graph,
            sections,
            files,
            scope: scope::scope_names(query),
            fusion,
            file_standing: HashMap::new(),
            fused_file_scores: HashMap::new(),
            learned_files: false,
        }
    }

    /// Records where each file of the arms' pool (`ranked`) stands, for the learned
    /// features.
    pub(super) fn stand_files(&mut self, ranked: &[(u32, Fused)], evidence: &split::FileEvidence) {
        let mut weighed: Vec<(u32, f64)> = ranked
            .iter()
            .map(|(item, fused)| (*item, self.prior(*item, fused.score)))
            .collect();
        let candidates: Vec<allocate::Candidate> = weighed
            .iter()
            .map(|&(item, weight)| self.candidate(item, weight))
            .collect();
        let files_ranked = allocate::rank_files(&candidates);
        let best = files_ranked.first().map_or(0.0, |f| f.evidence);
        for f in &files_ranked {
            let standing = self.file_standing.entry(f.file).or_default();
            standing.evidence = if best > 0.0 { f.evidence / best } else { 0.0 };
        }
        // The fused file order as `rerank_ranked` makes it: the files that hold symbols in
        // the order the prior-weighted pool first shows them, weighed with the evidence.
        // It also places the files only the evidence ranks: the pool's files merge the
        // results in this order, and a file below them stands lower.
        weighed.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let node_count = self.graph.node_count() as u32;
        let mut rrf_order: Vec<FileId> = Vec::new();
        let mut seen: HashSet<FileId> = HashSet::new();
        for &(item, _) in &weighed {
            if item < node_count
                && let Some(file) = self.file_and_node(item).0
                && seen.insert(file)
            {
                rrf_order.push(file);
            }
        }
        let order: Vec<FileId> = if evidence.is_empty() {
            rrf_order
        } else {
            let scores = split::fused_file_order(&rrf_order, evidence);
            let mut order: Vec<FileId> = scores.keys().copied().collect();
            order.sort_by(|a, b| scores[b].total_cmp(&scores[a]).then(a.0.cmp(&b.0)));
            self.fused_file_scores = scores;
            order
        };
        let reciprocal = |place: usize| 1.0 / (1.0 + place as f64);
        for (place, file) in order.iter().enumerate() {
            self.file_standing.entry(*file).or_default().order = reciprocal(place);
        }
        for (place, file) in evidence.text.iter().enumerate() {
            self.file_standing.entry(*file).or_default().text = reciprocal(place);
        }
    }

    /// The candidate's file (a section's Markdown file) and node.
    fn file_and_node(&self, item: u32) -> (Option<FileId>, Option<NodeId>) {
        let node_count = self.graph.node_count() as u32;
        if item < node_count {
            let file = self.graph.node(NodeId(item)).file();
            ((!file.is_none()).then_some(file), Some(NodeId(item)))
        } else {
            let section = self.sections.get((item - node_count) as usize);
            (
                section.and_then(|s| self.files.get(s.path.as_str()).copied()),
                None,
            )
        }
    }

    pub(super) fn candidate(&self, item: u32, weight: f64) -> allocate::Candidate {
        let (file, node) = self.file_and_node(item);
        allocate::Candidate { file, weight, node }
    }

    fn in_scope(&self, item: u32) -> bool {
        !self.scope.is_empty()
            && self
                .file_and_node(item)
                .0
                .is_some_and(|f| scope::path_in_scope(self.graph.file_path(f), &self.scope))
    }

    /// The RRF weighing: the fused score with the hand priors.
    fn prior(&self, item: u32, score: f64) -> f64 {
        let weighed = if item >= self.graph.node_count() as u32 {
            score * SECTION_PRIOR
        } else if self.graph.is_test(NodeId(item)) {
            score * TEST_PRIOR
        } else {
            score
        };
        if self.in_scope(item) {
            weighed * SCOPE_PRIOR
        } else {
            weighed
        }
    }

    /// The candidate's learned features.
    pub(super) fn features(&self, item: u32, fused: &Fused) -> [f64; learned::FEATURES.len()] {
        let standing = self
            .file_and_node(item)
            .0
            .and_then(|f| self.file_standing.get(&f))
            .copied()
            .unwrap_or_default();
        let context = learned::Context::of(self.graph, item, self.in_scope(item), standing);
        learned::features(fused.score, &fused.ranks, &context)
    }

    /// The candidate's weight: what ranks files (and, but for split fusion, symbols).
    pub(super) fn weigh(&self, item: u32, fused: &Fused) -> f64 {
        match self.fusion {
            Fusion::Rrf | Fusion::Split | Fusion::SplitFiles => self.prior(item, fused.score),
            Fusion::Learned => self.learned(item, fused),
        }
    }

    /// The learned scorer's probability for the candidate.
    fn learned(&self, item: u32, fused: &Fused) -> f64 {
        self.learned_from(item, &self.features(item, fused))
    }

    /// The learned scorer's probability for the candidate with features `x`.
    fn learned_from(&self, item: u32, x: &[f64; learned::FEATURES.len()]) -> f64 {
        let z = learned::score(x);
        let probability = 1.0 / (1.0 + (-z).exp());
        // Commit gold is code: sections had no labels to learn from, so they keep
        // their hand prior on the probability.
        if item >= self.graph.node_count() as u32 {
            probability * SECTION_PRIOR
        } else {
            probability
        }
    }
}

/// The rerank: code before tests and prose, then exact names (and, for one identifier,
/// names containing it) in front by their BM25 rank; the fusion's order otherwise (split
/// fusion: files as RRF shows them, symbols by the learned scorer). Returns the
/// exact matches and how many candidates the name tiers promoted to the front.
fn rerank_ranked(
    graph: &Graph,
    priors: &Priors,
    query: &str,
    ranked: &mut [(u32, Fused)],
) -> (HashSet<u32>, usize) {
    let node_count = graph.node_count() as u32;
    // Each candidate's weight once, sorted with it (not looked up per comparison).
    let mut weighed: Vec<(f64, (u32, Fused))> = ranked
        .iter()
        .map(|&(item, fused)| (priors.weigh(item, &fused), (item, fused)))
        .collect();
    weighed.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.0.cmp(&b.1.0)));
    for (slot, (_, entry)) in ranked.iter_mut().zip(&weighed) {
        *slot = *entry;
    }
    if matches!(priors.fusion, Fusion::Split | Fusion::SplitFiles) {
        // Each candidate's features once: they give its learned weight and, for
        // symbols, its share of its file's score.
        let features: Vec<[f64; learned::FEATURES.len()]> = ranked
            .iter()
            .map(|(item, fused)| priors.features(*item, fused))
            .collect();
        let files: Vec<Option<FileId>> = ranked
            .iter()
            .map(|(item, _)| priors.file_and_node(*item).0)
            .collect();
        let scored: Vec<split::Scored> = weighed
            .iter()
            .zip(&files)
            .zip(&features)
            .map(|(((weight, (item, _)), file), features)| split::Scored {
                file: *file,
                rrf_weight: *weight,
                features: (*item < node_count).then_some(features),
            })
            .collect();
        // `split` keeps RRF's file order (`ATLAS_FILE_ORDER=rrf`), or weighs it with the
        // files' BM25 evidence; `split-files`, and `split` on prose by default, score files
        // by the learned file scorer.
        // The fused order (the files that hold symbols, in RRF's order of first
        // appearance, weighed with their evidence; `Priors::stand_files`, over the same
        // prior-weighted order as above: the file arm's additions hold no other files).
        // Markdown files keep their places.
        let learned_file_scores;
        let file_scores = if priors.learned_files {
            learned_file_scores = split::file_scores(&scored);
            &learned_file_scores
        } else {
            &priors.fused_file_scores
        };
        let pool: Vec<split::Candidate> = ranked
            .iter()
            .zip(&files)
            .zip(&features)
            .map(|(((item, _), file), features)| split::Candidate {
                file: *file,
                weight: priors.learned_from(*item, features),
                file_score: file.and_then(|f| file_scores.get(&f).copied()),
            })
            .collect();
        let reordered: Vec<(u32, Fused)> =
            split::order(&pool).into_iter().map(|i| ranked[i]).collect();
        ranked.copy_from_slice(&reordered);
    }
    // Exact symbol matches stay first; for a one-identifier query, names that
    // contain it come next (`where_clause` ⊂ `_build_where_clause`); the fusion's
    // order otherwise (the sort is stable).
    // Only short, identifier-like queries: in prose (an issue text) some word
    // always equals some name, and promoting it would drown the fused ranking.
    let words: Vec<String> = query.split_whitespace().map(|w| w.to_lowercase()).collect();
    let words: Vec<String> = if words.len() <= 3 { words } else { Vec::new() };
    if words.is_empty() {
        // No tier promotes anything: the order stands, and nothing is exact.
        return (HashSet::new(), 0);
    }
    let squash = |s: &str| -> String {
        s.chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect()
    };
    let single = (words.len() == 1)
        .then(|| squash(&words[0]))
        .filter(|w| w.len() >= 3);
    let tier = |item: u32| {
        if item >= node_count {
            return 2;
        }
        let record = graph.node(NodeId(item));
        let name = graph.str(record.name()).to_lowercase();
        let qualified = graph.str(record.qualified()).to_lowercase();
        if words.iter().any(|w| *w == name || *w == qualified) {
            0
        } else if single
            .as_ref()
            .is_some_and(|w| squash(&name).contains(w.as_str()))
        {
            1
        } else {
            2
        }
    };
    // Within the promoted tiers the lexical (BM25) rank decides; the rest keep the fused
    // order (the sort is stable).
    let tiers: HashMap<u32, u8> = ranked.iter().map(|r| (r.0, tier(r.0))).collect();
    ranked.sort_by_key(|r| {
        let t = tiers.get(&r.0).copied().unwrap_or(2);
        (
            t,
            if t < 2 {
                r.1.ranks.bm25.unwrap_or(usize::MAX)
            } else {
                0
            },
        )
    });
    let promoted = tiers.values().filter(|t| **t < 2).count();
    // The exact symbol matches, which stay in front whatever a judge says (R-J-6).
    let exact = tiers
        .into_iter()
        .filter(|(_, t)| *t == 0)
        .map(|(item, _)| item)
        .collect();
    (exact, promoted)
}

/// A repository file's text, read only when the path is a plain relative path inside
/// `root` (graph paths always are; nothing outside the inventory is ever read).
fn inventory_text(root: &std::path::Path, path: &str) -> Option<String> {
    let relative = std::path::Path::new(path);
    if relative.is_absolute()
        || relative
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return None;
    }
    // A regular file within the inventory's size limit: the file may have been replaced
    // since the build (a FIFO would block, a huge file would cost the search).
    let path = root.join(relative);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    let limit = crate::build::inventory::InventoryLimits::default().max_file_bytes;
    if !meta.is_file() || meta.len() > limit {
        return None;
    }
    let bytes = std::fs::read(&path).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// A file's text with the byte offset of each line's start: the pool holds many symbols of
/// one file, and each excerpt starts at its line without scanning the lines before it.
struct LinedText {
    text: String,
    starts: Vec<usize>,
}

impl LinedText {
    fn new(text: String) -> LinedText {
        let starts = crate::query::line_starts(&text);
        LinedText { text, starts }
    }
}

/// Lines `lines` (1-based, inclusive) of `text`, cut to the wire's character limit.
fn excerpt(text: &LinedText, lines: [u32; 2]) -> String {
    let start = lines[0].max(1) as usize - 1;
    let count = (lines[1] as usize + 1).saturating_sub(lines[0].max(1) as usize);
    let Some(&offset) = text.starts.get(start) else {
        return String::new();
    };
    let mut out = String::new();
    let mut chars = 0;
    for line in text.text[offset..].lines().take(count.max(1)) {
        for c in line.chars().chain(std::iter::once('\n')) {
            if chars == relevance::wire::MAX_CONTENT_CHARS {
                return out;
            }
            out.push(c);
            chars += 1;
        }
    }
    out
}

/// Reciprocal rank fusion (K = `RRF_K`, ranks from 0) of the arms' lists, best first
/// (ties by item).
fn fuse(lists: &[(&Vec<u32>, Arm)]) -> Vec<(u32, Fused)> {
    let mut fused: HashMap<u32, Fused> = HashMap::new();
    for (list, arm) in lists {
        for (rank, &item) in list.iter().enumerate() {
            let entry = fused.entry(item).or_default();
            entry.score += 1.0 / (RRF_K + rank as f64);
            entry.ranks.set(*arm, rank);
        }
    }
    let mut ranked: Vec<(u32, Fused)> = fused.into_iter().collect();
    ranked.sort_by(|a, b| b.1.score.total_cmp(&a.1.score).then(a.0.cmp(&b.0)));
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `excerpt` as it was written first: skip lines from the file's start.
    fn scanned(text: &str, lines: [u32; 2]) -> String {
        let start = lines[0].max(1) as usize - 1;
        let count = (lines[1] as usize + 1).saturating_sub(lines[0].max(1) as usize);
        let mut out = String::new();
        for line in text.lines().skip(start).take(count.max(1)) {
            for c in line.chars().chain(std::iter::once('\n')) {
                if out.chars().count() == relevance::wire::MAX_CONTENT_CHARS {
                    return out;
                }
                out.push(c);
            }
        }
        out
    }

    #[test]
    fn an_excerpt_from_the_line_index_equals_one_that_scans_the_file() {
        let long = "x".repeat(relevance::wire::MAX_CONTENT_CHARS + 10);
        let texts = [
            String::new(),
            "one".to_string(),
            "one\ntwo\nthree\n".to_string(),
            "one\r\ntwo\r\n\r\nfour".to_string(),
            "\n\n\n".to_string(),
            format!("a\n{long}\nb\n"),
            "é\nñ\n日本\n".to_string(),
        ];
        for text in &texts {
            let lined = LinedText::new(text.clone());
            for start in 0..6 {
                for end in 0..7 {
                    let lines = [start, end];
                    assert_eq!(
                        excerpt(&lined, lines),
                        scanned(text, lines),
                        "{text:?} {lines:?}"
                    );
                }
            }
        }
    }
}
