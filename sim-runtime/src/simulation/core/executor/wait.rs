//! What each task waits for, for the deadlock report: the wait-for graph.
//!
//! The simulator's own leaves note what a pending poll waits for
//! ([`Exec::note_wait`]): a `JoinHandle` the end of its task, a socket its
//! peer (the network driver names the socket), a signal listener its
//! signal. A note holds only for the poll that made it: it is stamped with
//! the step, and the task's slab entry keeps the step of its last poll, so
//! a task that waited on a socket and now waits on something else shows no
//! stale note. What the simulator does not see — a `tokio::sync` primitive
//! (real Tokio's, kept so types stay identical), another crate's future —
//! is found by experiment where another task holds it (holders.rs: which
//! task's drop wakes the waiter, and what type that drop released), and
//! otherwise said as such. Edges between tasks (a `JoinHandle` awaited,
//! something held) are followed, and the cycles among them are printed.
//!
//! Noting costs one write of the task's cold metadata per pending leaf;
//! the stamp is written into the slab entry the poll writes anyway.

use super::holders::{Held, Holders, MAIN_ID};
use super::{Core, Exec, MAIN_SLOT};
use std::fmt::Write;

/// What a pending poll waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// The end of another task (its `JoinHandle`), by task id.
    Join(u64),
    /// Something a driver names: `what` says what (`"read"`, `"signal"`),
    /// `id` is the driver's (a socket id, a signal number); the driver
    /// describes it for the report (`Driver::describe_wait`).
    Driver(&'static str, u64),
}

impl Exec {
    /// Notes what the poll under way waits for (when it returns pending).
    /// Outside a poll (no current task or main future) it does nothing.
    #[inline]
    pub(crate) fn note_wait(&self, wait: Wait) {
        let cur = self.cur.get();
        let Ok(mut core) = self.core.try_borrow_mut() else {
            return;
        };
        let step = core.step as u32;
        match cur.task {
            None => core.main.wait = Some((step, wait)),
            Some(id) => {
                let (_, slot, polled) = core.polling;
                if polled == id && slot != MAIN_SLOT {
                    if let Some(meta) = core.slab.meta.get_mut(slot as usize) {
                        meta.wait = Some((step, wait));
                    }
                }
            }
        }
    }
}

impl Core {
    /// A task's wait, if its last poll noted one.
    fn wait_of(&self, slot: usize) -> Option<Wait> {
        let task = self.slab.tasks.get(slot)?.as_ref()?;
        let (stamp, wait) = self.slab.meta.get(slot)?.wait?;
        (stamp == task.polled_at).then_some(wait)
    }

    fn describe(&mut self, wait: Option<Wait>) -> String {
        match wait {
            Some(Wait::Join(id)) => {
                let alive = self
                    .slab
                    .tasks
                    .iter()
                    .flatten()
                    .any(|t| t.id == id && t.future.is_some());
                if alive {
                    format!("the end of task {id} (its JoinHandle)")
                } else {
                    format!("the end of task {id} (its JoinHandle; the task is gone)")
                }
            }
            Some(Wait::Driver(what, id)) => {
                let mut text = None;
                self.each_driver(|d, core| {
                    if text.is_none() {
                        text = d.describe_wait(core, what, id);
                    }
                });
                text.unwrap_or_else(|| format!("{what} {id}"))
            }
            None => "nothing the simulator sees: a tokio::sync primitive (a lock, a channel, \
                     a semaphore, a Notify) or another crate's future"
                .into(),
        }
    }

    /// The deadlock report's body: every live task with what it waits for,
    /// then the cycles among tasks that wait on each other: through each
    /// other's ends (`JoinHandle`s) and through what each holds, as the
    /// experiment found it (holders.rs).
    pub(super) fn wait_for_graph(&mut self, holders: &Holders) -> String {
        let mut slots: Vec<usize> = (0..self.slab.tasks.len())
            .filter(|&s| {
                self.slab.tasks[s]
                    .as_ref()
                    .is_some_and(|t| t.future.is_some())
            })
            .collect();
        slots.sort_by_key(|&s| self.slab.tasks[s].as_ref().map(|t| t.id));
        let mut out = String::new();
        let main = self
            .main
            .wait
            .filter(|(stamp, _)| *stamp == self.main.polled_at)
            .map(|(_, w)| w);
        let mut edges: Vec<Edge> = Vec::new();
        if let Some(Wait::Join(to)) = main {
            edges.push(Edge::join(MAIN_ID, to));
        }
        let described = self.describe_held(MAIN_ID, main, holders);
        let _ = write!(out, "\n    the main future waits for {described}");
        if slots.is_empty() {
            out.push_str("\n    (no other live task)");
        }
        for &slot in &slots {
            let (id, node) = {
                let t = self.slab.tasks[slot].as_ref().expect("live");
                (t.id, t.node)
            };
            let wait = self.wait_of(slot);
            if let Some(Wait::Join(to)) = wait {
                edges.push(Edge::join(id, to));
            }
            let held = holders.edges.iter().any(|e| e.waiter == id);
            let described = match wait {
                None if self.node(node).paused && !held => {
                    "whatever it waits for, held while its node is paused (its timers fire and \
                     its wake-ups land when the node resumes)"
                        .to_string()
                }
                _ => self.describe_held(id, wait, holders),
            };
            let n = self.node(node);
            let paused = if n.paused { " (paused)" } else { "" };
            let line = format!(
                "\n    task {id} {} on node '{}'{paused} spawned at {}: waits for {}",
                self.slab.meta[slot]
                    .name
                    .as_deref()
                    .map(|n| format!("'{n}'"))
                    .unwrap_or_else(|| "(unnamed)".into()),
                n.name,
                self.slab.meta[slot].location,
                described
            );
            out.push_str(&line);
        }
        for held in &holders.edges {
            if !edges
                .iter()
                .any(|e| e.from == held.waiter && e.to == held.holder)
            {
                edges.push(Edge {
                    from: held.waiter,
                    to: held.holder,
                    what: Some(held.what.clone()),
                });
            }
        }
        for cycle in cycles(&edges) {
            let path: Vec<String> = cycle.iter().map(|e| name(e.from)).collect();
            let _ = write!(
                out,
                "\n  cycle: {} -> {}",
                path.join(" -> "),
                name(cycle[0].from)
            );
            if cycle.iter().all(|e| e.what.is_none()) {
                out.push_str(" (each awaits the next one's end)");
                continue;
            }
            for e in &cycle {
                let because = match &e.what {
                    None => format!("awaits {}'s end (its JoinHandle)", name(e.to)),
                    Some(what) => format!(
                        "waits for what {} holds ({})",
                        name(e.to),
                        releases(e.to, what)
                    ),
                };
                let _ = write!(out, "\n    {} {because}", name(e.from));
            }
        }
        for note in &holders.notes {
            let _ = write!(out, "\n  ({note})");
        }
        out
    }

    /// `describe`, or, when the simulator saw nothing but the experiment
    /// found who holds it, that.
    fn describe_held(&mut self, id: u64, wait: Option<Wait>, holders: &Holders) -> String {
        let found: Vec<&Held> = holders.edges.iter().filter(|e| e.waiter == id).collect();
        if wait.is_some() || found.is_empty() {
            return self.describe(wait);
        }
        let by: Vec<String> = found.iter().map(|e| releases(e.holder, &e.what)).collect();
        let who: Vec<String> = found.iter().map(|e| name(e.holder)).collect();
        format!("something {} holds: {}", who.join(" or "), by.join("; "))
    }
}

/// A task's or the main future's name in the report.
pub(super) fn name(id: u64) -> String {
    if id == MAIN_ID {
        "the main future".into()
    } else {
        format!("task {id}")
    }
}

/// "dropping task 3 releases its tokio::sync::mutex::MutexGuard<()>".
fn releases(holder: u64, what: &Option<String>) -> String {
    match what {
        Some(ty) => format!("dropping {} releases its {ty}", name(holder)),
        None => format!("dropping {} wakes it", name(holder)),
    }
}

/// A wait-for edge: `from` waits for `to`, through `to`'s end (`what` is
/// `None`) or through something `to` holds (`Some`, with the dropped type
/// when known).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Edge {
    from: u64,
    to: u64,
    what: Option<Option<String>>,
}

impl Edge {
    fn join(from: u64, to: u64) -> Edge {
        Edge {
            from,
            to,
            what: None,
        }
    }
}

/// Cycles of the graph, each once, from its smallest id: for each id in
/// turn, the shortest cycle through it among ids not smaller (a breadth
/// first search), so a cycle is found from its smallest member only.
fn cycles(edges: &[Edge]) -> Vec<Vec<Edge>> {
    let mut ids: Vec<u64> = edges.iter().flat_map(|e| [e.from, e.to]).collect();
    ids.sort_unstable();
    ids.dedup();
    let mut found = Vec::new();
    for &start in &ids {
        // Breadth first from `start`, remembering by which edge each id
        // was reached.
        let mut via: Vec<(u64, usize)> = Vec::new();
        let mut frontier = vec![start];
        let mut closing = None;
        'search: while !frontier.is_empty() {
            let mut next = Vec::new();
            for &at in &frontier {
                for (i, e) in edges.iter().enumerate() {
                    if e.from != at || e.to < start {
                        continue;
                    }
                    if e.to == start {
                        closing = Some(i);
                        break 'search;
                    }
                    if !via.iter().any(|&(id, _)| id == e.to) {
                        via.push((e.to, i));
                        next.push(e.to);
                    }
                }
            }
            frontier = next;
        }
        let Some(last) = closing else { continue };
        let mut cycle = vec![edges[last].clone()];
        let mut at = edges[last].from;
        while at != start {
            let &(_, i) = via.iter().find(|&&(id, _)| id == at).expect("reached");
            cycle.push(edges[i].clone());
            at = edges[i].from;
        }
        cycle.reverse();
        found.push(cycle);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::{cycles, Edge};

    fn ids(edges: &[(u64, u64)]) -> Vec<Vec<u64>> {
        let edges: Vec<Edge> = edges.iter().map(|&(a, b)| Edge::join(a, b)).collect();
        cycles(&edges)
            .into_iter()
            .map(|c| c.iter().map(|e| e.from).collect())
            .collect()
    }

    #[test]
    fn cycles_are_found_once_from_their_smallest_task() {
        assert_eq!(
            ids(&[(5, 3), (3, 9), (9, 5), (7, 3), (1, 2)]),
            vec![vec![3, 9, 5]]
        );
        assert!(ids(&[(1, 2), (2, 3)]).is_empty());
        assert_eq!(ids(&[(4, 4)]), vec![vec![4]]);
        // More than one edge out of a task (it waits for what either of two
        // tasks holds): each cycle is found, the shortest through its
        // smallest member.
        assert_eq!(
            ids(&[(1, 2), (1, 3), (3, 1), (2, 4), (4, 2)]),
            vec![vec![1, 3], vec![2, 4]]
        );
        assert_eq!(ids(&[(0, 2), (2, 0), (0, 3)]), vec![vec![0, 2]]);
    }
}
