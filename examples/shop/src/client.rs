//! The shop's HTTP client (reqwest): what a caller of orders and shipping
//! uses, by host name (`http://orders:8080`).

use std::time::Duration;

/// How placing an order ended, as the client saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placed {
    /// `201`: sold, final.
    Confirmed,
    /// `409`: not enough stock, final (the order id is spent).
    OutOfStock,
    /// No final answer (a timeout, a `503`, a refused connection): the
    /// order may or may not be sold. Placing it again says.
    Unknown(String),
}

/// A client of one service's HTTP API.
#[derive(Clone, Debug)]
pub struct Client {
    http: reqwest::Client,
    base: String,
}

impl Client {
    /// A client of `base` (`http://orders:8080`), each request given up
    /// after 1 s.
    pub fn new(base: &str) -> Client {
        Client::with_timeout(base, Duration::from_secs(1))
    }

    /// A client of `base` whose requests give up after `timeout`.
    pub fn with_timeout(base: &str, timeout: Duration) -> Client {
        Client {
            http: reqwest::Client::builder()
                .timeout(timeout)
                .build()
                .expect("a reqwest client without TLS always builds"),
            base: base.trim_end_matches('/').to_string(),
        }
    }

    /// Places order `id` for `lines` (`apple:2 pear:1`) once.
    pub async fn place_once(&self, id: &str, lines: &str) -> Placed {
        let url = format!("{}/orders/{id}", self.base);
        match self.http.put(url).body(lines.to_string()).send().await {
            Ok(r) => {
                let status = r.status();
                let text = r.text().await.unwrap_or_default();
                match status.as_u16() {
                    201 => Placed::Confirmed,
                    409 => Placed::OutOfStock,
                    _ => Placed::Unknown(format!("{status} {text}")),
                }
            }
            Err(e) => Placed::Unknown(e.to_string()),
        }
    }

    /// Places order `id`, again with the same id while the answer is
    /// unknown, at most `attempts` times, `backoff` apart.
    pub async fn place(&self, id: &str, lines: &str, attempts: u32, backoff: Duration) -> Placed {
        let mut last = Placed::Unknown("no attempt".into());
        for attempt in 0..attempts {
            if attempt > 0 {
                tokio::time::sleep(backoff).await;
            }
            last = self.place_once(id, lines).await;
            if !matches!(last, Placed::Unknown(_)) {
                break;
            }
        }
        last
    }

    /// `GET path` on the service: its status code and body.
    pub async fn get(&self, path: &str) -> Result<(u16, String), String> {
        let url = format!("{}{path}", self.base);
        let r = self.http.get(url).send().await.map_err(|e| e.to_string())?;
        let status = r.status().as_u16();
        let text = r.text().await.map_err(|e| e.to_string())?;
        Ok((status, text))
    }

    /// Order `id` as orders knows it: `Ok(Some(lines))` if sold,
    /// `Ok(None)` if not (aborted or unknown: see [`Client::get`]).
    pub async fn order(&self, id: &str) -> Result<Option<String>, String> {
        match self.get(&format!("/orders/{id}")).await? {
            (200, lines) => Ok(Some(lines)),
            (404 | 410, _) => Ok(None),
            (status, text) => Err(format!("{status} {text}")),
        }
    }

    /// The stock of `sku`: `(available, held, sold)`.
    pub async fn stock(&self, sku: &str) -> Result<(u32, u32, u32), String> {
        match self.get(&format!("/stock/{sku}")).await? {
            (200, text) => {
                let n: Vec<u32> = text
                    .split(' ')
                    .map(|w| w.parse().map_err(|_| format!("stock: {text:?}")))
                    .collect::<Result<_, _>>()?;
                match n[..] {
                    [available, held, sold] => Ok((available, held, sold)),
                    _ => Err(format!("stock: {text:?}")),
                }
            }
            (status, text) => Err(format!("{status} {text}")),
        }
    }

    /// Shipping's orders received from the feed, in arrival order.
    pub async fn received(&self) -> Result<Vec<String>, String> {
        match self.get("/received").await? {
            (200, text) => Ok(text.lines().map(str::to_string).collect()),
            (status, text) => Err(format!("{status} {text}")),
        }
    }

    /// Shipping's shipped orders: `(id, lines)` in id order.
    pub async fn shipments(&self) -> Result<Vec<(String, String)>, String> {
        match self.get("/shipments").await? {
            (200, text) => Ok(text
                .lines()
                .filter_map(|l| l.split_once(' '))
                .map(|(id, lines)| (id.to_string(), lines.to_string()))
                .collect()),
            (status, text) => Err(format!("{status} {text}")),
        }
    }
}
