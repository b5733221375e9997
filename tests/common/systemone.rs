//! A real HTTP server on 127.0.0.1 speaking the System One protocol from scripted answers,
//! for the Jev tests (issue 15): no mock of Atlas's code, only of the remote model. Each
//! request is recorded (path, headers, JSON body) so a test can assert what was sent.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

/// What the server answers one request with.
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Wait this long before answering (a slow model).
    pub delay: Duration,
}

impl Reply {
    pub fn json(value: &Value) -> Reply {
        Reply {
            status: 200,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: value.to_string().into_bytes(),
            delay: Duration::ZERO,
        }
    }

    pub fn status(status: u16, body: &str) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: body.as_bytes().to_vec(),
            delay: Duration::ZERO,
        }
    }

    pub fn after(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }
}

/// One request as received.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub authorization: Option<String>,
    pub body: Value,
    pub bytes: usize,
}

impl Received {
    /// The candidates of the request's state, in order.
    pub fn candidates(&self) -> Vec<Value> {
        self.body["state"]["candidates"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    pub fn ids(&self) -> Vec<String> {
        self.candidates()
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_string())
            .collect()
    }
}

type Script = dyn Fn(&Received) -> Reply + Send + Sync;

pub struct Server {
    pub port: u16,
    received: Arc<Mutex<Vec<Received>>>,
}

impl Server {
    /// Serves every request with `script` until the test process ends.
    pub fn start(script: impl Fn(&Received) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let port = listener.local_addr().unwrap().port();
        let received = Arc::new(Mutex::new(Vec::new()));
        let script: Arc<Script> = Arc::new(script);
        let log = Arc::clone(&received);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let script = Arc::clone(&script);
                let log = Arc::clone(&log);
                std::thread::spawn(move || serve(stream, &*script, &log));
            }
        });
        Server { port, received }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/api/v1/systemone", self.port)
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

fn serve(stream: TcpStream, script: &Script, log: &Mutex<Vec<Received>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(&stream);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("")
        .to_string();
    let (mut length, mut authorization) = (0usize, None);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).is_err() || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            let value = value.trim().to_string();
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = value.parse().unwrap_or(0),
                "authorization" => authorization = Some(value),
                _ => {}
            }
        }
    }
    let mut body = vec![0u8; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let received = Received {
        path,
        authorization,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        bytes: length,
    };
    log.lock().unwrap().push(received.clone());
    let reply = script(&received);
    std::thread::sleep(reply.delay);
    let mut head = format!(
        "HTTP/1.1 {} Scripted\r\nContent-Length: {}\r\nConnection: close\r\n",
        reply.status,
        reply.body.len()
    );
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut stream = &stream;
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&reply.body);
    let _ = stream.flush();
}

/// A valid answer scoring each sent candidate with `score(candidate)` → (score,
/// confidence).
pub fn answer(received: &Received, score: impl Fn(&Value) -> (f64, f64)) -> Value {
    let answers: serde_json::Map<String, Value> = received
        .candidates()
        .iter()
        .map(|c| {
            let (s, confidence) = score(c);
            (
                c["id"].as_str().unwrap().to_string(),
                json!({"type": "score", "score": s, "confidence": confidence,
                       "probabilities": {"0": 0.1, "1": 0.2, "2": 0.3, "3": 0.4}}),
            )
        })
        .collect();
    json!({
        "id": "gen-test",
        "model": "typesafe/jev-1.13-20260917",
        "provider": "TypeSafe",
        "answers": answers,
        "usage": {"cost": 0.00025, "input_tokens": 1000, "output_tokens": 20},
    })
}
