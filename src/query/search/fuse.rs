//! One search: the arms (BM25 over symbols and sections, vectors, the graph arm)
//! run side by side, fused by reciprocal rank, reranked (code before tests and prose, exact
//! names first), with history hits and what each arm could not answer.

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
    ) -> Result<SearchOutput> {
        let arms = config.arms()?;
        let prose = query.split_whitespace().count() > VECTOR_RERANK_WORDS;
        let files = file_lookup(graph);
        let node_count = graph.node_count() as u32;
        // The vector arm (which may first load the model) runs beside the others.
        // Sections are ranked in lists of their own so that prose never takes a code
        // candidate's place in an arm's pool; fusion then weighs them together.
        // Each arm is isolated: damaged data or a panic inside one (tantivy reading a
        // bad segment) makes that arm unavailable, reported, and the others answer.
        let mut unavailable: std::collections::BTreeMap<&'static str, String> =
            std::collections::BTreeMap::new();
        let (vectors, lexical, graph_arm) = std::thread::scope(|scope| {
            let vectors = scope.spawn(|| {
                arms.vector.then(|| {
                    crate::isolate::isolate(|| self.cosines(embedder, query))
                        .unwrap_or_else(|panic| Err(format!("panicked: {panic}")))
                })
            });
            let lexical = arms.bm25.then(|| {
                crate::isolate::isolate(|| -> Result<(Vec<u32>, Vec<u32>)> {
                    Ok((
                        self.bm25(graph, &files, query, index::KIND_SYMBOL)?,
                        self.bm25(graph, &files, query, index::KIND_SECTION)?,
                    ))
                })
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
            let vectors = vectors
                .join()
                .unwrap_or_else(|_| Some(Err("the vector arm's thread failed".into())));
            (vectors, lexical, graph_arm)
        });
        let (bm25, bm25_sections) = match lexical {
            None => (Vec::new(), Vec::new()),
            Some(Ok(lists)) => lists,
            Some(Err(e)) => {
                unavailable.insert("bm25", e.to_string());
                (Vec::new(), Vec::new())
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
        let requested = [arms.bm25, arms.vector, arms.graph]
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
        ]);
        let rerank = config.rerank;
        if rerank {
            rerank_ranked(graph, query, &mut ranked);
        }
        let mut seen = std::collections::HashSet::new();
        let mut hits = Vec::new();
        for (item, fused) in ranked {
            if hits.len() >= top_k {
                break;
            }
            let hit = if item < node_count {
                if !seen.insert(graph.label(NodeId(item))) {
                    continue;
                }
                symbol_hit(graph, NodeId(item))
            } else {
                let Some(section) = self.sections.get((item - node_count) as usize) else {
                    continue;
                };
                if !seen.insert(format!("{}#{}", section.path, section.ordinal)) {
                    continue;
                }
                section_hit(graph, &files, section)
            };
            hits.push(Hit {
                score: (fused.score * 1e6).round() / 1e6,
                match_arms: fused.ranks.arms(),
                ranks: fused.ranks,
                ..hit
            });
        }
        // History only takes slots the pool left empty (R-S-5).
        let history = if arms.bm25 && hits.len() < top_k && !unavailable.contains_key("bm25") {
            match self.history_hits(graph, &files, query, top_k - hits.len()) {
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
            query: query.to_string(),
            hits,
            arms: ArmCounts {
                bm25: bm25.len() + bm25_sections.len(),
                vector: vector.len() + vector_sections.len(),
                graph: graph_arm.len(),
                history: history_count,
                unavailable,
            },
            reranked: rerank,
        })
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
            let record = &graph.data().files[file.index()];
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
            });
        }
        Ok(hits)
    }
}

/// The rerank: code before tests and prose, then exact names (and, for one identifier,
/// names containing it) in front by their BM25 rank; RRF order otherwise.
fn rerank_ranked(graph: &Graph, query: &str, ranked: &mut [(u32, Fused)]) {
    let node_count = graph.node_count() as u32;
    // Code first: tests and prose (Markdown sections) keep their order among
    // themselves but weigh less against the code they test or describe.
    let prior = |item: u32, score: f64| {
        if item >= node_count {
            score * SECTION_PRIOR
        } else if graph.is_test(NodeId(item)) {
            score * TEST_PRIOR
        } else {
            score
        }
    };
    ranked.sort_by(|a, b| {
        prior(b.0, b.1.score)
            .total_cmp(&prior(a.0, a.1.score))
            .then(a.0.cmp(&b.0))
    });
    // Exact symbol matches stay first; for a one-identifier query, names that
    // contain it come next (`where_clause` ⊂ `_build_where_clause`); RRF order
    // otherwise (the sort is stable).
    // Only short, identifier-like queries: in prose (an issue text) some word
    // always equals some name, and promoting it would drown the fused ranking.
    let words: Vec<String> = query.split_whitespace().map(|w| w.to_lowercase()).collect();
    let words: Vec<String> = if words.len() <= 3 { words } else { Vec::new() };
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
    // Within the promoted tiers the lexical (BM25) rank decides; the rest keep RRF
    // order (the sort is stable).
    ranked.sort_by_key(|r| {
        let t = tier(r.0);
        (
            t,
            if t < 2 {
                r.1.ranks.bm25.unwrap_or(usize::MAX)
            } else {
                0
            },
        )
    });
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
