//! Rollouts: each replica behind a routed name replaced in turn by a new
//! version of its service, waiting for a readiness check (`sim::rollout`).

use super::node::Node;
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

/// How a [`rollout_with`] proceeds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RolloutOptions {
    /// How long a replica stays up after leaving the route before it is
    /// signalled, so connections the route gave it just before finish (a
    /// pre-stop delay).
    pub drain: Duration,
    /// SIGTERM, then a kill after this long if the process still runs.
    pub grace: Duration,
    /// How long a restarted replica may take to pass its readiness check.
    pub ready_timeout: Duration,
    /// The wait between two failed readiness checks.
    pub probe_interval: Duration,
}

impl Default for RolloutOptions {
    /// Drain 100 ms, grace 1 s, ready within 30 s, probed every 100 ms.
    fn default() -> RolloutOptions {
        RolloutOptions {
            drain: Duration::from_millis(100),
            grace: Duration::from_secs(1),
            ready_timeout: Duration::from_secs(30),
            probe_interval: Duration::from_millis(100),
        }
    }
}

/// Rolls `replicas` over to a new version of their service, one at a time,
/// with [`RolloutOptions::default`]: see [`rollout_with`].
#[track_caller]
pub fn rollout<F, Fut, R, RFut>(
    replicas: &[Node],
    route_name: &str,
    start: F,
    ready: R,
) -> impl Future<Output = ()> + 'static
where
    F: Fn() -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
    R: Fn(Node) -> RFut + 'static,
    RFut: Future<Output = bool> + 'static,
{
    rollout_with(
        replicas,
        route_name,
        start,
        ready,
        RolloutOptions::default(),
    )
}

/// Rolls `replicas` (the nodes behind the routed name `route_name`) over to
/// the service `start`, one replica at a time. For each replica in turn:
///
/// 1. it leaves the route (`sim::net::route` with the others; a lone
///    replica stays in it, as a route needs a node), and keeps running for
///    `drain`;
/// 2. it gets SIGTERM, and is killed after `grace` if it still runs;
/// 3. it restarts with `start` ([`Node::restart_with`]: later restarts run
///    the new version too);
/// 4. `ready(node)` is probed every `probe_interval` until it returns
///    `true`;
/// 5. it rejoins the route (every replica, in the given order).
///
/// # Panics
/// If a replica is not ready within `ready_timeout` of its restart (the
/// message names the replica and the version's route).
#[track_caller]
pub fn rollout_with<F, Fut, R, RFut>(
    replicas: &[Node],
    route_name: &str,
    start: F,
    ready: R,
    options: RolloutOptions,
) -> impl Future<Output = ()> + 'static
where
    F: Fn() -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
    R: Fn(Node) -> RFut + 'static,
    RFut: Future<Output = bool> + 'static,
{
    assert!(
        !replicas.is_empty(),
        "sim::rollout({route_name:?}): there are no replicas to roll out"
    );
    let replicas = replicas.to_vec();
    let route_name = route_name.to_string();
    let start = Rc::new(start);
    async move {
        for (i, node) in replicas.iter().enumerate() {
            tracing::info!(target: "sim", node = node.name(), route = %route_name, "rollout: out of the route");
            if replicas.len() > 1 {
                let others: Vec<&Node> = replicas
                    .iter()
                    .enumerate()
                    .filter(|&(j, _)| j != i)
                    .map(|(_, n)| n)
                    .collect();
                super::net::route(&route_name, &others);
            }
            sim_runtime::time::sleep(options.drain).await;
            node.kill_after(options.grace);
            sim_runtime::time::sleep(options.grace).await;
            let s = start.clone();
            node.restart_with(move || s());
            let probe = async {
                loop {
                    if ready(node.clone()).await {
                        break;
                    }
                    sim_runtime::time::sleep(options.probe_interval).await;
                }
            };
            if sim_runtime::time::timeout(options.ready_timeout, probe)
                .await
                .is_err()
            {
                panic!(
                    "sim::rollout({route_name:?}): replica {:?} did not pass its readiness check \
                     within {:?} of starting the new version",
                    node.name(),
                    options.ready_timeout
                );
            }
            tracing::info!(target: "sim", node = node.name(), route = %route_name, "rollout: ready, back in the route");
            super::net::route(&route_name, &replicas);
        }
    }
}
