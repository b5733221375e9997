//! The response document: a projection plus the intent, receipt and omission manifest
//! around it (the JSON contract, graph-schema/context.schema.json).

use super::*;

/// What a context response is assembled from besides its projection.
#[derive(Clone, Copy)]
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
        ContextOutput {
            evidence: projection.evidence.clone(),
            ..self.frame(projection, omissions, timings, serialized_bytes)
        }
    }

    /// `output` with an empty evidence array: what a length is measured on without the
    /// items (`fitted_length`).
    pub(super) fn frame(
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
            evidence: Vec::new(),
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

/// The length of a compact JSON document whose evidence array holds items of
/// `item_lengths`, from the length of its `frame` (the same document, that array empty):
/// compact JSON joins array members with one comma and nothing else, so no item changes
/// with what surrounds it.
pub(super) fn fitted_length(frame: usize, item_lengths: &[usize]) -> usize {
    frame + item_lengths.iter().sum::<usize>() + item_lengths.len().saturating_sub(1)
}

/// The `serialized_bytes` that a document counts itself with, when it is `length_at_zero`
/// long with the count rendered as `0`: the count's own digits are part of the length.
pub(super) fn self_counted_length(length_at_zero: usize) -> usize {
    let digits = |n: usize| n.checked_ilog10().map_or(1, |d| d as usize + 1);
    // x = length_at_zero - 1 + digits(x) holds for exactly one digit count.
    (1..=20)
        .map(|d| length_at_zero.saturating_sub(1) + d)
        .find(|&x| digits(x) == x - length_at_zero.saturating_sub(1))
        .unwrap_or(length_at_zero)
}

#[cfg(test)]
mod tests {
    use super::{fitted_length, self_counted_length};

    #[test]
    fn a_fitted_length_is_the_rendered_length() {
        let items = [
            serde_json::json!({"id": "ev-a", "text": "line \"one\"\n\ttwo"}),
            serde_json::json!({"id": "ev-b", "lines": [1, 2], "note": null}),
            serde_json::json!({"id": "ev-c", "text": "ünïcødé → ok"}),
        ];
        for n in 0..=items.len() {
            let whole = serde_json::json!({"a": 1, "evidence": &items[..n], "z": "x"});
            let frame = serde_json::json!({"a": 1, "evidence": [], "z": "x"});
            let lengths: Vec<usize> = items[..n]
                .iter()
                .map(|i| serde_json::to_string(i).unwrap().len())
                .collect();
            assert_eq!(
                fitted_length(serde_json::to_string(&frame).unwrap().len(), &lengths),
                serde_json::to_string(&whole).unwrap().len(),
                "{n} items"
            );
        }
    }

    #[test]
    fn a_self_counted_length_counts_its_own_digits() {
        // A document `length_at_zero` long with the count written `0`.
        for length_at_zero in [1, 2, 9, 10, 11, 98, 99, 100, 997, 998, 999, 15_447, 99_996] {
            let counted = self_counted_length(length_at_zero);
            assert_eq!(
                counted,
                length_at_zero - 1 + counted.to_string().len(),
                "{length_at_zero}"
            );
        }
    }
}
