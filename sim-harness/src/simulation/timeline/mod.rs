//! Seeing a run: the timeline page (`target/sim/<test>/<seed>.html`), and
//! the Perfetto and pcap exports (`SIM_EXPORT=perfetto,pcap`).
//!
//! A seed that will be drawn runs with the recorder on: the network model
//! logs its traffic (sim-runtime's `run/record.rs`) and the harness's lifecycle
//! and fault calls log themselves here ([`note`]). Both logs are
//! write-only, so a recorded run makes the same decisions and has the same
//! fingerprint as an unrecorded one (tested in `tests/timeline.rs`). Off,
//! a note costs one thread-local read.
//!
//! Which seeds are recorded: the first failing seed's rerun (the
//! reproduction check) always; every seed with `SIM_TIMELINE=1` (a page
//! for passing seeds too) or `SIM_EXPORT=...`.

mod model;
mod page;
mod pcap;
mod perfetto;

pub(crate) use model::Model;
use sim_runtime::__private::harness::RunRecord;
use sim_runtime::sim::{Class, Fault};
use std::cell::{Cell, RefCell};
use std::fmt::Write as _;

/// A lifecycle or fault call, at virtual time `at` (ns), with `args` its
/// arguments in order (node names first).
#[derive(Clone, Debug)]
pub(crate) struct Note {
    pub at: u64,
    pub what: Noted,
    pub args: Vec<String>,
}

/// What a note records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Noted {
    /// A node started with its service (the harness's `start`).
    Start,
    /// A call of the runtime's control API (a fault, a heal, a lifecycle
    /// step), as its observer saw it.
    Call(Fault),
    /// A `sim::fake` fault that happened (its mode's label, `fake: hang`).
    Fake(&'static str),
}

impl Noted {
    /// Its name on the page (`start`, `crash`, `partition`, …).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Noted::Start => "start",
            Noted::Call(f) => f.name(),
            Noted::Fake(label) => label,
        }
    }
}

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
    static NOTES: RefCell<Vec<Note>> = const { RefCell::new(Vec::new()) };
}

/// Whether this seed is recorded (a caller that must format its
/// arguments asks first).
pub(crate) fn recording() -> bool {
    ON.with(|c| c.get())
}

/// Logs a lifecycle or fault call when this seed is recorded.
pub(crate) fn note(what: Noted, args: &[&str]) {
    if !recording() {
        return;
    }
    let at = sim_runtime::sim::stamp().map_or(0, |(t, _)| t.as_nanos() as u64);
    let args = args.iter().map(|a| a.to_string()).collect();
    NOTES.with(|n| n.borrow_mut().push(Note { at, what, args }));
}

/// Turns recording on or off for the seeds run on this thread.
pub(crate) fn set_recording(on: bool) {
    ON.with(|c| c.set(on));
    NOTES.with(|n| n.borrow_mut().clear());
    sim_runtime::__private::harness::set_recording(on);
}

/// What a recorded seed leaves: the network's log and the harness's notes.
pub(crate) struct Recorded {
    pub run: RunRecord,
    pub notes: Vec<Note>,
}

/// Takes this thread's recording of the run that just ended.
pub(crate) fn take() -> Option<Recorded> {
    if !ON.with(|c| c.get()) {
        return None;
    }
    let notes = NOTES.with(|n| std::mem::take(&mut *n.borrow_mut()));
    let run = sim_runtime::__private::harness::take_record()?;
    Some(Recorded { run, notes })
}

/// What the environment asks for: `SIM_TIMELINE=1` (a page for every
/// seed) and `SIM_EXPORT=perfetto,pcap`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Wanted {
    pub every_page: bool,
    pub perfetto: bool,
    pub pcap: bool,
}

impl Wanted {
    pub(crate) fn from_env() -> Wanted {
        let mut w = Wanted::default();
        if let Ok(v) = std::env::var("SIM_TIMELINE") {
            w.every_page = match v.trim() {
                "" | "0" | "false" | "no" | "off" => false,
                "1" | "true" | "yes" | "on" => true,
                _ => panic!("sim: SIM_TIMELINE={v:?} is malformed. Accepted forms: 1 or 0"),
            };
        }
        if let Ok(v) = std::env::var("SIM_EXPORT") {
            for part in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                match part {
                    "perfetto" => w.perfetto = true,
                    "pcap" => w.pcap = true,
                    _ => panic!(
                        "sim: SIM_EXPORT={v:?}: {part:?} is not an export. Accepted: perfetto, \
                         pcap, or both (SIM_EXPORT=perfetto,pcap)"
                    ),
                }
            }
        }
        w
    }

    /// Whether every seed is recorded.
    pub(crate) fn every_seed(self) -> bool {
        self.every_page || self.perfetto || self.pcap
    }
}

/// What the page shows of the run's end.
pub(crate) struct Ending<'a> {
    pub test: &'a str,
    pub seed: u64,
    pub class: Option<Class>,
    pub message: &'a str,
    pub step: u64,
    pub now_ns: u64,
    pub schedule: &'a str,
    /// The tasks alive when the body returned, as the runtime describes
    /// them (`task 7 'name' on node 'kv1' spawned at …`): names for the
    /// export's task threads.
    pub tasks: &'a [String],
    /// Moments the triage found, drawn across every lane: `(virtual ns,
    /// step, label)` (when the failure became likely and certain).
    pub markers: &'a [(u64, u64, String)],
}

/// The files of a recorded seed: its page, then the exports asked for, as
/// (file name, bytes); the runner writes them next to the trace.
pub(crate) fn files(
    rec: &Recorded,
    trace: &[String],
    end: &Ending<'_>,
    wanted: Wanted,
) -> Vec<(String, Vec<u8>)> {
    let model = Model::build(rec, trace, end);
    let mut out = vec![(
        format!("{}.html", end.seed),
        page::render(&model, end).into_bytes(),
    )];
    if wanted.perfetto {
        let json = perfetto::render(&model).into_bytes();
        out.push((format!("{}.perfetto.json", end.seed), json));
    }
    if wanted.pcap {
        out.push((format!("{}.pcap", end.seed), pcap::render(rec)));
    }
    out
}

/// How many seeds returned with tasks still running, and the lowest such
/// seed with its tasks.
pub(crate) type Leftovers = (usize, Option<(u64, Vec<String>)>);

/// Prints which tasks were still running when the body returned (every
/// run; `strict` makes them a failure of class leak instead).
pub(crate) fn warn_leftovers(name: &str, strict: bool, total: usize, (count, first): Leftovers) {
    let Some((seed, tasks)) = first else { return };
    if strict {
        return;
    }
    let mut s = format!(
        "sim: warning: {name}: in {count} of {total} seed(s) the test body returned with tasks \
         still running (`#[sim::test(strict)]` fails such a run as a leak); seed {seed}: {} \
         task(s):",
        tasks.len()
    );
    for t in tasks.iter().take(10) {
        let _ = write!(s, "\n    {t}");
    }
    if tasks.len() > 10 {
        let _ = write!(s, "\n    … and {} more", tasks.len() - 10);
    }
    eprintln!("{s}");
}
