//! The catalog: every canary, what it plants, what finds it, its bound.

/// A canary: its module's name (also its sweep test's name), what it
/// plants, what a schedule needs to find it, and its bound: the portfolio
/// finds it within this many seeds (`0..bound`). The bounds are regression
/// guards set with a margin over what `cargo xtask canaries` measured.
#[derive(Clone, Copy, Debug)]
pub struct Canary {
    pub name: &'static str,
    pub bug: &'static str,
    pub needs: &'static str,
    pub bound: u64,
    /// A hard canary's first failing seed under the portfolio (seeds from
    /// 0), measured by `cargo xtask canaries --hard`: CI runs this seed
    /// alone instead of sweeping `0..bound`. `None` for the quick ones.
    pub first: Option<u64>,
}

/// The catalog, in the order the docs' table lists it.
pub const CATALOG: &[Canary] = &[
    Canary {
        name: "lost_update",
        bug: "a deposit reads the balance, awaits a check, writes back the stale value + amount",
        needs: "two tasks interleaved once",
        bound: 5,
        first: None,
    },
    Canary {
        name: "missed_wakeup",
        bug: "a job pushed between the worker's empty check and its wait: `notify_waiters` wakes nobody",
        needs: "a push inside a one-step window",
        bound: 10,
        first: None,
    },
    Canary {
        name: "lock_order",
        bug: "two transfers lock two accounts in opposite orders",
        needs: "both first locks before either second",
        bound: 5,
        first: None,
    },
    Canary {
        name: "retry_forever",
        bug: "a client retries a server that is gone for good, every 100 ms, with no bound",
        needs: "the server killed before the client is done; the virtual-time limit",
        bound: 10,
        first: None,
    },
    Canary {
        name: "run_ahead",
        bug: "a fast path, taken only when the cache is complete, is off by one",
        needs: "16 loader→warmer hand-offs before the handler's first step",
        bound: 30,
        first: None,
    },
    Canary {
        name: "partial_batch",
        bug: "a 1 ms timeout cancels a batch half-published; the retry duplicates its prefix",
        needs: "the timeout to fire mid-computation (early timers)",
        bound: 30,
        first: None,
    },
    Canary {
        name: "acked_write",
        bug: "a primary acknowledges a write before its backups have it (the kv demo)",
        needs: "a partition, then a crash of the primary",
        bound: 20,
        first: None,
    },
    Canary {
        name: "unsynced_ack",
        bug: "a log acknowledges a record before `sync_data` (the durable-log example)",
        needs: "a crash between the ack and the sync",
        bound: 10,
        first: None,
    },
    Canary {
        name: "eof_as_miss",
        bug: "a client reads the server's idle close (EOF) as the empty \"not found\" answer",
        needs: "a pause longer than the server's idle timeout",
        bound: 10,
        first: None,
    },
    Canary {
        name: "rejected_fill",
        bug: "a cache fill reads back an entry the admission policy turned away",
        needs: "the fault point `cache.admission_rejects` active and firing",
        bound: 60,
        first: None,
    },
    Canary {
        name: "yield_ahead",
        bug: "a cancel refunds at once, assuming a 20-step payment cannot finish before the cancel's second step",
        needs: "one task 21 steps ahead of another that yielded once (multi-thread order; PCT)",
        bound: 20,
        first: None,
    },
    Canary {
        name: "thread_lost_update",
        bug: "a std::thread flushes a counter in two critical sections of an Arc<std::sync::Mutex>, sleeping between them; a task's increment in between is lost",
        needs: "the task's lock between the thread's two critical sections (a thread/task interleaving)",
        bound: 10,
        first: None,
    },
    Canary {
        name: "stale_term",
        bug: "a Raft-style candidate counts a vote granted for an earlier term toward its current one: two leaders in a term",
        needs: "a grant delivered after its candidate gave up that election (a candidate paused through its timeout: the nemesis resumes a node each 50 ms tick with p = 1/2) and a rival winning the next",
        bound: 20_000,
        first: Some(4124),
    },
    Canary {
        name: "torn_log",
        bug: "a segmented log acknowledges a new segment's first record before syncing the directory that names it",
        needs: "a crash between a rolled-over segment's fsync and its directory's, after the acknowledgement, where the nemesis (p = 1/50 each millisecond) has not crashed the machine on the way there",
        bound: 20_000,
        first: Some(10448),
    },
    Canary {
        name: "depth3",
        bug: "an RCU-style table swap snapshots the readers before publishing: a reader in between reads a freed table",
        needs: "snapshot → reader starts → publication → 10 updater steps before the reader's next 2 (yields ahead; PCT cannot: a task it demotes runs last)",
        bound: 20_000,
        first: Some(1778),
    },
    Canary {
        name: "healed_retry",
        bug: "a ledger forgets an applied request id after 500 ms; a retry sent once a partition heals applies a deposit twice",
        needs: "a partition while a reply is in flight, outlasting the ledger's memory (the nemesis heals a cut each 50 ms tick with p = 1/2), then the heal",
        bound: 20_000,
        first: Some(2052),
    },
    Canary {
        name: "drifted_lease",
        bug: "a client times its lease on its own clock with no allowance for drift; the store does not fence",
        needs: "a slow client clock (≤ 500 ppm), a write in the lease's last milliseconds, the rival taking the lease at once",
        bound: 20_000,
        first: Some(1010),
    },
    Canary {
        name: "compact_crash",
        bug: "a store compacts its log by renaming an unsynced temporary file over it",
        needs: "a compaction (its writes reach the threshold), then a crash before the next sync",
        bound: 20_000,
        first: Some(3314),
    },
    Canary {
        name: "skewed_pair",
        bug: "a lease holder writes until the wall-clock expiry its own clock reads; the store fences by its own clock",
        needs: "the holder's clock and the store's both behind (set one at a time as the run goes), and a write in the gap they leave",
        bound: 20_000,
        first: Some(8052),
    },
    Canary {
        name: "stale_forward",
        bug: "a register applies every write in the order it arrives; a write held behind a partition arrives after newer ones",
        needs: "a cut between a frontend and the store that holds a write, outlasts its retry through the other frontend and the next write, then heals",
        bound: 20_000,
        first: Some(1497),
    },
];
