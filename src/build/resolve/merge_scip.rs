//! Merging SCIP into the resolved graph (R-SCIP-1/2) and measuring heuristic edges
//! against it (R-RES-4).
//!
//! SCIP and tree-sitter facts join by (path, range overlap): a SCIP definition names the
//! tree-sitter definition whose name token it overlaps, or becomes a new symbol; a SCIP
//! reference becomes a precise edge whose kind follows the tree-sitter reference at the
//! same site (a call site gives `calls`), and it replaces every heuristic edge and
//! frontier entry at that site.

use std::collections::BTreeMap;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use serde::Serialize;

use super::{
    EdgeKind, EdgeSubkind, Provenance, Resolution, ResolvedEdge, ResolvedNode, Resolver, Site,
};
use crate::build::scip::{self, Occurrence, RelationshipKind, ScipFacts, ScipStats};
use crate::syntax::facts::{FileFacts, RefRole, Span, SymbolKind, Visibility};

/// What SCIP contributed to a build.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ScipMerge {
    pub stats: ScipStats,
    pub symbols_matched: usize,
    pub symbols_added: usize,
    pub precise_edges: usize,
    pub heuristic_edges_replaced: usize,
    pub frontier_resolved: usize,
    /// Reference occurrences whose symbol is defined outside the graph.
    pub external_occurrences: usize,
    pub diagnostics: Vec<scip::ScipDiagnostic>,
}

fn overlaps(a: &Span, b: &Span) -> bool {
    a.start_byte < b.end_byte.max(b.start_byte + 1)
        && b.start_byte < a.end_byte.max(a.start_byte + 1)
}

/// Splits descriptors `` `a.b.c`/rest `` into (`a.b.c`, `/rest`).
fn split_module(descriptors: &str) -> Option<(&str, &str)> {
    let inner = descriptors.strip_prefix('`')?;
    let end = inner.find('`')?;
    Some((&inner[..end], &inner[end + 1..]))
}

/// A precise reference: (file, site, target or `None` when external, kind).
struct PreciseReference {
    file: u32,
    site: Span,
    from: u32,
    target: Option<u32>,
    kind: EdgeKind,
    subkind: EdgeSubkind,
    /// Role of the tree-sitter reference at the same site, if any.
    role: Option<RefRole>,
    /// Its `facts::site` bits.
    flags: u8,
}

impl Resolver<'_> {
    /// Innermost tree-sitter definition of `file` containing `span`, as a node id.
    fn enclosing_node(&self, file: u32, facts: &FileFacts, span: &Span) -> u32 {
        let base = self.def_base[file as usize];
        let mut best: Option<usize> = None;
        for (i, def) in facts.defs.iter().enumerate() {
            if def.span.contains(span)
                && best.is_none_or(|b| facts.defs[b].span.contains(&def.span))
            {
                best = Some(i);
            }
        }
        best.map_or(self.out.file_nodes[file as usize], |i| base + i as u32)
    }

    /// Maps SCIP symbols to nodes: tree-sitter definitions by name-token overlap; the
    /// rest are returned as symbols to add.
    fn map_definitions(&self, scip: &ScipFacts) -> (Vec<Option<u32>>, Vec<(u32, Occurrence)>) {
        let mut symbol_node: Vec<Option<u32>> = vec![None; scip.symbols.len()];
        let mut missing = Vec::new();
        for document in &scip.documents {
            let Some(&file) = self.file_by_path.get(document.path.as_str()) else {
                continue;
            };
            let facts = self.facts(file);
            let base = self.def_base[file as usize];
            for occurrence in &document.definitions {
                let symbol = &scip.symbols[occurrence.symbol as usize];
                if scip::is_module_symbol(symbol) {
                    // A module or package definition: the file itself.
                    symbol_node[occurrence.symbol as usize]
                        .get_or_insert(self.out.file_nodes[file as usize]);
                    continue;
                }
                let matched = facts.and_then(|facts| {
                    facts
                        .defs
                        .iter()
                        .position(|d| {
                            d.kind != SymbolKind::Impl && overlaps(&d.name_span, &occurrence.span)
                        })
                        .map(|i| base + i as u32)
                });
                match matched {
                    Some(node) => {
                        symbol_node[occurrence.symbol as usize].get_or_insert(node);
                    }
                    None => missing.push((file, *occurrence)),
                }
            }
        }
        missing.sort_by_key(|(file, o)| (*file, o.span.start_byte, o.symbol));
        missing.dedup_by_key(|(_, o)| o.symbol);
        missing.retain(|(_, o)| symbol_node[o.symbol as usize].is_none());
        // References to this repository's own code through an installed or unresolved
        // package (`Flask 3.1.3 `flask.cli`/x().` for the indexed `flask 0
        // `src.flask.cli`/x().`) name the same descriptors, up to a module-path prefix:
        // they are the same symbol when exactly one defined symbol matches.
        let mut by_descriptors: HashMap<String, Option<u32>> = HashMap::default();
        let mut remember = |key: String, node: u32| {
            by_descriptors
                .entry(key)
                .and_modify(|seen| {
                    if *seen != Some(node) {
                        *seen = None;
                    }
                })
                .or_insert(Some(node));
        };
        for (symbol, node) in symbol_node.iter().enumerate() {
            let (Some(node), Some(d)) = (node, scip::descriptors(&scip.symbols[symbol])) else {
                continue;
            };
            remember(d.to_string(), *node);
            if let Some((module, rest)) = split_module(d) {
                let mut suffix = module;
                while let Some((_, tail)) = suffix.split_once('.') {
                    remember(format!("`{tail}`{rest}"), *node);
                    remember(format!("{tail}{rest}"), *node);
                    suffix = tail;
                }
            }
        }
        for (symbol, node) in symbol_node.iter_mut().enumerate() {
            if node.is_none()
                && let Some(Some(found)) =
                    scip::descriptors(&scip.symbols[symbol]).and_then(|d| by_descriptors.get(d))
            {
                *node = Some(*found);
            }
        }
        (symbol_node, missing)
    }

    fn precise_references(
        &self,
        scip: &ScipFacts,
        symbol_node: &[Option<u32>],
    ) -> Vec<PreciseReference> {
        let mut out = Vec::new();
        for document in &scip.documents {
            let Some(&file) = self.file_by_path.get(document.path.as_str()) else {
                continue;
            };
            let Some(facts) = self.facts(file) else {
                continue;
            };
            // Tree-sitter references of this file by site start, to type each occurrence.
            let mut by_start: HashMap<u32, (RefRole, u8)> = HashMap::default();
            for r in self.references(file) {
                by_start
                    .entry(r.site.start_byte)
                    .or_insert((r.role, r.site_flags));
            }
            for occurrence in &document.references {
                let target = symbol_node[occurrence.symbol as usize];
                let (role, flags) = match by_start.get(&occurrence.span.start_byte) {
                    Some(&(role, flags)) => (Some(role), flags),
                    None => (None, 0),
                };
                let target_kind = target.map(|t| self.out.nodes[t as usize].kind);
                let import = occurrence.roles & scip::ROLE_IMPORT != 0
                    || facts
                        .imports
                        .iter()
                        .any(|i| i.site.contains(&occurrence.span));
                let (kind, subkind) = if import {
                    (EdgeKind::Imports, EdgeSubkind::None)
                } else {
                    match role {
                        Some(RefRole::Call) => (EdgeKind::Calls, EdgeSubkind::None),
                        Some(RefRole::TypeUse) => (EdgeKind::UsesType, EdgeSubkind::None),
                        Some(RefRole::Inherit) => (EdgeKind::Implements, EdgeSubkind::Extends),
                        Some(RefRole::Implement) => (EdgeKind::Implements, EdgeSubkind::None),
                        Some(RefRole::Import) => (EdgeKind::Imports, EdgeSubkind::None),
                        _ if target_kind.is_some_and(SymbolKind::is_type) => {
                            (EdgeKind::UsesType, EdgeSubkind::None)
                        }
                        _ => (EdgeKind::References, EdgeSubkind::None),
                    }
                };
                let from = if kind == EdgeKind::Imports {
                    self.out.file_nodes[file as usize]
                } else {
                    self.enclosing_node(file, facts, &occurrence.span)
                };
                out.push(PreciseReference {
                    file,
                    site: occurrence.span,
                    from,
                    target,
                    kind,
                    subkind,
                    role,
                    flags,
                });
            }
        }
        out
    }

    pub(super) fn merge_scip(&mut self, scip: &ScipFacts) {
        let mut merge = ScipMerge {
            stats: scip.stats.clone(),
            diagnostics: scip.diagnostics.clone(),
            ..ScipMerge::default()
        };
        let (mut symbol_node, missing) = self.map_definitions(scip);
        merge.symbols_matched = symbol_node.iter().filter(|n| n.is_some()).count();
        for (symbol, node) in symbol_node.iter().enumerate() {
            if let Some(node) = node {
                let entry = &mut self.out.nodes[*node as usize].scip_symbol;
                if entry.is_none() {
                    *entry = Some(scip.symbols[symbol].clone());
                }
            }
        }
        // Symbols SCIP knows but tree-sitter missed, under their owner when the owner is
        // known (`self.price = …` in `__init__` defines `Item#price.`).
        let symbol_ids: HashMap<&str, u32> = scip
            .symbols
            .iter()
            .enumerate()
            .map(|(i, s)| (s.as_str(), i as u32))
            .collect();
        for (file, occurrence) in missing {
            let symbol = &scip.symbols[occurrence.symbol as usize];
            let owner = scip::owner_of(symbol)
                .and_then(|o| symbol_ids.get(o))
                .and_then(|&o| symbol_node[o as usize])
                .filter(|&n| self.out.nodes[n as usize].file == Some(file));
            let parent = match (owner, self.facts(file)) {
                (Some(owner), _) => owner,
                (None, Some(facts)) => self.enclosing_node(file, facts, &occurrence.span),
                (None, None) => self.out.file_nodes[file as usize],
            };
            let name = scip::descriptor_name(symbol).to_string();
            let parent_node = &self.out.nodes[parent as usize];
            let qualified = if matches!(parent_node.kind, SymbolKind::File | SymbolKind::Module) {
                name.clone()
            } else {
                let separator = self.language(file).map_or(".", |l| l.separator());
                format!("{}{separator}{name}", parent_node.qualified)
            };
            let kind = scip.kinds[occurrence.symbol as usize].unwrap_or(SymbolKind::Variable);
            let kind = if kind == SymbolKind::Function && parent_node.kind.is_type_container() {
                SymbolKind::Method
            } else {
                kind
            };
            let id = self.out.nodes.len() as u32;
            self.out.nodes.push(ResolvedNode {
                kind,
                name: name.into(),
                qualified: qualified.into(),
                file: Some(file),
                span: occurrence.span,
                signature: occurrence.span,
                doc: None,
                parent: Some(parent),
                visibility: Visibility::Public,
                in_test_scope: false,
                declares_only: false,
                scip_symbol: Some(symbol.clone()),
            });
            self.contains(parent, id);
            symbol_node[occurrence.symbol as usize] = Some(id);
            merge.symbols_added += 1;
        }

        let mut precise_sites: HashSet<(u32, u32)> = HashSet::default();
        let mut new_edges = Vec::new();
        for reference in self.precise_references(scip, &symbol_node) {
            let Some(target) = reference.target else {
                merge.external_occurrences += 1;
                continue;
            };
            if target == reference.from && reference.kind != EdgeKind::Calls {
                continue;
            }
            precise_sites.insert((reference.file, reference.site.start_byte));
            new_edges.push(ResolvedEdge {
                from: reference.from,
                to: target,
                kind: reference.kind,
                subkind: reference.subkind,
                provenance: Provenance::Scip,
                resolution: Resolution::Precise,
                confidence: 100,
                site: Some(Site {
                    file: reference.file,
                    span: reference.site.into(),
                }),
                flags: if reference.kind == EdgeKind::Calls {
                    reference.flags
                } else {
                    0
                },
            });
        }
        let precise_pairs: HashSet<(u32, u32, EdgeKind)> =
            new_edges.iter().map(|e| (e.from, e.to, e.kind)).collect();
        // Relationships: implementations and type definitions (unless a reference at the
        // declaration already gave the same edge).
        let definition_site: HashMap<u32, (u32, Span)> = scip
            .documents
            .iter()
            .filter_map(|d| self.file_by_path.get(d.path.as_str()).map(|&f| (f, d)))
            .flat_map(|(f, d)| d.definitions.iter().map(move |o| (o.symbol, (f, o.span))))
            .collect();
        for relationship in &scip.relationships {
            let (Some(from), Some(to)) = (
                symbol_node[relationship.from as usize],
                symbol_node[relationship.to as usize],
            ) else {
                continue;
            };
            if from == to {
                continue;
            }
            let both_classes = self.out.nodes[from as usize].kind == SymbolKind::Class
                && self.out.nodes[to as usize].kind == SymbolKind::Class;
            let (kind, subkind) = match relationship.kind {
                RelationshipKind::Implementation if both_classes => {
                    (EdgeKind::Implements, EdgeSubkind::Extends)
                }
                RelationshipKind::Implementation => (EdgeKind::Implements, EdgeSubkind::None),
                RelationshipKind::TypeDefinition => (EdgeKind::UsesType, EdgeSubkind::None),
                RelationshipKind::Reference => (EdgeKind::References, EdgeSubkind::None),
            };
            if precise_pairs.contains(&(from, to, kind)) {
                continue;
            }
            let site = definition_site
                .get(&relationship.from)
                .map(|(file, span)| Site {
                    file: *file,
                    span: (*span).into(),
                });
            new_edges.push(ResolvedEdge {
                from,
                to,
                kind,
                subkind,
                provenance: Provenance::Scip,
                resolution: Resolution::Precise,
                confidence: 100,
                site,
                flags: 0,
            });
        }
        // A precise edge replaces the heuristic edges and frontier entries of its site.
        let before = self.edges.len();
        self.edges.retain(|e| {
            e.provenance == Provenance::Scip
                || matches!(e.kind, EdgeKind::Contains | EdgeKind::Imports)
                || !e
                    .site
                    .is_some_and(|s| precise_sites.contains(&(s.file, s.span.start_byte)))
        });
        merge.heuristic_edges_replaced = before - self.edges.len();
        // Heuristic implements edges duplicated by a precise one are replaced too.
        let precise_pairs: HashSet<(u32, u32, EdgeKind)> =
            new_edges.iter().map(|e| (e.from, e.to, e.kind)).collect();
        let before = self.edges.len();
        self.edges.retain(|e| {
            !(e.provenance == Provenance::TreeSitter
                && e.kind == EdgeKind::Implements
                && precise_pairs.contains(&(e.from, e.to, e.kind)))
        });
        merge.heuristic_edges_replaced += before - self.edges.len();
        let before = self.out.frontier.len();
        self.out
            .frontier
            .retain(|f| !precise_sites.contains(&(f.file, f.site.start_byte)));
        merge.frontier_resolved = before - self.out.frontier.len();
        merge.precise_edges = new_edges.len();
        self.edges.extend(new_edges);
        self.edges_settled = false;
        self.out.scip = Some(merge);
    }

    /// A call of class `C` and a call of `C`'s constructor are the same call.
    fn same_target(&self, heuristic: u32, precise: u32) -> bool {
        if heuristic == precise {
            return true;
        }
        let node = &self.out.nodes[precise as usize];
        let other = &self.out.nodes[heuristic as usize];
        // TypeScript declaration merging (`interface X` + `const X`) is one entity.
        if node.file == other.file && node.qualified == other.qualified {
            return true;
        }
        let constructor = matches!(
            &*node.name,
            "constructor" | "__init__" | "new" | "<constructor>"
        ) || node
            .parent
            .is_some_and(|p| self.out.nodes[p as usize].name == node.name);
        constructor && node.parent == Some(heuristic)
    }

    /// Precision and recall of heuristic call and reference edges at SCIP-covered sites.
    pub(super) fn evaluate(&self, scip: &ScipFacts) -> EdgeEvaluation {
        let (symbol_node, _) = self.map_definitions(scip);
        // Truth: site → target (None = a symbol outside the graph).
        let mut truth: HashMap<(u32, u32), (Option<u32>, Option<RefRole>)> = HashMap::default();
        for reference in self.precise_references(scip, &symbol_node) {
            if reference.kind == EdgeKind::Imports {
                continue;
            }
            truth.insert(
                (reference.file, reference.site.start_byte),
                (reference.target, reference.role),
            );
        }
        let mut evaluation = EdgeEvaluation::default();
        let mut found: HashSet<(u32, u32)> = HashSet::default();
        let mut false_sources: BTreeMap<(String, String, &'static str), usize> = BTreeMap::new();
        let mut missed: BTreeMap<String, usize> = BTreeMap::new();
        for edge in &self.edges {
            let family = match edge.kind {
                EdgeKind::Calls => "calls",
                EdgeKind::References | EdgeKind::UsesType => "references",
                _ => continue,
            };
            let Some(site) = edge.site else { continue };
            let key = (site.file, site.span.start_byte);
            let language = self.language(site.file).map_or("other", |l| l.as_str());
            let Some((target, _)) = truth.get(&key) else {
                evaluation
                    .bucket(language, family, edge.resolution)
                    .unjudged += 1;
                continue;
            };
            let bucket = evaluation.bucket(language, family, edge.resolution);
            if target.is_some_and(|t| self.same_target(edge.to, t)) {
                bucket.true_positives += 1;
                found.insert(key);
            } else {
                bucket.false_positives += 1;
                let name = self.out.nodes[edge.to as usize].name.to_string();
                let why = if target.is_none() {
                    "target outside graph"
                } else {
                    "other target"
                };
                *false_sources
                    .entry((edge.resolution.as_str().to_string(), name, why))
                    .or_default() += 1;
            }
        }
        for (key, (target, role)) in &truth {
            if target.is_none() {
                continue;
            }
            let family = if *role == Some(RefRole::Call) {
                "calls"
            } else {
                "references"
            };
            let language = self.language(key.0).map_or("other", |l| l.as_str());
            let totals = evaluation
                .truth
                .entry(format!("{language}/{family}"))
                .or_default();
            totals.0 += 1;
            if found.contains(key) {
                totals.1 += 1;
            } else if family == "calls"
                && let Some(target) = target
            {
                *missed
                    .entry(self.out.nodes[*target as usize].qualified.to_string())
                    .or_default() += 1;
            }
        }
        let mut missed: Vec<(String, usize)> = missed.into_iter().collect();
        missed.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        missed.truncate(15);
        evaluation.top_missed_calls = missed;
        let mut sources: Vec<FalseSource> = false_sources
            .into_iter()
            .map(|((resolution, target, reason), count)| FalseSource {
                resolution,
                target,
                reason,
                count,
            })
            .collect();
        sources.sort_by(|a, b| b.count.cmp(&a.count).then(a.target.cmp(&b.target)));
        sources.truncate(15);
        evaluation.top_false_sources = sources;
        evaluation.finish();
        evaluation
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Bucket {
    pub true_positives: usize,
    pub false_positives: usize,
    /// Heuristic edges at sites the SCIP index has no occurrence for.
    pub unjudged: usize,
    pub precision: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct FalseSource {
    pub resolution: String,
    pub target: String,
    pub reason: &'static str,
    pub count: usize,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    pub true_positives: usize,
    pub false_positives: usize,
    pub precise_edges: usize,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct EdgeEvaluation {
    /// `language/family/resolution` → counts.
    pub by_resolution: BTreeMap<String, Bucket>,
    /// `language/family` → precision, recall, F1.
    pub by_language: BTreeMap<String, Summary>,
    pub top_false_sources: Vec<FalseSource>,
    /// Precise call targets the heuristics missed most often.
    pub top_missed_calls: Vec<(String, usize)>,
    #[serde(skip)]
    truth: BTreeMap<String, (usize, usize)>,
}

impl EdgeEvaluation {
    fn bucket(&mut self, language: &str, family: &str, resolution: Resolution) -> &mut Bucket {
        self.by_resolution
            .entry(format!("{language}/{family}/{}", resolution.as_str()))
            .or_default()
    }

    fn finish(&mut self) {
        let round = |x: f64| (x * 1e4).round() / 1e4;
        for bucket in self.by_resolution.values_mut() {
            let judged = bucket.true_positives + bucket.false_positives;
            bucket.precision = if judged == 0 {
                1.0
            } else {
                round(bucket.true_positives as f64 / judged as f64)
            };
        }
        let mut keys: Vec<String> = self.truth.keys().cloned().collect();
        for key in self.by_resolution.keys() {
            let prefix = key
                .rsplit_once('/')
                .map_or(key.as_str(), |(p, _)| p)
                .to_string();
            keys.push(prefix);
        }
        keys.sort();
        keys.dedup();
        for key in keys {
            let (tp, fp) = self
                .by_resolution
                .iter()
                .filter(|(k, _)| k.rsplit_once('/').is_some_and(|(p, _)| p == key))
                .fold((0, 0), |(tp, fp), (_, b)| {
                    (tp + b.true_positives, fp + b.false_positives)
                });
            let (precise, found) = self.truth.get(&key).copied().unwrap_or((0, 0));
            let precision = if tp + fp == 0 {
                1.0
            } else {
                tp as f64 / (tp + fp) as f64
            };
            let recall = if precise == 0 {
                1.0
            } else {
                found as f64 / precise as f64
            };
            let f1 = if precision + recall == 0.0 {
                0.0
            } else {
                2.0 * precision * recall / (precision + recall)
            };
            self.by_language.insert(
                key,
                Summary {
                    precision: round(precision),
                    recall: round(recall),
                    f1: round(f1),
                    true_positives: tp,
                    false_positives: fp,
                    precise_edges: precise,
                },
            );
        }
    }
}
