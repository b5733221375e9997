//! The System One wire format (R-J-3/4): requests cut into batches of at most
//! `MAX_REQUEST_BYTES`, and strict validation of an answer.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::rubric::RubricText;

/// A request's largest size in UTF-8 bytes (R-J-3).
pub const MAX_REQUEST_BYTES: usize = 192_000;
/// A response's largest size; a longer body invalidates its batch (R-J-3).
pub const MAX_RESPONSE_BYTES: u64 = 256 * 1024;
/// A candidate's content is cut to this many characters.
pub const MAX_CONTENT_CHARS: usize = 2000;
/// At most this many calls per search: the second only on overflow.
pub const MAX_BATCHES: usize = 2;

/// One candidate as the model sees it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct WireCandidate {
    pub id: String,
    pub path: String,
    pub symbol: String,
    pub kind: String,
    pub language: String,
    pub content: String,
}

#[derive(Serialize)]
struct State<'a> {
    query: &'a str,
    candidates: &'a [&'a WireCandidate],
}

#[derive(Serialize)]
struct Question<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    instructions: String,
    criteria: &'a [String],
}

#[derive(Serialize)]
struct Request<'a> {
    model: &'a str,
    state: State<'a>,
    questions: BTreeMap<&'a str, Question<'a>>,
}

/// One call's body and the ids it carries, in pool order.
#[derive(Debug, Clone)]
pub struct Batch {
    pub ids: Vec<String>,
    pub body: Vec<u8>,
}

fn encode(
    model: &str,
    query: &str,
    rubric: &RubricText,
    criteria: &[String],
    candidates: &[&WireCandidate],
) -> Vec<u8> {
    let request = Request {
        model,
        state: State { query, candidates },
        questions: candidates
            .iter()
            .map(|c| {
                (
                    c.id.as_str(),
                    Question {
                        kind: "score",
                        instructions: rubric.instructions(&c.id),
                        criteria,
                    },
                )
            })
            .collect(),
    };
    serde_json::to_vec(&request).unwrap_or_default()
}

/// The pool in order, cut into at most `MAX_BATCHES` requests of at most
/// `MAX_REQUEST_BYTES` each; returns the batches and how many candidates were not sent
/// (beyond the last batch, or too large alone).
pub fn batches(
    model: &str,
    query: &str,
    rubric: &RubricText,
    pool: &[WireCandidate],
) -> (Vec<Batch>, usize) {
    let criteria = rubric.criteria();
    // A request's size is its empty form plus, per candidate, its state entry and its
    // question entry (`"id":{…}`), with a comma between entries of each list: exact,
    // escapes included, and linear in the pool.
    let empty = encode(model, query, rubric, &criteria, &[]).len();
    let cost = |c: &WireCandidate| {
        let question = Question {
            kind: "score",
            instructions: rubric.instructions(&c.id),
            criteria: &criteria,
        };
        serde_json::to_vec(c).map_or(usize::MAX / 4, |v| v.len())
            + serde_json::to_vec(&c.id).map_or(usize::MAX / 4, |v| v.len())
            + 1
            + serde_json::to_vec(&question).map_or(usize::MAX / 4, |v| v.len())
    };
    let mut groups: Vec<Vec<&WireCandidate>> = Vec::new();
    let mut current: Vec<&WireCandidate> = Vec::new();
    let mut size = empty;
    let mut not_sent = 0;
    for (index, candidate) in pool.iter().enumerate() {
        let entry = cost(candidate);
        let separators = if current.is_empty() { 0 } else { 2 };
        if size + entry + separators <= MAX_REQUEST_BYTES {
            size += entry + separators;
            current.push(candidate);
            continue;
        }
        if empty + entry > MAX_REQUEST_BYTES {
            not_sent += 1;
            continue;
        }
        if groups.len() + 1 == MAX_BATCHES {
            // The last batch is full: the rest of the pool keeps its local order.
            not_sent += pool.len() - index;
            break;
        }
        groups.push(std::mem::take(&mut current));
        current.push(candidate);
        size = empty + entry;
    }
    if !current.is_empty() {
        groups.push(current);
    }
    let batches = groups
        .into_iter()
        .map(|group| Batch {
            ids: group.iter().map(|c| c.id.clone()).collect(),
            body: encode(model, query, rubric, &criteria, &group),
        })
        .collect();
    (batches, not_sent)
}

/// One candidate's validated evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct Evaluation {
    pub score: f64,
    pub confidence: f64,
}

/// A validated answer to one batch.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub model: String,
    pub evaluations: BTreeMap<String, Evaluation>,
    /// `usage.cost` in USD, when the answer carried it.
    pub cost: Option<f64>,
}

/// Why a batch's answer was refused (a stable code; never the body's text).
pub type Refusal = &'static str;

/// Strict validation (R-J-4): JSON with a Jev `model`, `answers` whose ids are exactly
/// `ids`, each a score answer within `0..=scale` with a confidence in `0..=1`.
pub fn validate(body: &[u8], ids: &[String], scale: f64) -> Result<Answer, Refusal> {
    let value: Value = serde_json::from_slice(body).map_err(|_| "invalid_json")?;
    let object = value.as_object().ok_or("invalid_json")?;
    let model = object
        .get("model")
        .and_then(Value::as_str)
        .ok_or("missing_model")?;
    if !crate::config::is_jev_model(model) {
        return Err("foreign_model");
    }
    let answers = object
        .get("answers")
        .and_then(Value::as_object)
        .ok_or("missing_answers")?;
    if answers.len() != ids.len() || ids.iter().any(|id| !answers.contains_key(id)) {
        return Err("ids_mismatch");
    }
    let mut evaluations = BTreeMap::new();
    for (id, answer) in answers {
        let number = |field: &str| answer.get(field).and_then(Value::as_f64);
        let kind = answer.get("type").and_then(Value::as_str);
        let (Some("score"), Some(score), Some(confidence)) =
            (kind, number("score"), number("confidence"))
        else {
            return Err("invalid_answer");
        };
        let in_range = (0.0..=scale).contains(&score) && (0.0..=1.0).contains(&confidence);
        if !in_range {
            return Err("score_out_of_range");
        }
        evaluations.insert(id.clone(), Evaluation { score, confidence });
    }
    let cost = object
        .get("usage")
        .and_then(|u| u.get("cost"))
        .and_then(Value::as_f64)
        // A cost beyond any real call (or not finite) is not trusted: unknown.
        .filter(|c| (0.0..=1000.0).contains(c));
    Ok(Answer {
        model: model.to_string(),
        evaluations,
        cost,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Rubric;

    fn candidate(i: usize, content: usize) -> WireCandidate {
        WireCandidate {
            id: format!("c{i}"),
            path: "src/a.py".into(),
            symbol: format!("f{i}"),
            kind: "function".into(),
            language: "python".into(),
            content: "x".repeat(content),
        }
    }

    #[test]
    fn a_small_pool_is_one_batch_and_a_large_one_overflows_into_a_second() {
        let rubric = RubricText::load(Rubric::V2).unwrap();
        let pool: Vec<_> = (0..10).map(|i| candidate(i, 100)).collect();
        let (small, not_sent) = super::batches("~typesafe/jev-latest", "q", &rubric, &pool);
        assert_eq!((small.len(), not_sent), (1, 0));
        assert_eq!(small[0].ids.len(), 10);
        let pool: Vec<_> = (0..120).map(|i| candidate(i, 2000)).collect();
        let (batches, not_sent) = super::batches("~typesafe/jev-latest", "q", &rubric, &pool);
        assert_eq!(batches.len(), 2);
        assert!(batches.iter().all(|b| b.body.len() <= MAX_REQUEST_BYTES));
        // The size arithmetic is exact: the first batch is what encoding says, and one
        // more candidate would not have fitted.
        let n = batches[0].ids.len();
        let criteria = rubric.criteria();
        let first: Vec<&WireCandidate> = pool[..n].iter().collect();
        let model = "~typesafe/jev-latest";
        assert_eq!(
            batches[0].body,
            encode(model, "q", &rubric, &criteria, &first)
        );
        let more: Vec<&WireCandidate> = pool[..=n].iter().collect();
        assert!(encode(model, "q", &rubric, &criteria, &more).len() > MAX_REQUEST_BYTES);
        let sent: usize = batches.iter().map(|b| b.ids.len()).sum();
        assert_eq!(sent + not_sent, 120);
        assert!(not_sent > 0, "three batches' worth of candidates");
        // Pool order is kept across batches.
        assert_eq!(batches[1].ids[0], format!("c{}", batches[0].ids.len()));
    }

    #[test]
    fn validation_is_strict() {
        let ids = vec!["a".to_string(), "b".to_string()];
        let ok = br#"{"id":"r","model":"typesafe/jev-1.13-20260917","provider":"TypeSafe",
            "answers":{"a":{"type":"score","score":2.5,"confidence":0.9},
                       "b":{"type":"score","score":0.1,"confidence":0.5,"probabilities":{"0":0.9}}},
            "usage":{"cost":0.0004,"input_tokens":10,"output_tokens":2}}"#;
        let answer = validate(ok, &ids, 3.0).unwrap();
        assert_eq!(answer.evaluations["a"].score, 2.5);
        assert_eq!(answer.cost, Some(0.0004));
        let cases: [(&[u8], &str); 6] = [
            (b"not json", "invalid_json"),
            (br#"{"model":"openai/gpt-4o","answers":{}}"#, "foreign_model"),
            (
                br#"{"model":"typesafe/jev-latest","answers":{"a":{"type":"score","score":1,"confidence":1}}}"#,
                "ids_mismatch",
            ),
            (
                br#"{"model":"typesafe/jev-latest","answers":{"a":{"type":"score","score":1,"confidence":1},"c":{"type":"score","score":1,"confidence":1}}}"#,
                "ids_mismatch",
            ),
            (
                br#"{"model":"typesafe/jev-latest","answers":{"a":{"type":"score","score":4,"confidence":1},"b":{"type":"score","score":1,"confidence":1}}}"#,
                "score_out_of_range",
            ),
            (
                br#"{"model":"typesafe/jev-latest","answers":{"a":{"type":"choice","score":1,"confidence":1},"b":{"type":"score","score":1,"confidence":1}}}"#,
                "invalid_answer",
            ),
        ];
        for (body, refusal) in cases {
            assert_eq!(validate(body, &ids, 3.0).unwrap_err(), refusal);
        }
    }
}
