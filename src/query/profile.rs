//! Query profiles (R-Q-3): versioned TOML files in `profiles/`, embedded at compile time
//! and validated when loaded.

use serde::Deserialize;

use crate::error::{AtlasError, Result};

/// What a piece of evidence is (R-Q-4); profiles rank them (`class_rank`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EvidenceClass {
    Declaration,
    Failure,
    Implementation,
    Caller,
    Callee,
    Reference,
    TypeUse,
    Member,
    Frontier,
    Spine,
    RuntimeBoundary,
    Alternative,
    Module,
    ModuleRelation,
    Representative,
    Dependent,
    ReversePath,
    AffectedModule,
    SearchHit,
}

impl EvidenceClass {
    pub const ALL: [EvidenceClass; 19] = [
        EvidenceClass::Declaration,
        EvidenceClass::Failure,
        EvidenceClass::Implementation,
        EvidenceClass::Caller,
        EvidenceClass::Callee,
        EvidenceClass::Reference,
        EvidenceClass::TypeUse,
        EvidenceClass::Member,
        EvidenceClass::Frontier,
        EvidenceClass::Spine,
        EvidenceClass::RuntimeBoundary,
        EvidenceClass::Alternative,
        EvidenceClass::Module,
        EvidenceClass::ModuleRelation,
        EvidenceClass::Representative,
        EvidenceClass::Dependent,
        EvidenceClass::ReversePath,
        EvidenceClass::AffectedModule,
        EvidenceClass::SearchHit,
    ];

    /// The name in JSON, text, evidence ids and profiles.
    pub fn as_str(self) -> &'static str {
        match self {
            EvidenceClass::Declaration => "declaration",
            EvidenceClass::Failure => "failure",
            EvidenceClass::Implementation => "implementation",
            EvidenceClass::Caller => "caller",
            EvidenceClass::Callee => "callee",
            EvidenceClass::Reference => "reference",
            EvidenceClass::TypeUse => "type-use",
            EvidenceClass::Member => "member",
            EvidenceClass::Frontier => "frontier",
            EvidenceClass::Spine => "spine",
            EvidenceClass::RuntimeBoundary => "runtime-boundary",
            EvidenceClass::Alternative => "alternative",
            EvidenceClass::Module => "module",
            EvidenceClass::ModuleRelation => "module-relation",
            EvidenceClass::Representative => "representative",
            EvidenceClass::Dependent => "dependent",
            EvidenceClass::ReversePath => "reverse-path",
            EvidenceClass::AffectedModule => "affected-module",
            EvidenceClass::SearchHit => "search-hit",
        }
    }

    pub fn parse(name: &str) -> Option<EvidenceClass> {
        EvidenceClass::ALL.into_iter().find(|c| c.as_str() == name)
    }
}

impl std::fmt::Display for EvidenceClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for EvidenceClass {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub name: String,
    pub version: u32,
    pub description: String,
    pub retrieval_cap: usize,
    pub max_paths: usize,
    pub max_slices: usize,
    pub lines_per_slice: u32,
    pub max_bytes: usize,
    pub min_score: u16,
    /// Class names as written; `parse` checks each names an `EvidenceClass`.
    pub class_rank: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProfileName {
    Symbol,
    Flow,
    Architecture,
    Impact,
}

impl ProfileName {
    pub fn as_str(self) -> &'static str {
        match self {
            ProfileName::Symbol => "symbol",
            ProfileName::Flow => "flow",
            ProfileName::Architecture => "architecture",
            ProfileName::Impact => "impact",
        }
    }

    /// The profile named `name` (the command line's spelling).
    pub fn parse(name: &str) -> Option<ProfileName> {
        [
            ProfileName::Symbol,
            ProfileName::Flow,
            ProfileName::Architecture,
            ProfileName::Impact,
        ]
        .into_iter()
        .find(|p| p.as_str() == name)
    }

    fn source(self) -> &'static str {
        match self {
            ProfileName::Symbol => include_str!("../../profiles/symbol.toml"),
            ProfileName::Flow => include_str!("../../profiles/flow.toml"),
            ProfileName::Architecture => include_str!("../../profiles/architecture.toml"),
            ProfileName::Impact => include_str!("../../profiles/impact.toml"),
        }
    }

    /// The embedded profile, parsed once per process (a warm daemon answers thousands of
    /// queries; parsing its TOML took 1% of a question's time there).
    pub fn load(self) -> Result<Profile> {
        type Parsed = std::sync::OnceLock<Result<Profile, String>>;
        static SYMBOL: Parsed = Parsed::new();
        static FLOW: Parsed = Parsed::new();
        static ARCHITECTURE: Parsed = Parsed::new();
        static IMPACT: Parsed = Parsed::new();
        let parsed = match self {
            ProfileName::Symbol => &SYMBOL,
            ProfileName::Flow => &FLOW,
            ProfileName::Architecture => &ARCHITECTURE,
            ProfileName::Impact => &IMPACT,
        };
        parsed
            .get_or_init(|| parse_or_why(self.source(), self.as_str()))
            .clone()
            .map_err(|reason| AtlasError::InvalidInput {
                what: "profile",
                reason,
            })
    }
}

/// The profile `text`, or why it is not a valid profile named `expected_name`.
fn parse_or_why(text: &str, expected_name: &str) -> Result<Profile, String> {
    let profile: Profile = toml::from_str(text).map_err(|e| format!("{expected_name}: {e}"))?;
    if profile.name != expected_name {
        return Err(format!(
            "file for {expected_name} names itself {}",
            profile.name
        ));
    }
    for class in &profile.class_rank {
        if EvidenceClass::parse(class).is_none() {
            return Err(format!("{expected_name}: unknown evidence class `{class}`"));
        }
    }
    Ok(profile)
}

impl Profile {
    /// Rank of an evidence class in this profile (unranked classes sort last).
    pub fn class_rank(&self, class: EvidenceClass) -> usize {
        self.class_rank
            .iter()
            .position(|c| c == class.as_str())
            .unwrap_or(self.class_rank.len())
    }

    /// Every class's `class_rank`, indexed by `class as usize` (`EvidenceClass::ALL` is
    /// in declaration order: `every_class_is_in_all_at_its_own_index`): a hub's thousands
    /// of candidates each read their rank, which `class_rank` finds by comparing names.
    pub fn class_ranks(&self) -> [usize; EvidenceClass::ALL.len()] {
        EvidenceClass::ALL.map(|class| self.class_rank(class))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_is_in_all_at_its_own_index() {
        // Tables indexed by `class as usize` are built from `ALL` (a class past its end
        // falls back to a lookup by name).
        for (index, class) in EvidenceClass::ALL.into_iter().enumerate() {
            assert_eq!(class as usize, index, "{class}");
        }
    }

    #[test]
    fn embedded_profiles_load_with_spec_limits() {
        let expected = [
            (ProfileName::Symbol, 256, 8, 8, 32, 16000, 300),
            (ProfileName::Flow, 384, 16, 16, 48, 32000, 250),
            (ProfileName::Architecture, 512, 8, 8, 32, 24000, 200),
            (ProfileName::Impact, 384, 16, 12, 40, 24000, 250),
        ];
        for (name, cap, paths, slices, lines, bytes, score) in expected {
            let p = name.load().unwrap();
            assert_eq!(
                (
                    p.retrieval_cap,
                    p.max_paths,
                    p.max_slices,
                    p.lines_per_slice,
                    p.max_bytes,
                    p.min_score
                ),
                (cap, paths, slices, lines, bytes, score),
                "{}",
                p.name
            );
            assert_eq!(p.version, 1);
        }
    }

    #[test]
    fn unknown_classes_and_fields_are_rejected() {
        let bad = include_str!("../../profiles/symbol.toml").replace("\"caller\"", "\"callr\"");
        assert!(parse_or_why(&bad, "symbol").unwrap_err().contains("callr"));
        let extra = format!(
            "{}\nsurprise = 1\n",
            include_str!("../../profiles/symbol.toml")
        );
        assert!(parse_or_why(&extra, "symbol").is_err());
    }
}
