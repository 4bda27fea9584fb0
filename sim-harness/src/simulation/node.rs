//! Nodes of a harness test: a name, an IP, a disk, and the service that
//! runs there — started again on every restart.

use sim_runtime::signal::unix::SignalKind;
use sim_runtime::sim as rt;
pub use sim_runtime::sim::AsNode;
use std::cell::RefCell;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

type Start = Rc<dyn Fn() -> Pin<Box<dyn Future<Output = ()>>>>;

/// Starts describing a node: `sim::node("db").ip("10.0.0.5").start(|| serve())`.
pub fn node(name: impl Into<String>) -> NodeBuilder {
    NodeBuilder {
        name: name.into(),
        ip: None,
        restart_on_panic: false,
    }
}

/// A node being described.
#[derive(Debug, Clone)]
#[must_use = "a node is created by `.start(..)` or `.build()`"]
pub struct NodeBuilder {
    name: String,
    ip: Option<IpAddr>,
    restart_on_panic: bool,
}

impl NodeBuilder {
    /// The node's IP address. Without one the node gets an implicit
    /// address, the next free one in 198.18.0.0/15 (the test body's own
    /// node, `main`, is 198.18.0.1); any address outside that range, such as
    /// 10.0.0.1, is never taken implicitly.
    #[track_caller]
    pub fn ip(mut self, ip: &str) -> NodeBuilder {
        match ip.parse() {
            Ok(ip) => self.ip = Some(ip),
            Err(_) => panic!(
                "sim: node {:?}: {ip:?} is not an IP address (write it like \"10.0.0.5\")",
                self.name
            ),
        }
        self
    }

    /// When the service's task panics, start it again (as a supervisor
    /// would) instead of failing the run.
    pub fn restart_on_panic(mut self) -> NodeBuilder {
        self.restart_on_panic = true;
        self
    }

    /// Creates the node and starts `service` on it; `service` is called
    /// again on every restart.
    #[track_caller]
    pub fn start<F, Fut>(self, service: F) -> Node
    where
        F: Fn() -> Fut + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let node = self.create(Some(Rc::new(move || Box::pin(service()))));
        super::timeline::note(super::timeline::Noted::Start, &[node.name()]);
        node.launch();
        node
    }

    /// Creates the node without a service (spawn on it with [`Node::spawn`]).
    #[track_caller]
    pub fn build(self) -> Node {
        self.create(None)
    }

    #[track_caller]
    fn create(self, start: Option<Start>) -> Node {
        let mut b = rt::node(self.name.clone());
        if let Some(ip) = self.ip {
            b = b.ip(ip);
        }
        let node = Node {
            inner: Rc::new(Inner {
                id: b.build(),
                name: self.name,
                start: RefCell::new(start),
                restart_on_panic: self.restart_on_panic,
            }),
        };
        super::liveness::register_node(&node);
        node
    }
}

struct Inner {
    id: rt::Node,
    name: String,
    /// Replaced by [`Node::restart_with`] (a new version of the service).
    start: RefCell<Option<Start>>,
    restart_on_panic: bool,
}

/// A node of the simulation: its lifecycle, as one call each.
#[derive(Clone)]
pub struct Node {
    inner: Rc<Inner>,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Node({:?})", self.inner.name)
    }
}

impl Node {
    /// The node's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The node's IP address.
    pub fn ip(&self) -> IpAddr {
        rt::node_ip(self.inner.id).expect("every node has an IP")
    }

    /// The runtime's id of the node.
    pub fn id(&self) -> rt::Node {
        self.inner.id
    }

    /// Whether the node's process is running.
    pub fn is_alive(&self) -> bool {
        rt::is_alive(self.inner.id)
    }

    /// Spawns a task on the node.
    #[track_caller]
    pub fn spawn<F>(&self, future: F) -> sim_runtime::task::JoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        rt::spawn_on(self.inner.id, future)
    }

    /// Starts the service; its task's spawn location is the caller's (the
    /// test's `start` or `restart`), which is what a leftover or deadlock
    /// report should name.
    #[track_caller]
    fn launch(&self) {
        let Some(start) = self.inner.start.borrow().clone() else {
            return;
        };
        let me = self.clone();
        let service = start();
        let handle = rt::spawn_on(self.inner.id, service);
        if self.inner.restart_on_panic {
            // A supervisor on the driver: when the service panics, start it
            // again (a kill or crash cancels it instead, which is not a
            // reason to restart).
            rt::spawn_on(rt::Node::MAIN, async move {
                if let Err(e) = handle.await {
                    if e.is_panic() && me.is_alive() {
                        tracing::info!(target: "sim", node = me.name(), "service panicked; restarting it");
                        me.launch();
                    }
                }
            });
        } else {
            drop(handle);
        }
    }

    /// Crashes the machine: tasks dropped, sockets silent, the disk keeps
    /// only what was synced.
    #[track_caller]
    pub fn crash(&self) {
        rt::crash(self.inner.id);
    }

    /// Kills the process: tasks dropped, sockets closed by the kernel, the
    /// disk keeps its page cache.
    #[track_caller]
    pub fn kill(&self) {
        rt::kill(self.inner.id);
    }

    /// Restarts the node: kills it if it runs, then starts its service
    /// again on the same host (same IP, same disk).
    #[track_caller]
    pub fn restart(&self) {
        rt::restart(self.inner.id);
        self.launch();
    }

    /// Restarts the node with another service (a new version of the app):
    /// kills it if it runs, makes `service` the node's service for this
    /// start and every later restart, and starts it on the same host (same
    /// IP, same disk).
    #[track_caller]
    pub fn restart_with<F, Fut>(&self, service: F)
    where
        F: Fn() -> Fut + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        *self.inner.start.borrow_mut() = Some(Rc::new(move || Box::pin(service())));
        self.restart();
    }

    /// Pauses the node (no task polled, no timer fired) until [`Node::resume`].
    #[track_caller]
    pub fn pause(&self) {
        rt::pause(self.inner.id);
    }

    #[track_caller]
    pub fn resume(&self) {
        rt::resume(self.inner.id);
    }

    /// Delivers a signal (`SignalKind::terminate()`, `interrupt()`,
    /// `hangup()`, …) through `tokio::signal`.
    #[track_caller]
    pub fn signal(&self, kind: SignalKind) {
        rt::signal(self.inner.id, kind);
    }

    /// SIGTERM now, then a kill after `grace` if the process still runs
    /// (the same process: a restart in between cancels the kill).
    #[track_caller]
    pub fn kill_after(&self, grace: Duration) {
        self.signal(SignalKind::terminate());
        let me = self.clone();
        let incarnation = rt::incarnation(self.inner.id);
        rt::at(rt::elapsed() + grace, move || {
            if me.is_alive() && rt::incarnation(me.inner.id) == incarnation {
                me.kill();
            }
        });
    }

    /// Sets the node's wall clock ahead (`ahead = true`) or behind.
    #[track_caller]
    pub fn skew(&self, offset: Duration, ahead: bool) {
        rt::skew_clock(self.inner.id, offset, ahead);
    }

    /// Makes the node's clocks run `1 + ppm / 1e6` times as fast, from now
    /// on: a change mid-run changes their rate, never what they read.
    #[track_caller]
    pub fn drift(&self, ppm: i64) {
        rt::set_drift_ppm(self.inner.id, ppm);
    }
}

/// Something that names a node: a [`Node`], its name, or its runtime id.
impl AsNode for Node {
    fn node_id(&self) -> rt::Node {
        self.inner.id
    }
}

impl AsNode for &Node {
    fn node_id(&self) -> rt::Node {
        self.inner.id
    }
}
