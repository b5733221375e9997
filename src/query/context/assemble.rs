//! The response document: a projection plus the intent, receipt and omission manifest
//! around it (the JSON contract, graph-schema/context.schema.json).

use super::*;

/// What a context response is assembled from besides its projection.
pub(super) struct Assembly<'a> {
    pub(super) request: &'a ContextRequest,
    pub(super) fingerprint: &'a str,
    pub(super) limits: &'a Limits,
    pub(super) profile: &'a Profile,
    pub(super) graph: &'a Graph,
    pub(super) intent: &'a Intent,
    pub(super) diagnostics: &'a [Diagnostic],
    pub(super) paths_traversed: usize,
    pub(super) refreshed: bool,
}

impl Assembly<'_> {
    /// The omission manifest of `projection`, for `output`.
    pub(super) fn omissions(&self, projection: &project::Projection) -> Vec<Omission> {
        projection.omissions(self.graph, self.request, self.fingerprint, self.limits)
    }

    /// The response for `projection` and its `omissions`, with `timings` and
    /// `serialized_bytes` as given.
    pub(super) fn output(
        &self,
        projection: &project::Projection,
        omissions: Vec<Omission>,
        timings: TimingsOut,
        serialized_bytes: usize,
    ) -> ContextOutput {
        let counters = &projection.counters;
        let mut truncated_classes: Vec<&'static str> =
            omissions.iter().map(|o| o.class.as_str()).collect();
        truncated_classes.sort_unstable();
        truncated_classes.dedup();
        let eligible = counters.total - counters.cursor_prefix;
        let retained = projection.retained();
        let heavy_paths = self.paths_traversed > 4;
        let heavy_slices = counters.slices_read > 4;
        let load_profile = match (heavy_paths, heavy_slices) {
            (false, false) => "light",
            (true, false) => "traversal",
            (false, true) => "source-heavy",
            (true, true) => "mixed",
        };
        let ratio = |a: usize, b: usize| {
            if b == 0 {
                1.0
            } else {
                (a as f64 / b as f64 * 1e4).round() / 1e4
            }
        };
        let spine = projection
            .evidence
            .iter()
            .filter(|e| e.class == EvidenceClass::Spine)
            .map(|e| SpineStep {
                id: e.id.clone(),
                symbol: e.symbol.clone().unwrap_or_default(),
                via: e.relation.clone(),
                why: e.why.clone().unwrap_or_default(),
            })
            .collect();
        let mut all_diagnostics = self.diagnostics.to_vec();
        all_diagnostics.extend(projection.diagnostics.iter().cloned());
        ContextOutput {
            schema: SCHEMA,
            query: self.request.query.clone(),
            profile: self.request.profile.as_str().to_string(),
            graph: GraphOut {
                fingerprint: self.fingerprint.to_string(),
                refreshed: self.refreshed,
            },
            intent: IntentOut {
                anchors: self
                    .intent
                    .anchors
                    .iter()
                    .map(|a| AnchorOut::of(self.graph, a))
                    .collect(),
                relations: self.intent.relations.iter().map(|r| r.as_str()).collect(),
                free_terms: self.intent.free_terms.clone(),
                alternative: self
                    .intent
                    .alternative
                    .as_ref()
                    .map(|a| AnchorOut::of(self.graph, a)),
            },
            spine,
            evidence: projection.evidence.clone(),
            receipt: Receipt {
                profile: ProfileOut {
                    name: self.profile.name.clone(),
                    version: self.profile.version,
                },
                limits: self.limits.clone(),
                retrieval: RetrievalReceipt {
                    total: counters.total,
                    eligible,
                    returned: counters.returned,
                    cursor_prefix: counters.cursor_prefix,
                    hard_cap: self.limits.retrieval_cap,
                    coverage: ratio(counters.returned, eligible),
                },
                projection: ProjectionReceipt {
                    above_relevance: counters.above_relevance,
                    retained,
                    below_threshold: counters.below_threshold,
                    byte_omitted: counters.byte_omitted,
                    item_capped: counters.item_capped,
                    cursor_prefix: counters.cursor_prefix,
                    skeletonized: counters.skeletonized,
                    policy_skeletonized: counters.policy_skeletonized,
                    source_unavailable: counters.source_unavailable,
                    retention: ratio(retained, counters.above_relevance),
                },
                serialized_bytes,
                truncated_classes,
                graph_fingerprint: self.fingerprint.to_string(),
                read_back_required: counters.read_back_required,
                follow_ups: omissions.len(),
                load_profile,
                paths_traversed: self.paths_traversed,
                slices_read: counters.slices_read,
                refreshed: self.refreshed,
                timings_ms: timings,
            },
            omissions,
            diagnostics: all_diagnostics,
        }
    }
}
