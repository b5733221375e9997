//! How a batch reaches an answer: the System One endpoint over HTTPS (ureq with rustls:
//! one shared deadline, redirects refused, the response capped), or a replay file; and
//! the record file that captures each batch for later replay.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::wire::{self, Answer, Batch, Evaluation, Refusal};
use crate::config::Secret;

/// One timeout shared by every call of a search (R-J-3).
pub const DEADLINE: Duration = Duration::from_secs(3);

/// What became of one batch.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A validated answer.
    Valid(Answer),
    /// The shared deadline passed.
    Timeout,
    /// An HTTP status other than 200 (a redirect is one: they are refused).
    Http(u16),
    /// The answer did not validate, or was larger than the cap.
    Invalid(Refusal),
    /// No connection or a broken one.
    Transport,
}

impl Outcome {
    /// The stable code reports and records carry.
    pub fn code(&self) -> String {
        match self {
            Outcome::Valid(_) => "valid".into(),
            Outcome::Timeout => "timeout".into(),
            Outcome::Http(status) if (300..400).contains(status) => "redirect_refused".into(),
            Outcome::Http(status) => format!("http_{status}"),
            Outcome::Invalid(refusal) => (*refusal).into(),
            Outcome::Transport => "transport_error".into(),
        }
    }
}

/// Sends `batch` to `url` and validates the answer, within what is left of `deadline`.
pub fn call(
    url: &str,
    key: &Secret,
    batch: &Batch,
    scale: f64,
    deadline: Instant,
    loopback: bool,
) -> Outcome {
    let Some(left) = deadline.checked_duration_since(Instant::now()) else {
        return Outcome::Timeout;
    };
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(left))
        .max_redirects(0)
        .http_status_as_error(false)
        .https_only(!loopback)
        .proxy(None)
        .user_agent(concat!("atlas/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let response = agent
        .post(url)
        .header("Authorization", &format!("Bearer {}", key.expose()))
        .header("Content-Type", "application/json")
        .send(&batch.body[..]);
    let mut response = match response {
        Ok(response) => response,
        Err(ureq::Error::Timeout(_)) => return Outcome::Timeout,
        Err(_) => return transport_or_timeout(deadline),
    };
    let status = response.status().as_u16();
    if status != 200 {
        return Outcome::Http(status);
    }
    let body = response
        .body_mut()
        .with_config()
        .limit(wire::MAX_RESPONSE_BYTES)
        .read_to_vec();
    // An answer that arrived after the shared deadline is a timeout, whatever the
    // connection's own timers allowed.
    if Instant::now() > deadline {
        return Outcome::Timeout;
    }
    match body {
        Ok(body) => match wire::validate(&body, &batch.ids, scale) {
            Ok(answer) => Outcome::Valid(answer),
            Err(refusal) => Outcome::Invalid(refusal),
        },
        Err(ureq::Error::BodyExceedsLimit(_)) => Outcome::Invalid("response_too_large"),
        Err(ureq::Error::Timeout(_)) => Outcome::Timeout,
        Err(_) => transport_or_timeout(deadline),
    }
}

/// A failure at or past the deadline is the deadline's (an I/O timeout surfaces as an
/// I/O error).
fn transport_or_timeout(deadline: Instant) -> Outcome {
    if Instant::now() + Duration::from_millis(20) >= deadline {
        Outcome::Timeout
    } else {
        Outcome::Transport
    }
}

/// One line of a record (and replay) file (graph-schema/README.md, "Relevance records").
/// It holds no query text, code, path or key: the query is a blake3 hash and candidates
/// are opaque ids.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Record {
    pub atlas_relevance_record: u32,
    /// blake3 of the query text, hex.
    pub query: String,
    /// The rubric id (`jev-relevance-score-v2`).
    pub rubric: String,
    /// Who judged: `live` (the endpoint) or `hand` (written by a person, never the model).
    pub source: String,
    pub model: Option<String>,
    pub batch: usize,
    pub ids: Vec<String>,
    /// `valid` or the failure code.
    pub outcome: String,
    /// Validated answers (empty unless `valid`).
    pub answers: std::collections::BTreeMap<String, Evaluation>,
    pub cost: Option<f64>,
}

pub const RECORD_VERSION: u32 = 1;

/// The query's key in records.
pub fn query_key(query: &str) -> String {
    blake3::hash(query.as_bytes()).to_hex().to_string()
}

/// Appends `records` to the record file (one write, so concurrent searches never
/// interleave within a line). A failure to record never fails the search: it is reported.
pub fn append_records(path: &Path, records: &[Record]) -> Result<(), &'static str> {
    let mut text = String::new();
    for record in records {
        text.push_str(&serde_json::to_string(record).map_err(|_| "record_unwritable")?);
        text.push('\n');
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|_| "record_unwritable")?;
    file.write_all(text.as_bytes())
        .map_err(|_| "record_unwritable")
}

/// A replay file's answers, by (query key, rubric id): the latest recorded answer of each
/// candidate id, and the failures recorded for exact id sets.
/// (query key, rubric id).
type ReplayKey = (String, String);
/// Candidate id → (evaluation, the model that made it).
type Recorded = HashMap<String, (Evaluation, Option<String>)>;

#[derive(Debug, Default)]
pub struct Replay {
    answers: HashMap<ReplayKey, Recorded>,
    failures: HashMap<(String, String, Vec<String>), String>,
}

impl Replay {
    /// Reads a replay file; lines that are not records of this version are skipped and
    /// counted.
    pub fn load(path: &Path) -> Result<(Replay, usize), &'static str> {
        // A regular file only: a FIFO or a device would block or never end.
        if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
            return Err("replay_unreadable");
        }
        let file = std::fs::File::open(path).map_err(|_| "replay_unreadable")?;
        let mut replay = Replay::default();
        let mut skipped = 0;
        for line in std::io::BufReader::new(file).lines() {
            let Ok(line) = line else {
                return Err("replay_unreadable");
            };
            if line.trim().is_empty() {
                continue;
            }
            let Ok(record) = serde_json::from_str::<Record>(&line) else {
                skipped += 1;
                continue;
            };
            if record.atlas_relevance_record != RECORD_VERSION {
                skipped += 1;
                continue;
            }
            let key = (record.query.clone(), record.rubric.clone());
            if record.outcome == "valid" {
                // The latest line wins: a later answer replaces an earlier failure.
                replay
                    .failures
                    .remove(&(key.0.clone(), key.1.clone(), record.ids.clone()));
                let known = replay.answers.entry(key).or_default();
                for (id, evaluation) in record.answers {
                    known.insert(id, (evaluation, record.model.clone()));
                }
            } else {
                replay
                    .failures
                    .insert((key.0, key.1, record.ids.clone()), record.outcome);
            }
        }
        Ok((replay, skipped))
    }

    /// The recorded answer to `batch`: a recorded failure of exactly these ids replays as
    /// that failure; otherwise the ids with a recorded answer are evaluated and the rest
    /// are not (returned as missing).
    pub fn answer(&self, query: &str, rubric: &str, batch: &Batch, scale: f64) -> (Outcome, usize) {
        let key = (query.to_string(), rubric.to_string());
        if let Some(code) = self
            .failures
            .get(&(key.0.clone(), key.1.clone(), batch.ids.clone()))
        {
            return (replayed_failure(code), 0);
        }
        let known = self.answers.get(&key);
        let mut evaluations = std::collections::BTreeMap::new();
        let mut model = None;
        for id in &batch.ids {
            // Recorded answers are validated as live ones are (range and confidence).
            if let Some((evaluation, recorded_model)) = known
                .and_then(|k| k.get(id))
                .filter(|(e, _)| (0.0..=scale).contains(&e.score))
                .filter(|(e, _)| (0.0..=1.0).contains(&e.confidence))
            {
                evaluations.insert(id.clone(), *evaluation);
                if model.is_none() {
                    model.clone_from(recorded_model);
                }
            }
        }
        let missing = batch.ids.len() - evaluations.len();
        if evaluations.is_empty() {
            return (Outcome::Invalid("replay_missing"), missing);
        }
        (
            Outcome::Valid(Answer {
                model: model.unwrap_or_else(|| "unknown".into()),
                evaluations,
                cost: Some(0.0),
            }),
            missing,
        )
    }
}

fn replayed_failure(code: &str) -> Outcome {
    if code == "timeout" {
        Outcome::Timeout
    } else if code == "transport_error" {
        Outcome::Transport
    } else if code == "redirect_refused" {
        Outcome::Http(307)
    } else if let Some(status) = code.strip_prefix("http_").and_then(|s| s.parse().ok()) {
        Outcome::Http(status)
    } else {
        Outcome::Invalid(match code {
            "invalid_json" => "invalid_json",
            "foreign_model" => "foreign_model",
            "ids_mismatch" => "ids_mismatch",
            "response_too_large" => "response_too_large",
            "score_out_of_range" => "score_out_of_range",
            "missing_model" => "missing_model",
            "missing_answers" => "missing_answers",
            "replay_missing" => "replay_missing",
            _ => "invalid_answer",
        })
    }
}
