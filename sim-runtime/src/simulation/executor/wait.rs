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
//! is said as such. Edges between tasks (a `JoinHandle` awaited) are
//! followed, and a cycle among them is printed.
//!
//! Noting costs one write of the task's cold metadata per pending leaf;
//! the stamp is written into the slab entry the poll writes anyway.

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
            None => core.main_wait = Some((step, wait)),
            Some(id) => {
                let (_, slot, polled) = core.polling;
                if polled == id && slot != MAIN_SLOT {
                    if let Some(meta) = core.meta.get_mut(slot as usize) {
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
        let task = self.tasks.get(slot)?.as_ref()?;
        let (stamp, wait) = self.meta.get(slot)?.wait?;
        (stamp == task.polled_at).then_some(wait)
    }

    fn describe(&mut self, wait: Option<Wait>) -> String {
        match wait {
            Some(Wait::Join(id)) => {
                let alive = self
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
    /// then the cycles among tasks that await each other's ends.
    pub(super) fn wait_for_graph(&mut self) -> String {
        let mut slots: Vec<usize> = (0..self.tasks.len())
            .filter(|&s| self.tasks[s].as_ref().is_some_and(|t| t.future.is_some()))
            .collect();
        slots.sort_by_key(|&s| self.tasks[s].as_ref().map(|t| t.id));
        let mut out = String::new();
        let main = self
            .main_wait
            .filter(|(stamp, _)| *stamp == self.main_polled_at)
            .map(|(_, w)| w);
        let _ = write!(
            out,
            "\n    the main future waits for {}",
            self.describe(main)
        );
        if slots.is_empty() {
            out.push_str("\n    (no other live task)");
        }
        let mut edges = Vec::new();
        for &slot in &slots {
            let (id, node) = {
                let t = self.tasks[slot].as_ref().expect("live");
                (t.id, t.node)
            };
            let wait = self.wait_of(slot);
            if let Some(Wait::Join(to)) = wait {
                edges.push((id, to));
            }
            let described = match wait {
                None if self.node(node).paused => "whatever it waits for, held while its node is \
                                                   paused (its timers fire and its wake-ups \
                                                   land when the node resumes)"
                    .to_string(),
                _ => self.describe(wait),
            };
            let n = self.node(node);
            let paused = if n.paused { " (paused)" } else { "" };
            let line = format!(
                "\n    task {id} {} on node '{}'{paused} spawned at {}: waits for {}",
                self.meta[slot]
                    .name
                    .as_deref()
                    .map(|n| format!("'{n}'"))
                    .unwrap_or_else(|| "(unnamed)".into()),
                n.name,
                self.meta[slot].location,
                described
            );
            out.push_str(&line);
        }
        for cycle in cycles(&edges) {
            let path: Vec<String> = cycle.iter().map(|id| format!("task {id}")).collect();
            let _ = write!(
                out,
                "\n  cycle: {} -> task {} (each awaits the next one's end)",
                path.join(" -> "),
                cycle[0]
            );
        }
        out
    }
}

/// The cycles of a graph in which each node has at most one out-edge
/// (a task awaits one thing at a time), each once, from its smallest id.
fn cycles(edges: &[(u64, u64)]) -> Vec<Vec<u64>> {
    let next = |id: u64| edges.iter().find(|(a, _)| *a == id).map(|(_, b)| *b);
    let mut found: Vec<Vec<u64>> = Vec::new();
    for &(start, _) in edges {
        let mut path = vec![start];
        let mut at = start;
        while let Some(to) = next(at) {
            if let Some(pos) = path.iter().position(|&x| x == to) {
                let mut cycle = path[pos..].to_vec();
                let min = cycle
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, id)| **id)
                    .map_or(0, |(i, _)| i);
                cycle.rotate_left(min);
                if !found.contains(&cycle) {
                    found.push(cycle);
                }
                break;
            }
            path.push(to);
            at = to;
        }
    }
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::cycles;

    #[test]
    fn cycles_are_found_once_from_their_smallest_task() {
        let edges = [(5, 3), (3, 9), (9, 5), (7, 3), (1, 2)];
        assert_eq!(cycles(&edges), vec![vec![3, 9, 5]]);
        assert!(cycles(&[(1, 2), (2, 3)]).is_empty());
        assert_eq!(cycles(&[(4, 4)]), vec![vec![4]]);
    }
}
