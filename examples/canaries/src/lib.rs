//! The canary catalog: small, ordinary Tokio programs, each with one planted
//! bug of a kind that simulation testing exists to find, and its fix.
//!
//! | canary | the bug | what finds it |
//! |---|---|---|
//! | [`lost_update`] | read, await, write back a stale balance | any schedule, a few seeds |
//! | [`missed_wakeup`] | `notify_waiters` between the check and the wait | any schedule |
//! | [`lock_order`] | two transfers take two locks in opposite orders | any schedule |
//! | [`retry_forever`] | a client retries a dead server with no bound | the virtual-time limit |
//! | [`run_ahead`] | a fast path taken only once a warmer ran 16 hand-offs ahead | PCT, not uniform |
//! | [`partial_batch`] | a timeout cancels a batch half-applied; the retry duplicates | early timers |
//! | [`acked_write`] | a primary acknowledges before replicating (the `kv` demo) | partition + crash |
//! | [`unsynced_ack`] | a log acknowledges before `sync_data` (the `durable-log` example) | crash of the disk |
//! | [`eof_as_miss`] | a client reads the server's close (EOF) as "not found" | the server's idle close |
//! | [`rejected_fill`] | a cache fill assumes the entry it inserted is still there | a fault point |
//! | [`yield_ahead`] | a cancel refunds, assuming a 20-step job cannot finish before its 2nd step | multi-thread order under PCT |
//! | [`thread_lost_update`] | an OS thread reads a counter, sleeps, writes back under a second lock | a task between the thread's two critical sections |
//!
//! The harder eight hide for hundreds to thousands of seeds, each in a small
//! protocol ([`Canary::first`] is set for them):
//!
//! | canary | the protocol | the bug | what finds it |
//! |---|---|---|---|
//! | [`stale_term`] | leader election over UDP | a vote from an earlier term counts | a candidate paused through its timeout (resumed a tick at a time, p = 1/2) while a rival wins: its late grant counts |
//! | [`torn_log`] | a segmented write-ahead log | the directory synced after the ack | a crash between two fsyncs at a rollover, drawn each millisecond (most runs crash before) |
//! | [`depth3`] | a routing table replaced read-copy-update | readers snapshotted before publishing | three orders (uniform, yields ahead) |
//! | [`healed_retry`] | a ledger with retried deposits | applied ids forgotten after 500 ms | a reply held by a cut that outlasts the memory (healed a tick at a time, p = 1/2) |
//! | [`drifted_lease`] | leases from a lock server | the lease timed on the client's clock | clock drift, a write at the end |
//! | [`compact_crash`] | a key-value store compacting its log | the compacted file renamed in unsynced | a compaction (rare), then a crash drawn as the run goes, before the next sync |
//! | [`stale_forward`] | a register behind two forwarding frontends | the store applies whatever arrives last | a cut that holds a write, outlasts its retry elsewhere and the next write, then heals |
//! | [`skewed_pair`] | wall-clock leases, fenced by the store's clock | the holder trusts its own clock to the millisecond | two clocks behind at once (the holder's and the store's), set as the run goes, and a write in the gap |
//!
//! Every program compiles and runs on plain Tokio; under `--cfg simulation`
//! each module's `scenario` drives it on simulated nodes and asserts what
//! it promises. `tests/sweep.rs` sweeps each buggy scenario with every
//! strategy (`cargo xtask canaries` measures them into `docs/canaries.md`);
//! `tests/canaries.rs` checks, in `cargo test`, that each bug is found
//! within its bound, replays, and that the fixed program passes.

/// The `kv` example's failover scenario, shared with its own tests.
#[cfg(simulation)]
#[path = "../../kv/tests/scenario/mod.rs"]
mod kv_scenario;

/// The `durable-log` example's crash scenario, shared with its own tests.
#[cfg(simulation)]
#[path = "../../durable-log/tests/scenario/mod.rs"]
mod durable_log_scenario;

pub mod compact_crash;
pub mod depth3;
pub mod drifted_lease;
pub mod healed_retry;
pub mod skewed_pair;
pub mod stale_forward;
pub mod stale_term;
pub mod thread_lost_update;
pub mod torn_log;

/// Which program a scenario runs: the planted bug or its fix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    Buggy,
    Fixed,
}

mod catalog;
pub use catalog::{Canary, CATALOG};

/// The scenario of the canary `name`, against `variant`.
#[cfg(simulation)]
pub fn scenario(
    name: &str,
    variant: Variant,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>> {
    match name {
        "lost_update" => Box::pin(lost_update::scenario(variant)),
        "missed_wakeup" => Box::pin(missed_wakeup::scenario(variant)),
        "lock_order" => Box::pin(lock_order::scenario(variant)),
        "retry_forever" => Box::pin(retry_forever::scenario(variant)),
        "run_ahead" => Box::pin(run_ahead::scenario(variant)),
        "partial_batch" => Box::pin(partial_batch::scenario(variant)),
        "acked_write" => Box::pin(acked_write::scenario(variant)),
        "unsynced_ack" => Box::pin(unsynced_ack::scenario(variant)),
        "eof_as_miss" => Box::pin(eof_as_miss::scenario(variant)),
        "rejected_fill" => Box::pin(rejected_fill::scenario(variant)),
        "yield_ahead" => Box::pin(yield_ahead::scenario(variant)),
        "thread_lost_update" => Box::pin(thread_lost_update::scenario(variant)),
        "stale_term" => Box::pin(stale_term::scenario(variant)),
        "torn_log" => Box::pin(torn_log::scenario(variant)),
        "depth3" => Box::pin(depth3::scenario(variant)),
        "healed_retry" => Box::pin(healed_retry::scenario(variant)),
        "drifted_lease" => Box::pin(drifted_lease::scenario(variant)),
        "compact_crash" => Box::pin(compact_crash::scenario(variant)),
        "skewed_pair" => Box::pin(skewed_pair::scenario(variant)),
        "stale_forward" => Box::pin(stale_forward::scenario(variant)),
        _ => panic!(
            "no canary named {name:?}; the catalog: {:?}",
            CATALOG.iter().map(|c| c.name).collect::<Vec<_>>()
        ),
    }
}

/// An account service whose deposit reads the balance, awaits a fraud
/// check, and writes back what it read plus the amount.
pub mod lost_update {
    use super::Variant;
    use tokio::sync::Mutex;

    pub struct Account {
        balance: Mutex<u64>,
        variant: Variant,
    }

    impl Account {
        pub fn new(variant: Variant) -> Account {
            Account {
                balance: Mutex::new(0),
                variant,
            }
        }

        pub async fn deposit(&self, amount: u64) {
            match self.variant {
                Variant::Buggy => {
                    // BUG: the balance read before the await is written back
                    // after it; a deposit in between is lost.
                    let read = *self.balance.lock().await;
                    fraud_check(amount).await;
                    *self.balance.lock().await = read + amount;
                }
                Variant::Fixed => {
                    let mut balance = self.balance.lock().await;
                    fraud_check(amount).await;
                    *balance += amount;
                }
            }
        }

        pub async fn balance(&self) -> u64 {
            *self.balance.lock().await
        }
    }

    /// Asks the fraud service; here, one trip through the scheduler.
    async fn fraud_check(_amount: u64) {
        tokio::task::yield_now().await;
    }

    /// Two clients deposit twice each; the balance must be the sum.
    #[cfg(simulation)]
    pub async fn scenario(variant: Variant) {
        use std::sync::Arc;
        let account = Arc::new(Account::new(variant));
        let clients: Vec<_> = (0..2)
            .map(|_| {
                let account = account.clone();
                tokio::spawn(async move {
                    for _ in 0..2 {
                        account.deposit(10).await;
                    }
                })
            })
            .collect();
        for c in clients {
            c.await.expect("client");
        }
        assert_eq!(account.balance().await, 40, "a deposit was lost");
    }
}

/// A job queue whose worker checks the queue, flushes its metrics, then
/// waits for a notification, while the producer wakes waiters with
/// `notify_waiters` (which wakes only those already waiting).
pub mod missed_wakeup {
    use super::Variant;
    use std::collections::VecDeque;
    use std::sync::Mutex;
    use tokio::sync::Notify;

    pub struct Queue {
        jobs: Mutex<VecDeque<u32>>,
        notify: Notify,
        variant: Variant,
    }

    impl Queue {
        pub fn new(variant: Variant) -> Queue {
            Queue {
                jobs: Mutex::new(VecDeque::new()),
                notify: Notify::new(),
                variant,
            }
        }

        pub fn push(&self, job: u32) {
            self.jobs.lock().unwrap().push_back(job);
            self.notify.notify_waiters();
        }

        fn pop(&self) -> Option<u32> {
            self.jobs.lock().unwrap().pop_front()
        }

        /// Processes `n` jobs, then returns their sum.
        pub async fn work(&self, n: usize) -> u32 {
            let mut done = Vec::new();
            while done.len() < n {
                match self.variant {
                    Variant::Buggy => {
                        if let Some(job) = self.pop() {
                            done.push(job);
                            continue;
                        }
                        flush_metrics().await;
                        // BUG: a job pushed (and its `notify_waiters`)
                        // during the flush finds no waiter: its wake-up is
                        // lost, and this waits for a job already queued.
                        self.notify.notified().await;
                    }
                    Variant::Fixed => {
                        // Registered before the check, as Tokio's docs say:
                        // a push after the check wakes this.
                        let notified = self.notify.notified();
                        tokio::pin!(notified);
                        notified.as_mut().enable();
                        if let Some(job) = self.pop() {
                            done.push(job);
                            continue;
                        }
                        flush_metrics().await;
                        notified.await;
                    }
                }
            }
            done.iter().sum()
        }
    }

    async fn flush_metrics() {
        tokio::task::yield_now().await;
    }

    /// A producer pushes three jobs while the worker runs; the worker must
    /// finish them all.
    #[cfg(simulation)]
    pub async fn scenario(variant: Variant) {
        use std::sync::Arc;
        let queue = Arc::new(Queue::new(variant));
        let q = queue.clone();
        let worker = tokio::spawn(async move { q.work(3).await });
        for job in 1..=3 {
            tokio::task::yield_now().await;
            queue.push(job);
        }
        assert_eq!(worker.await.expect("worker"), 6);
    }
}

/// A bank whose transfer locks the source account, audits, then locks the
/// destination: two opposite transfers wait for each other.
pub mod lock_order {
    use super::Variant;
    use tokio::sync::Mutex;

    pub struct Bank {
        accounts: Vec<Mutex<i64>>,
        variant: Variant,
    }

    impl Bank {
        pub fn new(balances: &[i64], variant: Variant) -> Bank {
            Bank {
                accounts: balances.iter().map(|&b| Mutex::new(b)).collect(),
                variant,
            }
        }

        pub async fn transfer(&self, from: usize, to: usize, amount: i64) {
            // BUG: the buggy bank locks in argument order; the fix locks
            // the lower account number first.
            let (first, second) = match self.variant {
                Variant::Buggy => (from, to),
                Variant::Fixed => (from.min(to), from.max(to)),
            };
            let mut a = self.accounts[first].lock().await;
            audit().await;
            let mut b = self.accounts[second].lock().await;
            let (src, dst) = if first == from {
                (&mut *a, &mut *b)
            } else {
                (&mut *b, &mut *a)
            };
            *src -= amount;
            *dst += amount;
        }

        pub async fn total(&self) -> i64 {
            let mut sum = 0;
            for a in &self.accounts {
                sum += *a.lock().await;
            }
            sum
        }
    }

    async fn audit() {
        tokio::task::yield_now().await;
    }

    /// Alice pays Bob while Bob pays Alice.
    #[cfg(simulation)]
    pub async fn scenario(variant: Variant) {
        use std::sync::Arc;
        let bank = Arc::new(Bank::new(&[100, 100], variant));
        let (b1, b2) = (bank.clone(), bank.clone());
        let t1 = tokio::spawn(async move { b1.transfer(0, 1, 30).await });
        let t2 = tokio::spawn(async move { b2.transfer(1, 0, 20).await });
        t1.await.expect("transfer");
        t2.await.expect("transfer");
        assert_eq!(bank.total().await, 200);
    }
}

/// An inventory client that retries a failed reservation every 100 ms,
/// forever: when the server is gone for good, the client never gives up
/// and never reports the failure.
pub mod retry_forever {
    use super::Variant;
    use std::io;
    use std::time::Duration;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    use tokio::net::{TcpListener, TcpStream};
    use tokio::time::{sleep, timeout};

    pub const PORT: u16 = 7000;
    /// Attempts the fixed client makes before it reports the failure.
    pub const ATTEMPTS: u32 = 5;

    /// The inventory server: `RESERVE <item>` → `OK`.
    pub async fn serve() {
        let listener = TcpListener::bind(("0.0.0.0", PORT))
            .await
            .expect("the inventory port is free");
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                let (r, mut w) = stream.into_split();
                let mut lines = BufReader::new(r).lines();
                while let Ok(Some(_line)) = lines.next_line().await {
                    if w.write_all(b"OK\n").await.is_err() {
                        break;
                    }
                }
            });
        }
    }

    async fn reserve_once(addr: &str, item: u32) -> io::Result<()> {
        let mut stream = TcpStream::connect(addr).await?;
        stream
            .write_all(format!("RESERVE {item}\n").as_bytes())
            .await?;
        let mut line = String::new();
        BufReader::new(&mut stream).read_line(&mut line).await?;
        if line.trim() == "OK" {
            Ok(())
        } else {
            Err(io::Error::new(io::ErrorKind::UnexpectedEof, "no answer"))
        }
    }

    pub async fn reserve(addr: &str, item: u32, variant: Variant) -> io::Result<()> {
        let mut attempts = 0;
        loop {
            let err = match timeout(Duration::from_secs(1), reserve_once(addr, item)).await {
                Ok(Ok(())) => return Ok(()),
                Ok(Err(e)) => e,
                Err(_) => io::Error::new(io::ErrorKind::TimedOut, "reservation timed out"),
            };
            attempts += 1;
            // BUG: the buggy client has no bound on its attempts.
            if variant == Variant::Fixed && attempts >= ATTEMPTS {
                return Err(err);
            }
            sleep(Duration::from_millis(100)).await;
        }
    }

    /// The server goes down at a seeded moment and is not restarted; the
    /// client must either finish its reservations or report the failure.
    #[cfg(simulation)]
    pub async fn scenario(variant: Variant) {
        let server = sim::node("inventory").ip("10.0.0.20").start(serve);
        let gone_at = Duration::from_millis(sim::fork_seed("outage") % 200);
        sim::at(gone_at, move || server.kill());
        sleep(Duration::from_millis(1)).await;
        let addr = format!("inventory:{PORT}");
        for item in 0..10 {
            if let Err(e) = reserve(&addr, item, variant).await {
                tracing::info!("reservation {item} failed: {e}");
                return;
            }
            sleep(Duration::from_millis(15)).await;
        }
    }
}

/// A catalog service: a loader streams the pages over a channel to a
/// warmer that caches them, while requests arrive; once every page is
/// cached, a request takes the fast path, which indexes the pages off by
/// one. The fast path is taken only when the loader and the warmer ran all
/// their steps (a channel hand-off per page) before the handler's first.
///
/// The steps are channel hand-offs, not `yield_now`: Tokio's `yield_now`
/// (and the simulation's) lets every other runnable task go first, so no
/// schedule can run a yielding task ahead.
pub mod run_ahead {
    use super::Variant;
    use std::sync::Mutex;
    use tokio::sync::mpsc;

    /// Pages the loader streams, one hand-off each.
    pub const PAGES: usize = 16;

    #[derive(Default)]
    pub struct Catalog {
        pages: Mutex<Vec<String>>,
    }

    impl Catalog {
        /// Caches the pages the loader sends, in order.
        pub async fn warm(&self, mut from_loader: mpsc::Receiver<String>) {
            while let Some(page) = from_loader.recv().await {
                self.pages.lock().unwrap().push(page);
            }
        }

        /// Page `n`, 1-based.
        pub fn page(&self, n: usize, variant: Variant) -> String {
            let pages = self.pages.lock().unwrap();
            if pages.len() == PAGES {
                // The fast path, taken only when the cache is complete.
                // BUG: page numbers are 1-based; the buggy fast path forgot.
                let i = match variant {
                    Variant::Buggy => n,
                    Variant::Fixed => n - 1,
                };
                return pages[i].clone();
            }
            // The slow path: the origin server (not simulated here).
            format!("page {n}")
        }
    }

    /// Streams the pages from storage, one at a time.
    pub async fn load(to_warmer: mpsc::Sender<String>) {
        for n in 1..=PAGES {
            if to_warmer.send(format!("page {n}")).await.is_err() {
                return;
            }
        }
    }

    /// A request for the last page while the cache warms.
    #[cfg(simulation)]
    pub async fn scenario(variant: Variant) {
        use std::sync::Arc;
        let catalog = Arc::new(Catalog::default());
        let (tx, rx) = mpsc::channel(1);
        let loader = tokio::spawn(load(tx));
        let c = catalog.clone();
        let warmer = tokio::spawn(async move { c.warm(rx).await });
        let c = catalog.clone();
        let handler = tokio::spawn(async move { c.page(PAGES, variant) });
        loader.await.expect("loader");
        warmer.await.expect("warmer");
        assert_eq!(handler.await.expect("handler"), format!("page {PAGES}"));
    }
}

/// An index that applies a batch entry by entry, each entry a step of CPU
/// work, under a 1 ms timeout; on timeout the caller retries the batch.
/// The buggy index publishes entries as it goes, so a batch cut short by
/// the timeout leaves a prefix behind and the retry duplicates it.
pub mod partial_batch {
    use super::Variant;
    use std::sync::Mutex;
    use std::time::Duration;

    /// Entries per batch (seed 001's figure: ten steps of work).
    pub const BATCH: u32 = 10;

    pub struct Index {
        entries: Mutex<Vec<u32>>,
        variant: Variant,
    }

    impl Index {
        pub fn new(variant: Variant) -> Index {
            Index {
                entries: Mutex::new(Vec::new()),
                variant,
            }
        }

        async fn apply(&self, batch: &[u32]) {
            let mut staged = Vec::new();
            for &entry in batch {
                match self.variant {
                    // BUG: published one by one: a cancelled apply leaves
                    // a prefix.
                    Variant::Buggy => self.entries.lock().unwrap().push(entry),
                    Variant::Fixed => staged.push(entry),
                }
                tokio::task::yield_now().await; // CPU work, cooperatively
            }
            self.entries.lock().unwrap().extend(staged);
        }

        /// Applies `batch`, retrying when the 1 ms budget runs out.
        pub async fn ingest(&self, batch: &[u32]) {
            while tokio::time::timeout(Duration::from_millis(1), self.apply(batch))
                .await
                .is_err()
            {}
        }

        pub fn entries(&self) -> Vec<u32> {
            self.entries.lock().unwrap().clone()
        }
    }

    /// One batch, ingested: each entry must be there exactly once.
    #[cfg(simulation)]
    pub async fn scenario(variant: Variant) {
        let index = Index::new(variant);
        let batch: Vec<u32> = (0..BATCH).collect();
        index.ingest(&batch).await;
        assert_eq!(index.entries(), batch, "entries duplicated by a retry");
    }
}

/// The `kv` demo's bug: a primary that acknowledges a write before its
/// backups have it loses acknowledged writes when it is cut off and then
/// crashes. Driven by the `kv` example's own failover scenario.
pub mod acked_write {
    use super::Variant;

    pub fn replication(variant: Variant) -> kv::Replication {
        match variant {
            Variant::Buggy => kv::Replication::AckBeforeReplicate,
            Variant::Fixed => kv::Replication::AckAfterReplicate,
        }
    }

    #[cfg(simulation)]
    pub async fn scenario(variant: Variant) {
        crate::kv_scenario::acked_writes_survive_failover(replication(variant)).await
    }
}

/// The `durable-log` example's bug: a log that acknowledges a record once
/// written, before `sync_data`, loses acknowledged records when the
/// machine crashes.
pub mod unsynced_ack {
    use super::Variant;

    pub fn durability(variant: Variant) -> durable_log::Durability {
        match variant {
            Variant::Buggy => durable_log::Durability::AckBeforeSync,
            Variant::Fixed => durable_log::Durability::SyncBeforeAck,
        }
    }

    /// A client appends records; the machine crashes at a seeded moment,
    /// comes back, and every acknowledged record must be recovered (the
    /// `durable-log` example's own scenario).
    #[cfg(simulation)]
    pub async fn scenario(variant: Variant) {
        let (outcome, _, _) = crate::durable_log_scenario::scenario(durability(variant)).await;
        if let Err(e) = outcome {
            panic!("{e}");
        }
    }
}

/// A key-value client over a line protocol where the server answers an
/// empty line for a missing key, and closes connections idle for 50 ms.
/// The buggy client reads the server's close (EOF: an empty read) as that
/// empty answer, i.e. "not found", instead of reconnecting.
pub mod eof_as_miss {
    use super::Variant;
    use std::collections::BTreeMap;
    use std::io;
    use std::time::Duration;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
    use tokio::net::{TcpListener, TcpStream};

    pub const PORT: u16 = 6000;
    /// The server closes a connection idle this long.
    pub const IDLE: Duration = Duration::from_millis(50);

    /// The server: `GET <key>` → the value, or an empty line if missing.
    pub async fn serve(data: BTreeMap<String, String>) {
        let listener = TcpListener::bind(("0.0.0.0", PORT))
            .await
            .expect("the cache port is free");
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let data = data.clone();
            tokio::spawn(async move {
                let (r, mut w) = stream.into_split();
                let mut lines = BufReader::new(r).lines();
                // Idle connections are closed (a FIN: the client reads EOF).
                while let Ok(Ok(Some(line))) = tokio::time::timeout(IDLE, lines.next_line()).await {
                    let key = line.strip_prefix("GET ").unwrap_or_default();
                    let value = data.get(key).cloned().unwrap_or_default();
                    if w.write_all(format!("{value}\n").as_bytes()).await.is_err() {
                        break;
                    }
                }
            });
        }
    }

    pub struct Client {
        addr: String,
        conn: Option<(BufReader<OwnedReadHalf>, OwnedWriteHalf)>,
        variant: Variant,
    }

    impl Client {
        pub fn new(addr: &str, variant: Variant) -> Client {
            Client {
                addr: addr.to_string(),
                conn: None,
                variant,
            }
        }

        pub async fn get(&mut self, key: &str) -> io::Result<Option<String>> {
            loop {
                if self.conn.is_none() {
                    let (r, w) = TcpStream::connect(&self.addr).await?.into_split();
                    self.conn = Some((BufReader::new(r), w));
                }
                let (r, w) = self.conn.as_mut().expect("connected");
                let mut line = String::new();
                let sent = w.write_all(format!("GET {key}\n").as_bytes()).await;
                let read = match sent {
                    Ok(()) => r.read_line(&mut line).await,
                    Err(e) => Err(e),
                };
                match read {
                    // The server closed the connection (EOF).
                    Ok(0) if self.variant == Variant::Fixed => self.conn = None,
                    // BUG: EOF reads as an empty line, the "not found"
                    // answer.
                    Ok(_) => {
                        let value = line.trim_end();
                        return Ok((!value.is_empty()).then(|| value.to_string()));
                    }
                    // A reset or a broken pipe: reconnect and ask again.
                    Err(_) => self.conn = None,
                }
            }
        }
    }

    /// A client reads an existing key now and then, with pauses that
    /// sometimes outlast the server's idle timeout.
    #[cfg(simulation)]
    pub async fn scenario(variant: Variant) {
        let data = BTreeMap::from([("user:1".to_string(), "ada".to_string())]);
        sim::node("cache")
            .ip("10.0.0.30")
            .start(move || serve(data.clone()));
        // Wait until the server listens (an early timer can end a fixed
        // sleep before the server's first step).
        let addr = format!("cache:{PORT}");
        while TcpStream::connect(&addr).await.is_err() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let mut client = Client::new(&addr, variant);
        let mut think = sim::fork_seed("think");
        for _ in 0..5 {
            let got = client.get("user:1").await.expect("the server answers");
            assert_eq!(
                got.as_deref(),
                Some("ada"),
                "an existing key read as missing"
            );
            think = think.rotate_left(7) ^ 0x9e37_79b9;
            tokio::time::sleep(Duration::from_millis(think % 80)).await;
        }
    }
}

/// A read-through cache whose admission policy may turn an entry away
/// under memory pressure (a fault point simulates the pressure). The
/// buggy fill reads the entry back from the cache, assuming it was kept.
pub mod rejected_fill {
    use super::Variant;
    use std::collections::BTreeMap;
    use std::sync::Mutex;
    use std::time::Duration;

    pub struct Cache {
        map: Mutex<BTreeMap<String, String>>,
        variant: Variant,
    }

    impl Cache {
        pub fn new(variant: Variant) -> Cache {
            Cache {
                map: Mutex::new(BTreeMap::new()),
                variant,
            }
        }

        fn admit(&self, key: &str, value: &str) {
            // Under memory pressure the admission policy rejects new
            // entries; the fault point makes the simulation explore it.
            if sim::buggify!("cache.admission_rejects") {
                return;
            }
            self.map
                .lock()
                .unwrap()
                .insert(key.to_string(), value.to_string());
        }

        pub async fn get(&self, key: &str) -> String {
            if let Some(v) = self.map.lock().unwrap().get(key) {
                return v.clone();
            }
            let value = load(key).await;
            self.admit(key, &value);
            match self.variant {
                // BUG: the entry may not have been admitted.
                Variant::Buggy => self
                    .map
                    .lock()
                    .unwrap()
                    .get(key)
                    .cloned()
                    .expect("the entry just filled is cached"),
                Variant::Fixed => value,
            }
        }
    }

    /// The backing store: a millisecond away.
    async fn load(key: &str) -> String {
        tokio::time::sleep(Duration::from_millis(1)).await;
        format!("value of {key}")
    }

    /// Reads of a few keys, some repeated.
    #[cfg(simulation)]
    pub async fn scenario(variant: Variant) {
        let cache = Cache::new(variant);
        for i in 0..12 {
            let key = format!("k{}", i % 4);
            assert_eq!(cache.get(&key).await, format!("value of {key}"));
        }
    }
}

/// A payment job does its work in 20 cooperative chunks (`yield_now`
/// between them), then charges the customer unless the order was cancelled.
/// A cancel, placed right after the order, lets the job start (one
/// `yield_now`), then marks the order cancelled. The buggy cancel refunds
/// at once, assuming the job cannot have charged yet: on Tokio's
/// current-thread runtime a yielder runs again only after every other
/// runnable task, so the job is 2 chunks in when the cancel takes its second
/// step, and the bug never shows. On the multi-thread runtime the cancel's
/// worker may be busy while the job runs all 20 chunks: the customer is
/// charged and refunded. The fix refunds only what was not charged, in the
/// same step as the cancel (the job checks for a cancel in the step that
/// charges).
pub mod yield_ahead {
    use super::Variant;
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};

    /// Chunks of work before the charge, one `yield_now` after each.
    pub const CHUNKS: usize = 20;

    #[derive(Default)]
    pub struct Order {
        cancelled: AtomicBool,
        charged: AtomicBool,
        refunded: AtomicBool,
    }

    impl Order {
        /// The payment job: its chunks, then the charge, unless cancelled.
        pub async fn pay(&self) {
            for _ in 0..CHUNKS {
                if self.cancelled.load(SeqCst) {
                    return;
                }
                tokio::task::yield_now().await;
            }
            if !self.cancelled.load(SeqCst) {
                self.charged.store(true, SeqCst);
            }
        }

        /// The customer's cancel, right after the order was placed.
        pub async fn cancel(&self, variant: Variant) {
            // Let the payment job start.
            tokio::task::yield_now().await;
            self.cancelled.store(true, SeqCst);
            match variant {
                // BUG: assumes the job cannot have charged yet.
                Variant::Buggy => self.refunded.store(true, SeqCst),
                Variant::Fixed => {
                    if !self.charged.load(SeqCst) {
                        self.refunded.store(true, SeqCst);
                    }
                }
            }
        }

        /// Charged or refunded, never both and never neither.
        pub fn settled(&self) -> Result<(), String> {
            match (self.charged.load(SeqCst), self.refunded.load(SeqCst)) {
                (true, true) => Err("the customer was charged and refunded".into()),
                (false, false) => Err("the order was neither charged nor refunded".into()),
                _ => Ok(()),
            }
        }
    }

    /// An order, its payment job and an immediate cancel, as two tasks.
    #[cfg(simulation)]
    pub async fn scenario(variant: Variant) {
        use std::sync::Arc;
        let order = Arc::new(Order::default());
        let o = order.clone();
        let job = tokio::spawn(async move { o.pay().await });
        let o = order.clone();
        let cancel = tokio::spawn(async move { o.cancel(variant).await });
        job.await.expect("payment job");
        cancel.await.expect("cancel");
        order.settled().unwrap();
    }
}
