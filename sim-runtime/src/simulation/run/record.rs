//! The run's event recorder, off by default: when the harness turns it on
//! for a seed it will draw (a timeline page, an export), the network model
//! keeps its traffic log (`sim_net::Net::record_traffic`) and the run's end
//! hands it over with the nodes' names and addresses. Recording is
//! write-only: nothing in the simulation reads it, so a recorded run makes
//! the same decisions (and has the same fingerprint) as an unrecorded one.
//! Off, it costs one thread-local read when the network model is made.

use crate::simulation::core::config;
use crate::simulation::core::executor::Core;
use std::cell::RefCell;
use std::net::IpAddr;

pub use sim_net::{HostId, NetEvent, SegmentKind};

thread_local! {
    static TAKEN: RefCell<Option<RunRecord>> = const { RefCell::new(None) };
}

/// What a recorded run leaves: its nodes (in `NodeId` order, which is the
/// network's `HostId` order) and its traffic.
#[derive(Default)]
pub struct RunRecord {
    /// Each node's name and address.
    pub nodes: Vec<(String, Option<IpAddr>)>,
    /// The network model's decisions, in the order it made them.
    pub traffic: Vec<NetEvent>,
    /// The task that made the call behind each of `traffic`'s events (its
    /// runtime id), when one did.
    pub traffic_tasks: Vec<Option<u64>>,
    /// Decisions past the log's bound (`sim_net::MAX_EVENTS`), not kept.
    pub traffic_dropped: u64,
}

/// Records the runs started on this thread from now on (or stops).
pub fn set_recording(on: bool) {
    config::set_recording(on);
}

/// Keeps the ending run's record for [`take_record`] (if it was recorded).
pub(crate) fn collect(core: &mut Core) {
    if !config::recording() {
        return;
    }
    let record = RunRecord {
        nodes: core
            .nodes()
            .iter()
            .map(|n| (n.name.clone(), n.ip))
            .collect(),
        traffic_tasks: crate::simulation::net::take_traffic_actors(core),
        traffic: crate::simulation::net::take_traffic(core),
        traffic_dropped: crate::simulation::net::traffic_dropped(core),
    };
    TAKEN.with(|t| *t.borrow_mut() = Some(record));
}

/// The record of the last recorded run on this thread.
pub fn take_record() -> Option<RunRecord> {
    TAKEN.with(|t| t.borrow_mut().take())
}
