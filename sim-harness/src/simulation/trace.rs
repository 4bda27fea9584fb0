//! Traces: every `tracing` event of a seed's run — the service's and the
//! simulator's — stamped with virtual time and node name, kept in memory and
//! written to `target/sim/<test>/<seed>.trace` when the seed fails (or
//! always, with `SIM_TRACE=1`).
//!
//! The text is built lazily: a sweep runs its seeds untraced (their events
//! reach no subscriber and are never formatted) and runs a failing seed a
//! second time with a collector (run/triage.rs); the rerun, the shrunk run
//! and, with `SIM_TRACE=1` or a page for every seed, every seed are traced.
//! A collector changes no decision, so the two runs are the same run (the
//! report's rerun verdict compares their fingerprints).

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::prelude::*;

/// At most this many lines are kept (the oldest are dropped first).
const MAX_LINES: usize = 200_000;

/// The lines of one seed's trace.
#[derive(Clone, Default)]
pub(crate) struct Lines(Arc<Mutex<TraceBuf>>);

#[derive(Default)]
struct TraceBuf {
    lines: std::collections::VecDeque<String>,
    dropped: u64,
}

impl Lines {
    pub(crate) fn take(&self) -> (Vec<String>, u64) {
        let mut b = self.0.lock().unwrap_or_else(|e| e.into_inner());
        (b.lines.drain(..).collect(), b.dropped)
    }
}

struct Stamped {
    lines: Lines,
}

struct Fields(String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, " {value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            let _ = write!(self.0, " {value}");
        } else {
            let _ = write!(self.0, " {}={value}", field.name());
        }
    }
}

impl<S: Subscriber> Layer<S> for Stamped {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let (time, node) = match sim_runtime::sim::stamp() {
            Some((t, n)) => (format!("{:>4}.{:09}s", t.as_secs(), t.subsec_nanos()), n),
            None => ("      (outside)".to_string(), "-".to_string()),
        };
        let mut fields = Fields(String::new());
        event.record(&mut fields);
        let m = event.metadata();
        let line = format!(
            "{time} {node:<10} {:<5} {}:{}",
            m.level(),
            m.target(),
            fields.0
        );
        let mut b = self.lines.0.lock().unwrap_or_else(|e| e.into_inner());
        if b.lines.len() >= MAX_LINES {
            b.lines.pop_front();
            b.dropped += 1;
        }
        b.lines.push_back(line);
    }
}

/// A trace collector: one per job thread, installed on each seed's thread
/// in turn (building a subscriber costs more than a small seed's run).
#[derive(Clone)]
pub(crate) struct Collector {
    lines: Lines,
    dispatch: tracing::Dispatch,
}

impl Collector {
    pub(crate) fn new() -> Collector {
        let lines = Lines::default();
        let filter = tracing_subscriber::filter::Targets::new().with_default(level_from_env());
        let subscriber = tracing_subscriber::registry().with(
            Stamped {
                lines: lines.clone(),
            }
            .with_filter(filter),
        );
        Collector {
            lines,
            dispatch: tracing::Dispatch::new(subscriber),
        }
    }

    /// Collects this thread's events until the guard drops; the lines are
    /// then in [`Lines::take`] (the collector starts empty each time).
    pub(crate) fn install(&self) -> (Lines, tracing::dispatcher::DefaultGuard) {
        drop(self.lines.take());
        (
            self.lines.clone(),
            tracing::dispatcher::set_default(&self.dispatch),
        )
    }
}

/// `SIM_TRACE_LEVEL` (`error`, `warn`, `info`, `debug`, `trace`; default
/// `debug`).
fn level_from_env() -> tracing::Level {
    match std::env::var("SIM_TRACE_LEVEL").ok().as_deref() {
        None | Some("") => tracing::Level::DEBUG,
        Some(v) => v.parse().unwrap_or_else(|_| {
            panic!(
                "sim: SIM_TRACE_LEVEL={v:?} is not a level: use error, warn, info, debug or trace"
            )
        }),
    }
}
