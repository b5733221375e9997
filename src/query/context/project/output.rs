//! The shapes a context response is made of: evidence items (with their source,
//! relation and sites), omissions with their reasons and argv, diagnostics with their codes.

use super::*;

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SiteOut {
    pub path: String,
    pub line: u32,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct RelationOut {
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subkind: Option<&'static str>,
    pub from: String,
    pub to: String,
    pub provenance: &'static str,
    pub resolution: &'static str,
    pub confidence: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub site: Option<SiteOut>,
    /// The call names a base method; `to` is the implementation the flow continues in.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub dispatch: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SourceOut {
    /// 1-based, inclusive.
    pub lines: [u32; 2],
    pub text: String,
    /// The slice stops before the end of the symbol (lines-per-slice limit).
    pub clipped: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct EvidenceItem {
    pub id: String,
    pub class: EvidenceClass,
    pub score: u16,
    pub required: bool,
    pub reasons: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Declaration lines, 1-based inclusive.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<[u32; 2]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relation: Option<RelationOut>,
    /// Why a spine or alternative hop was taken.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Every site when the entry stands for several relations of one symbol (a callee
    /// called from nine lines), at most `MAX_SITES`; `site_count` counts them all.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sites: Vec<SiteOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub site_count: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub statement: Option<StatementOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<SourceOut>,
    /// `full`, `skeleton` (byte pruning), `policy-skeleton` (R-PROJ-6),
    /// `stale-skeleton` (R-PROJ-2) or `graph` (no source: modules, statements).
    pub projection: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<DiagnosticCode>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct StatementOut {
    pub code: &'static str,
    pub text: String,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct TopCandidate {
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    pub score: u16,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Omission {
    pub class: EvidenceClass,
    pub reason: OmissionReason,
    pub count: usize,
    pub top: TopCandidate,
    /// Literal argv that fetches what was omitted (argv[0] = `atlas`).
    pub argv: Vec<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Diagnostic {
    pub code: DiagnosticCode,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The other readings of an ambiguous name, each with the argv that asks for it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<Choice>,
}

/// Why a candidate was left out of the response (`omitted[].reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OmissionReason {
    /// Before the continuation cursor in the total order: an earlier page returned it or
    /// accounted for it (an earlier page's omissions are counted here again).
    AfterCursor,
    /// Scored under the profile's relevance threshold.
    BelowRelevance,
    /// Past the byte ceiling.
    ByteCeiling,
    /// Past the profile's per-class item cap (paths, slices).
    ItemCap,
    /// A body withheld by policy (generated or vendored files, R-PROJ-6).
    Policy,
    /// Past the retrieval cap: never scored.
    RetrievalCap,
    /// The file changed since the build; its slice cannot be trusted.
    SourceUnavailable,
}

impl OmissionReason {
    pub fn as_str(self) -> &'static str {
        match self {
            OmissionReason::AfterCursor => "after-cursor",
            OmissionReason::BelowRelevance => "below-relevance",
            OmissionReason::ByteCeiling => "byte-ceiling",
            OmissionReason::ItemCap => "item-cap",
            OmissionReason::Policy => "policy",
            OmissionReason::RetrievalCap => "retrieval-cap",
            OmissionReason::SourceUnavailable => "source-unavailable",
        }
    }
}

impl std::fmt::Display for OmissionReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The code of a non-fatal context diagnostic (`diagnostics[].code`, and per evidence item).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum DiagnosticCode {
    /// A name in a question had several readings; the best one anchored.
    #[serde(rename = "atlas-context-ambiguous")]
    Ambiguous,
    /// A file changed since the graph was built; its slice was not trusted.
    #[serde(rename = "atlas-context-stale-source")]
    StaleSource,
    /// A code-shaped term of the query matched nothing.
    #[serde(rename = "atlas-context-unused-term")]
    UnusedTerm,
    /// A ref's line lies past the end of its file (pasted from another version of it):
    /// the file anchored.
    #[serde(rename = "atlas-context-line-past-end")]
    LinePastEnd,
    /// Answered from a graph older than the working tree (`--frozen`).
    #[serde(rename = "atlas-context-stale-graph")]
    StaleGraph,
    /// The graph was rebuilt before answering.
    #[serde(rename = "atlas-context-refreshed")]
    Refreshed,
    /// The profile's default ceiling was raised by the query's own echoes (its `query`
    /// and continuation argv) so that the required evidence fits.
    #[serde(rename = "atlas-context-ceiling-raised")]
    CeilingRaised,
}

impl DiagnosticCode {
    pub fn as_str(self) -> &'static str {
        match self {
            DiagnosticCode::Ambiguous => "atlas-context-ambiguous",
            DiagnosticCode::StaleSource => "atlas-context-stale-source",
            DiagnosticCode::UnusedTerm => "atlas-context-unused-term",
            DiagnosticCode::LinePastEnd => "atlas-context-line-past-end",
            DiagnosticCode::StaleGraph => "atlas-context-stale-graph",
            DiagnosticCode::Refreshed => "atlas-context-refreshed",
            DiagnosticCode::CeilingRaised => "atlas-context-ceiling-raised",
        }
    }
}

impl std::fmt::Display for DiagnosticCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One candidate of an ambiguous name and the literal argv that names it alone.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Choice {
    pub symbol: String,
    pub argv: Vec<String>,
}
