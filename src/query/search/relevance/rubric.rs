//! The Jev score rubrics (R-J-5): versioned TOML data under `profiles/relevance/`,
//! embedded at compile time, rendered into the `instructions` and `criteria` of a System
//! One score question.

use serde::Deserialize;

use crate::config::Rubric;

#[derive(Debug, Clone, Deserialize)]
pub struct Level {
    pub what: String,
    pub examples: Vec<String>,
}

/// One rubric: its id (sent nowhere; recorded with judgements), the question's
/// instructions (`{id}` names the candidate) and its levels, lowest first.
#[derive(Debug, Clone, Deserialize)]
pub struct RubricText {
    pub id: String,
    pub version: u32,
    pub instructions: String,
    pub levels: Vec<Level>,
}

impl RubricText {
    /// The embedded rubric. The files are part of the binary and checked by a test, so a
    /// parse failure is a build defect; it still never panics a search (`None`).
    pub fn load(rubric: Rubric) -> Option<RubricText> {
        let text = match rubric {
            Rubric::V1 => include_str!("../../../../profiles/relevance/rubric-v1.toml"),
            Rubric::V2 => include_str!("../../../../profiles/relevance/rubric-v2.toml"),
        };
        toml::from_str::<RubricText>(text)
            .ok()
            .filter(|r| r.levels.len() >= 2)
    }

    /// The highest level: the scale runs from 0 to it (3 in v2, 2 in v1).
    pub fn scale(&self) -> f64 {
        (self.levels.len() - 1) as f64
    }

    /// The score question's `instructions` for candidate `id`.
    pub fn instructions(&self, id: &str) -> String {
        self.instructions.trim().replace("{id}", id)
    }

    /// The score question's `criteria`: one description per level, lowest first, each its
    /// `what` followed by its examples.
    pub fn criteria(&self) -> Vec<String> {
        self.levels
            .iter()
            .map(|level| {
                if level.examples.is_empty() {
                    level.what.clone()
                } else {
                    format!("{} Examples: {}.", level.what, level.examples.join("; "))
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_rubrics_load_with_their_levels() {
        let v2 = RubricText::load(Rubric::V2).unwrap();
        assert_eq!((v2.id.as_str(), v2.version), ("jev-relevance-score-v2", 2));
        assert_eq!(v2.scale(), 3.0);
        assert!(v2.levels.iter().all(|l| !l.examples.is_empty()));
        assert!(v2.instructions("c1").contains("`c1`"));
        assert!(v2.instructions("c1").contains("Portuguese"));
        let v1 = RubricText::load(Rubric::V1).unwrap();
        assert_eq!(
            (v1.id.as_str(), v1.scale()),
            ("jev-relevance-score-v1", 2.0)
        );
        assert_eq!(v1.criteria().len(), 3);
    }
}
