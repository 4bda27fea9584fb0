//! A job pipeline over TCP: a dispatcher hands jobs to workers, each worker
//! records what it computed in a ledger.
//!
//! ```text
//! client --SUBMIT--> dispatcher --JOB--> worker (×n) --RECORD--> ledger
//! ```
//!
//! Every job is recorded exactly once even when workers crash:
//!
//! - delivery is at least once: the dispatcher keeps a job until a worker
//!   answers `DONE`, and gives it to the next free worker when one fails or
//!   stays silent past [`JOB_TIMEOUT`];
//! - recording is idempotent: the ledger keeps the first record of a job and
//!   acknowledges the repeats (a worker that crashed after recording, before
//!   its `DONE`, leaves a job that another worker records again).
//!
//! Protocol, one line per message:
//!
//! ```text
//! SUBMIT <id> <n>           → QUEUED              (client → dispatcher)
//! JOB <id> <n>              → DONE <id> | ERR ..  (dispatcher → worker)
//! RECORD <id> <worker> <r>  → OK                  (worker → ledger)
//! LIST                      → <id> <worker> <r> lines, then END
//! ```
//!
//! A job's result is [`work`] of its number. State lives in memory.

use std::collections::BTreeSet;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::{sleep, timeout};

pub const DISPATCHER_PORT: u16 = 7200;
pub const WORKER_PORT: u16 = 7300;
pub const LEDGER_PORT: u16 = 7400;

/// How long the dispatcher waits for a worker's `DONE`.
pub const JOB_TIMEOUT: Duration = Duration::from_secs(1);

/// What a worker computes for job number `n`.
pub fn work(n: u64) -> u64 {
    n.wrapping_mul(n).wrapping_add(1)
}

/// One ledger entry: the job, the worker that recorded it, its result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub job: u64,
    pub worker: String,
    pub result: u64,
}

/// The ledger: `RECORD`s the first result of each job, `LIST`s them.
pub async fn ledger() {
    #[derive(Default)]
    struct Ledger {
        seen: BTreeSet<u64>,
        entries: Vec<String>,
    }
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    serve(LEDGER_PORT, move |line| {
        let ledger = ledger.clone();
        async move {
            let mut l = ledger.lock().unwrap();
            match words(&line)[..] {
                ["RECORD", job, worker, result] => match job.parse() {
                    Ok(id) => {
                        if l.seen.insert(id) {
                            l.entries.push(format!("{job} {worker} {result}"));
                        }
                        "OK\n".to_string()
                    }
                    Err(_) => "ERR bad job id\n".into(),
                },
                ["LIST"] => {
                    let mut out: String = l.entries.iter().map(|e| format!("{e}\n")).collect();
                    out.push_str("END\n");
                    out
                }
                _ => "ERR malformed request\n".into(),
            }
        }
    })
    .await
}

/// A worker named `name`: takes `JOB`s, spends `work_time` on each,
/// records the result in the ledger at `ledger_addr`, answers `DONE`.
pub async fn worker(name: String, ledger_addr: String, work_time: Duration) {
    let name: Arc<str> = name.into();
    let ledger_addr: Arc<str> = ledger_addr.into();
    serve(WORKER_PORT, move |line| {
        let (name, ledger_addr) = (name.clone(), ledger_addr.clone());
        async move {
            let (id, n) = match words(&line)[..] {
                ["JOB", id, n] => match (id.parse::<u64>(), n.parse::<u64>()) {
                    (Ok(id), Ok(n)) => (id, n),
                    _ => return "ERR bad job\n".to_string(),
                },
                _ => return "ERR malformed request\n".into(),
            };
            sleep(work_time).await;
            let record = format!("RECORD {id} {name} {}\n", work(n));
            match Conn::call_once(&ledger_addr, &record).await {
                Ok(reply) if reply == "OK" => format!("DONE {id}\n"),
                _ => format!("ERR {id} not recorded\n"),
            }
        }
    })
    .await
}

/// The dispatcher: queues `SUBMIT`ted jobs and feeds them to `workers`
/// (addresses), one job at a time per worker, until each is `DONE`.
pub async fn dispatcher(workers: Vec<String>) {
    let (queue, jobs) = mpsc::unbounded_channel::<(u64, u64)>();
    let jobs = Arc::new(tokio::sync::Mutex::new(jobs));
    for addr in workers {
        tokio::spawn(feed(addr, jobs.clone(), queue.clone()));
    }
    serve(DISPATCHER_PORT, move |line| {
        let queue = queue.clone();
        async move {
            match words(&line)[..] {
                ["SUBMIT", id, n] => match (id.parse(), n.parse()) {
                    (Ok(id), Ok(n)) => {
                        let _ = queue.send((id, n));
                        "QUEUED\n".to_string()
                    }
                    _ => "ERR bad job\n".into(),
                },
                _ => "ERR malformed request\n".into(),
            }
        }
    })
    .await
}

type Jobs = Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<(u64, u64)>>>;

/// Feeds one worker: takes the next job, sends it, and on any failure puts
/// it back in the queue for the next free worker.
async fn feed(addr: String, jobs: Jobs, requeue: mpsc::UnboundedSender<(u64, u64)>) {
    let mut conn: Option<Conn> = None;
    loop {
        let Some((id, n)) = jobs.lock().await.recv().await else {
            return;
        };
        let attempt = async {
            if conn.is_none() {
                conn = Some(Conn::connect(&addr).await?);
            }
            conn.as_mut()
                .expect("connected above")
                .call(&format!("JOB {id} {n}\n"))
                .await
        };
        match timeout(JOB_TIMEOUT, attempt).await {
            Ok(Ok(reply)) if reply == format!("DONE {id}") => {}
            _ => {
                conn = None;
                let _ = requeue.send((id, n));
                // This worker failed: let the others take the job first.
                sleep(JOB_TIMEOUT / 4).await;
            }
        }
    }
}

/// Serves `port`: each line of each connection gets `handle(line)` back.
async fn serve<F, Fut>(port: u16, handle: F)
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = String> + Send,
{
    let listener = TcpListener::bind(("0.0.0.0", port))
        .await
        .unwrap_or_else(|e| panic!("pipeline: cannot listen on port {port}: {e}"));
    let handle = Arc::new(handle);
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let handle = handle.clone();
        tokio::spawn(async move {
            let (read, mut write) = stream.into_split();
            let mut lines = BufReader::new(read).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let reply = handle(line).await;
                if write.write_all(reply.as_bytes()).await.is_err() {
                    return;
                }
            }
        });
    }
}

fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// A request/reply connection to one of the pipeline's services.
pub struct Conn {
    lines: Lines<BufReader<OwnedReadHalf>>,
    write: OwnedWriteHalf,
}

impl Conn {
    pub async fn connect(addr: &str) -> io::Result<Conn> {
        let (read, write) = TcpStream::connect(addr).await?.into_split();
        Ok(Conn {
            lines: BufReader::new(read).lines(),
            write,
        })
    }

    /// Sends `request` (one line) and reads the reply line.
    pub async fn call(&mut self, request: &str) -> io::Result<String> {
        self.write.write_all(request.as_bytes()).await?;
        self.read_line().await
    }

    pub async fn read_line(&mut self) -> io::Result<String> {
        match self.lines.next_line().await? {
            Some(line) => Ok(line),
            None => Err(io::ErrorKind::UnexpectedEof.into()),
        }
    }

    async fn call_once(addr: &str, request: &str) -> io::Result<String> {
        Conn::connect(addr).await?.call(request).await
    }

    /// The ledger's entries, in the order they were recorded.
    pub async fn list(&mut self) -> io::Result<Vec<Entry>> {
        self.write.write_all(b"LIST\n").await?;
        let mut entries = Vec::new();
        loop {
            let line = self.read_line().await?;
            if line == "END" {
                return Ok(entries);
            }
            let bad = || io::Error::new(io::ErrorKind::InvalidData, format!("LIST: {line:?}"));
            let [job, worker, result] = words(&line)[..] else {
                return Err(bad());
            };
            entries.push(Entry {
                job: job.parse().map_err(|_| bad())?,
                worker: worker.to_string(),
                result: result.parse().map_err(|_| bad())?,
            });
        }
    }
}
