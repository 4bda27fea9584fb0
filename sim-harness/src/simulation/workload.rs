//! Workloads: an operation vocabulary run from N clients on their own nodes.
//!
//! A [`Workload`] names weighted operations, each a closure that talks to
//! the system through its public interface (and usually records into a
//! [`History`](crate::History)). [`Workload::run`] draws, from the swarm
//! (so each seed gets its own mix and the draws are in the report), how
//! many clients there are, how many operations each issues and how long
//! each at most thinks between two; then starts each client on its own node
//! (`<label>-client-<i>`) and waits for all of them.
//!
//! Every choice is keyed on identity: client `i` draws its operations and
//! think times from its own stream (`workload.<label>.client.<i>`), so the
//! number of clients never changes what another client does, and an
//! operation's [`Op::rng`] comes from the client's stream.
//!
//! ```ignore
//! let history = sim::History::new();
//! let h = history.clone();
//! sim::Workload::new("kv")
//!     .clients(2..=5)
//!     .ops(20..=100)
//!     .think_ms(0..=20)
//!     .op("put", 1, move |mut op| {
//!         let h = h.clone();
//!         async move {
//!             let (k, v) = (op.rng().below(4), op.id());
//!             let call = h.invoke(op.client(), Put(k, v));
//!             match put(k, v).await {
//!                 Ok(()) => call.ok(Done),
//!                 Err(_) => call.unknown(),
//!             }
//!         }
//!     })
//!     .run()
//!     .await;
//! ```

use super::node::{node, Node};
use super::rng::Rng;
use super::swarm;
use sim_runtime::sim as rt;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::ops::RangeInclusive;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

type OpFn = Rc<dyn Fn(Op) -> Pin<Box<dyn Future<Output = ()>>>>;

/// One operation of a client, as its closure sees it.
pub struct Op {
    client: u32,
    index: u64,
    name: &'static str,
    rng: Rng,
}

impl Op {
    /// The client issuing it (0-based), the id to record in a history.
    pub fn client(&self) -> u32 {
        self.client
    }

    /// Which of the client's operations this is (0-based).
    pub fn index(&self) -> u64 {
        self.index
    }

    /// A run-unique id: the client and the index together.
    pub fn id(&self) -> u64 {
        (u64::from(self.client) << 40) | self.index
    }

    /// The operation's name in the vocabulary.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The operation's own seeded stream (keys, values, payloads).
    pub fn rng(&mut self) -> &mut Rng {
        &mut self.rng
    }
}

/// A declared workload; see the module's docs.
pub struct Workload {
    label: String,
    clients: RangeInclusive<u64>,
    ops: RangeInclusive<u64>,
    think_ms: RangeInclusive<u64>,
    duration: Option<Duration>,
    vocabulary: Vec<(&'static str, u32, OpFn)>,
}

/// What a workload did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    /// The clients' nodes, in client order.
    pub clients: Vec<String>,
    /// Operations started, by name.
    pub started: BTreeMap<&'static str, u64>,
    /// Clients whose node was crashed or killed before they finished.
    pub cut_short: u32,
}

impl Summary {
    /// Operations started, all names together.
    pub fn total(&self) -> u64 {
        self.started.values().sum()
    }
}

impl Workload {
    /// A workload named `label` (its swarm dimensions are `<label>.clients`,
    /// `<label>.ops` and `<label>.think_ms`): one client, 100 operations,
    /// no think time, until operations are added.
    pub fn new(label: impl Into<String>) -> Workload {
        Workload {
            label: label.into(),
            clients: 1..=1,
            ops: 100..=100,
            think_ms: 0..=0,
            duration: None,
            vocabulary: Vec::new(),
        }
    }

    /// How many clients, drawn per seed from `range`.
    #[track_caller]
    pub fn clients(mut self, range: RangeInclusive<u64>) -> Workload {
        assert!(
            *range.start() >= 1 && range.start() <= range.end() && *range.end() <= 4096,
            "sim::Workload::clients: {range:?} must be a non-empty range within 1..=4096"
        );
        self.clients = range;
        self
    }

    /// Operations per client, drawn per seed from `range`.
    #[track_caller]
    pub fn ops(mut self, range: RangeInclusive<u64>) -> Workload {
        assert!(
            range.start() <= range.end(),
            "sim::Workload::ops: {range:?} is empty"
        );
        self.ops = range;
        self
    }

    /// The most a client thinks between two operations, in milliseconds,
    /// drawn per seed from `range`; each pause is uniform up to it.
    #[track_caller]
    pub fn think_ms(mut self, range: RangeInclusive<u64>) -> Workload {
        assert!(
            range.start() <= range.end(),
            "sim::Workload::think_ms: {range:?} is empty"
        );
        self.think_ms = range;
        self
    }

    /// Clients start no operation once `d` of virtual time has passed
    /// since [`Workload::run`] (operations under way finish).
    pub fn duration(mut self, d: Duration) -> Workload {
        self.duration = Some(d);
        self
    }

    /// Adds operation `name`, chosen with weight `weight` among the others.
    #[track_caller]
    pub fn op<F, Fut>(mut self, name: &'static str, weight: u32, f: F) -> Workload
    where
        F: Fn(Op) -> Fut + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        assert!(weight > 0, "sim::Workload::op: `{name}` has weight 0");
        assert!(
            self.vocabulary.iter().all(|(n, _, _)| *n != name),
            "sim::Workload::op: `{name}` is declared twice"
        );
        self.vocabulary
            .push((name, weight, Rc::new(move |op| Box::pin(f(op)))));
        self
    }

    /// Draws the clients, operation counts and think time, starts every
    /// client on its own node and waits until all are done.
    pub async fn run(self) -> Summary {
        assert!(
            !self.vocabulary.is_empty(),
            "sim::Workload::run: `{}` has no operations; add them with .op(name, weight, f)",
            self.label
        );
        let label = self.label.clone();
        let clients = swarm::range(&format!("{label}.clients"), self.clients.clone());
        let ops = swarm::range(&format!("{label}.ops"), self.ops.clone());
        let think = swarm::range(&format!("{label}.think_ms"), self.think_ms.clone());
        let deadline = self.duration.map(|d| rt::elapsed() + d);
        let vocabulary = Rc::new(self.vocabulary);
        let total_weight: u64 = vocabulary.iter().map(|(_, w, _)| u64::from(*w)).sum();
        let started: Rc<RefCell<BTreeMap<&'static str, u64>>> = Rc::default();
        let mut handles = Vec::new();
        let mut names = Vec::new();
        for i in 0..clients as u32 {
            let name = format!("{label}-client-{i}");
            let host: Node = node(name.clone()).build();
            let mut rng = Rng::from_seed(rt::fork_seed(&format!("workload.{label}.client.{i}")));
            let vocabulary = vocabulary.clone();
            let started = started.clone();
            let handle = host.spawn(async move {
                for index in 0..ops {
                    if deadline.is_some_and(|d| rt::elapsed() >= d) {
                        break;
                    }
                    if think > 0 {
                        let pause = rng.in_range(0..=think);
                        sim_runtime::time::sleep(Duration::from_millis(pause)).await;
                    }
                    let mut pick = rng.below(total_weight);
                    let (op_name, _, f) = vocabulary
                        .iter()
                        .find(|(_, w, _)| {
                            let w = u64::from(*w);
                            if pick < w {
                                true
                            } else {
                                pick -= w;
                                false
                            }
                        })
                        .expect("the pick is below the total weight");
                    *started.borrow_mut().entry(op_name).or_default() += 1;
                    let op = Op {
                        client: i,
                        index,
                        name: op_name,
                        rng: Rng::from_seed(rng.next_u64()),
                    };
                    f(op).await;
                }
            });
            handles.push(handle);
            names.push(name);
        }
        tracing::info!(target: "sim", workload = %label, clients, ops, think_ms = think, "workload started");
        let mut cut_short = 0;
        for h in handles {
            match h.await {
                Ok(()) => {}
                Err(e) if e.is_cancelled() => cut_short += 1,
                Err(e) => std::panic::resume_unwind(e.into_panic()),
            }
        }
        let summary = Summary {
            clients: names,
            started: started.take(),
            cut_short,
        };
        tracing::info!(target: "sim", workload = %label, ops = summary.total(), cut_short = summary.cut_short, "workload done");
        summary
    }
}
