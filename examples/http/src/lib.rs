//! Notes: an HTTP service in two tiers, written the usual way with axum
//! and hyper. A `store` node keeps notes in memory behind `PUT`/`GET
//! /kv/{key}`; any number of `api` nodes serve `PUT`/`GET /notes/{id}` to
//! clients and forward to the store with hyper's client, each request
//! under a timeout with a few retries.
//!
//! The only simulation-specific lines are the runtime glue hyper needs
//! (`tokio::hyper::{Executor, Timer, Connector, serve}` instead of
//! hyper-util's `TokioExecutor`, `TokioTimer`, `HttpConnector` and
//! `axum::serve`), which are real Tokio in production.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::client::legacy::Client;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::hyper::{Connector, Executor, Timer};
use tokio::net::TcpListener;
use tokio::time::{sleep, timeout};

/// hyper-util's pooled client, over this runtime.
pub type HttpClient = Client<Connector, Full<Bytes>>;

/// A client as a service builds one (its connections are pooled).
pub fn client() -> HttpClient {
    Client::builder(Executor)
        .timer(Timer)
        .pool_timer(Timer)
        .build(Connector)
}

type Notes = Arc<Mutex<BTreeMap<String, String>>>;

/// The store's routes: `PUT /kv/{key}` (the body is the value), `GET
/// /kv/{key}`.
pub fn store_app() -> Router {
    Router::new()
        .route("/kv/{key}", get(get_kv).put(put_kv))
        .with_state(Notes::default())
}

async fn put_kv(State(notes): State<Notes>, Path(key): Path<String>, body: String) -> StatusCode {
    notes.lock().unwrap().insert(key, body);
    StatusCode::NO_CONTENT
}

async fn get_kv(State(notes): State<Notes>, Path(key): Path<String>) -> Result<String, StatusCode> {
    notes
        .lock()
        .unwrap()
        .get(&key)
        .cloned()
        .ok_or(StatusCode::NOT_FOUND)
}

struct Api {
    client: HttpClient,
    /// `http://store:8080`
    store: String,
}

/// An api node's routes: `PUT /notes/{id}` (201 once the store has it,
/// 503 if it could not reach the store), `GET /notes/{id}`, `GET /health`.
pub fn api_app(store: &str) -> Router {
    let api = Arc::new(Api {
        client: client(),
        store: store.trim_end_matches('/').to_string(),
    });
    Router::new()
        .route("/notes/{id}", get(get_note).put(put_note))
        .route("/health", get(|| async { "ok" }))
        .with_state(api)
}

/// Attempts per forwarded request, and each one's timeout.
const ATTEMPTS: u32 = 3;
const ATTEMPT_TIMEOUT: Duration = Duration::from_millis(500);

async fn put_note(State(api): State<Arc<Api>>, Path(id): Path<String>, body: String) -> StatusCode {
    let uri = format!("{}/kv/{id}", api.store);
    for attempt in 0..ATTEMPTS {
        let request = Request::put(&uri)
            .body(Full::new(Bytes::from(body.clone())))
            .expect("a valid request");
        match timeout(ATTEMPT_TIMEOUT, api.client.request(request)).await {
            Ok(Ok(response)) if response.status().is_success() => return StatusCode::CREATED,
            Ok(Ok(response)) => tracing::warn!(%uri, status = %response.status(), "store refused"),
            Ok(Err(e)) => tracing::warn!(%uri, error = %e, "store unreachable"),
            Err(_) => tracing::warn!(%uri, "store timed out"),
        }
        sleep(Duration::from_millis(50 << attempt)).await;
    }
    StatusCode::SERVICE_UNAVAILABLE
}

async fn get_note(
    State(api): State<Arc<Api>>,
    Path(id): Path<String>,
) -> Result<String, StatusCode> {
    let uri = format!("{}/kv/{id}", api.store);
    for attempt in 0..ATTEMPTS {
        let request = Request::get(&uri)
            .body(Full::new(Bytes::new()))
            .expect("a valid request");
        if let Ok(Ok(response)) = timeout(ATTEMPT_TIMEOUT, api.client.request(request)).await {
            let status = response.status();
            let Ok(body) = response.into_body().collect().await else {
                continue;
            };
            return match status {
                StatusCode::OK => Ok(String::from_utf8_lossy(&body.to_bytes()).into_owned()),
                StatusCode::NOT_FOUND => Err(StatusCode::NOT_FOUND),
                _ => Err(StatusCode::BAD_GATEWAY),
            };
        }
        sleep(Duration::from_millis(50 << attempt)).await;
    }
    Err(StatusCode::SERVICE_UNAVAILABLE)
}

/// Runs the store on `listener`.
pub async fn run_store(listener: TcpListener) {
    tokio::hyper::serve(listener, store_app())
        .await
        .expect("the store's listener failed");
}

/// Runs an api node on `listener`, forwarding to `store`.
pub async fn run_api(listener: TcpListener, store: String) {
    tokio::hyper::serve(listener, api_app(&store))
        .await
        .expect("the api's listener failed");
}

/// A client's calls to an api node (`http://api1`), as the tests and a
/// command-line client make them.
pub struct NotesClient {
    http: HttpClient,
}

impl Default for NotesClient {
    fn default() -> Self {
        NotesClient { http: client() }
    }
}

/// What a call got back.
#[derive(Debug, PartialEq, Eq)]
pub enum Reply {
    Status(StatusCode, String),
    /// No HTTP answer: connection refused or reset, or the timeout.
    NoAnswer,
}

impl NotesClient {
    pub async fn put(&self, api: &str, id: &str, text: &str) -> Reply {
        let request = Request::put(format!("{api}/notes/{id}"))
            .body(Full::new(Bytes::from(text.to_string())))
            .expect("a valid request");
        self.call(request).await
    }

    pub async fn get(&self, api: &str, id: &str) -> Reply {
        let request = Request::get(format!("{api}/notes/{id}"))
            .body(Full::new(Bytes::new()))
            .expect("a valid request");
        self.call(request).await
    }

    async fn call(&self, request: Request<Full<Bytes>>) -> Reply {
        let call = async {
            let response = self.http.request(request).await.ok()?;
            let status = response.status();
            let body = response.into_body().collect().await.ok()?.to_bytes();
            Some(Reply::Status(
                status,
                String::from_utf8_lossy(&body).into_owned(),
            ))
        };
        timeout(Duration::from_secs(3), call)
            .await
            .ok()
            .flatten()
            .unwrap_or(Reply::NoAnswer)
    }
}
