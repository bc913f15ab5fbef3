//! Webhook receivers for the tests: a small HTTP server that verifies every delivery with
//! the Standard Webhooks reference library (`standardwebhooks`, not Reftrack's own
//! signing) and keeps what it received, and TCP servers that misbehave (hang, close).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;

/// One message a receiver took in, its signature verified.
#[derive(Debug, Clone)]
pub struct Received {
    /// The `webhook-id`.
    pub id: String,
    /// The parsed body.
    pub body: Value,
    /// The raw body.
    pub raw: String,
}

/// How a receiver answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// 200 at once.
    Ok,
    /// 500 at once (the message is still kept, verified).
    Fail,
    /// 200 after this long.
    Slow(Duration),
}

#[derive(Clone)]
struct Shared {
    secret: Arc<Mutex<Option<String>>>,
    answer: Arc<Mutex<Answer>>,
    received: Arc<Mutex<Vec<Received>>>,
    bad: Arc<Mutex<Vec<String>>>,
}

/// A running receiver on `127.0.0.1`.
pub struct Receiver {
    /// `http://127.0.0.1:PORT/hook`.
    pub url: String,
    shared: Shared,
    task: tokio::task::JoinHandle<()>,
}

async fn take(State(s): State<Shared>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let secret = s.secret.lock().unwrap().clone();
    let verified = match &secret {
        Some(secret) => standardwebhooks::Webhook::new(secret)
            .map_err(|e| e.to_string())
            .and_then(|w| w.verify(&body, &headers).map_err(|e| e.to_string())),
        None => Err("the receiver has no secret yet".to_string()),
    };
    if let Err(e) = verified {
        s.bad.lock().unwrap().push(e);
        return StatusCode::UNAUTHORIZED;
    }
    let raw = String::from_utf8_lossy(&body).to_string();
    let id = headers["webhook-id"].to_str().unwrap().to_string();
    let parsed = serde_json::from_str(&raw).unwrap_or(Value::Null);
    s.received.lock().unwrap().push(Received {
        id,
        body: parsed,
        raw,
    });
    let answer = *s.answer.lock().unwrap();
    match answer {
        Answer::Ok => StatusCode::OK,
        Answer::Fail => StatusCode::INTERNAL_SERVER_ERROR,
        Answer::Slow(d) => {
            tokio::time::sleep(d).await;
            StatusCode::OK
        }
    }
}

impl Receiver {
    /// Starts a receiver answering `answer`, on `port` (0: any).
    pub async fn start_on(port: u16, answer: Answer) -> Receiver {
        let shared = Shared {
            secret: Arc::new(Mutex::new(None)),
            answer: Arc::new(Mutex::new(answer)),
            received: Arc::new(Mutex::new(Vec::new())),
            bad: Arc::new(Mutex::new(Vec::new())),
        };
        let listener = TcpListener::bind(("127.0.0.1", port)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = Router::new()
            .route("/hook", post(take))
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Receiver {
            url: format!("http://{addr}/hook"),
            shared,
            task,
        }
    }

    /// Starts a receiver answering `answer` on any port.
    pub async fn start(answer: Answer) -> Receiver {
        Self::start_on(0, answer).await
    }

    /// Verifies with `secret` from now on.
    pub fn set_secret(&self, secret: &str) {
        *self.shared.secret.lock().unwrap() = Some(secret.to_string());
    }

    /// Answers `answer` from now on.
    pub fn set_answer(&self, answer: Answer) {
        *self.shared.answer.lock().unwrap() = answer;
    }

    /// What it took in so far.
    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }

    /// The verification failures so far (none is expected).
    pub fn bad(&self) -> Vec<String> {
        self.shared.bad.lock().unwrap().clone()
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.url
            .trim_start_matches("http://127.0.0.1:")
            .trim_end_matches("/hook")
            .parse()
            .unwrap()
    }

    /// Stops listening.
    pub fn stop(&self) {
        self.task.abort();
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// How a misbehaving TCP server treats a connection.
#[derive(Debug, Clone, Copy)]
pub enum Misbehave {
    /// Reads the request and never answers.
    Hang,
    /// Closes the connection as soon as it arrives.
    Close,
}

/// A TCP server on `127.0.0.1` that misbehaves; returns its URL and its task.
pub async fn misbehaving(how: Misbehave) -> (String, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            match how {
                Misbehave::Close => drop(socket),
                Misbehave::Hang => {
                    let mut buf = [0u8; 4096];
                    let _ = socket.read(&mut buf).await;
                    held.push(socket);
                }
            }
        }
    });
    (format!("http://{addr}/hook"), task)
}
