//! How a failed run is told: its class, what happened, and where — seed,
//! schedule, step, virtual time — and the one command that replays it.

use super::config::Schedule;
use std::cell::RefCell;
use std::fmt::Write as _;

/// The kind of failure, each with its own wording: the class a report
/// names (`sim: class: deadlock`), printed by `Display`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Nothing runnable, no timer, main not finished.
    Deadlock,
    /// The virtual-time limit was reached.
    Livelock,
    /// The step limit was reached.
    StepLimit,
    /// A task panicked and nobody could observe it.
    Panic,
    /// Simulated code did something outside the simulation's control.
    Forbidden,
    /// Two runs of the same seed made different decisions.
    Nondeterminism,
    /// The test body failed (a panic or failed assertion in it): told by
    /// the seed runner of a harness.
    Assertion,
    /// Tasks still alive when the body returned, in a strict test: told by
    /// the seed runner of a harness.
    Leak,
    /// A bound of `sim::eventually` missed: told by sim-harness.
    Liveness,
    /// A `sometimes!` or `reachable!` site no seed covered, in a test that
    /// asks for all: told by sim-harness.
    Coverage,
}

impl Class {
    pub fn name(self) -> &'static str {
        match self {
            Class::Deadlock => "deadlock",
            Class::Livelock => "livelock (virtual-time limit)",
            Class::StepLimit => "step limit",
            Class::Panic => "panic",
            Class::Forbidden => "forbidden operation",
            Class::Nondeterminism => "nondeterminism",
            Class::Assertion => "assertion",
            Class::Leak => "leak",
            Class::Liveness => "liveness",
            Class::Coverage => "coverage",
        }
    }

    /// The class a name (as [`Class::name`] gives it) names.
    pub fn from_name(name: &str) -> Option<Class> {
        [
            Class::Deadlock,
            Class::Livelock,
            Class::StepLimit,
            Class::Panic,
            Class::Forbidden,
            Class::Nondeterminism,
            Class::Assertion,
            Class::Leak,
            Class::Liveness,
            Class::Coverage,
        ]
        .into_iter()
        .find(|c| c.name() == name)
    }
}

impl std::fmt::Display for Class {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Clone, Debug)]
pub struct Failure {
    pub class: Class,
    pub message: String,
}

/// How to name the running test in a replay command; set by the
/// `#[tokio::test]` runner, guessed from the thread name otherwise.
#[derive(Clone, Debug)]
pub(crate) struct TestInfo {
    pub name: String,
    pub package: String,
    pub target: String,
}

thread_local! {
    static BINARY: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Marks this thread as running a `#[tokio::main]` binary.
pub(crate) fn set_binary() {
    let name = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "<binary>".into());
    BINARY.with(|b| *b.borrow_mut() = Some(name));
}

thread_local! {
    static TEST: RefCell<Option<TestInfo>> = const { RefCell::new(None) };
}

crate::simulation::core::hooks::carried!(
    REPORT_CARRIED: (Option<String>, Option<TestInfo>),
    take: || (BINARY.with(|b| b.borrow_mut().take()), TEST.with(|t| t.borrow_mut().take())),
    put: |(b, t): (Option<String>, Option<TestInfo>)| {
        BINARY.with(|c| *c.borrow_mut() = b);
        TEST.with(|c| *c.borrow_mut() = t);
    },
);

pub(crate) fn set_test(info: Option<TestInfo>) {
    TEST.with(|t| *t.borrow_mut() = info);
}

/// `SIM_SEED=<seed>` and each steering variable that is set
/// (`config::STEERING`), as a command prefix: `SIM_SEED=7 SIM_SCHEDULE=pct3`.
pub fn replay_env(seed: u64) -> String {
    let steering = super::config::steering();
    let mut s = String::with_capacity(24 + steering.replay_suffix.len());
    let _ = write!(s, "SIM_SEED={seed}{}", steering.replay_suffix);
    s
}

/// The command that replays `seed`.
pub(crate) fn replay_command(seed: u64) -> String {
    let env = replay_env(seed);
    let info = TEST.with(|t| t.borrow().clone());
    match info {
        Some(t) => format!(
            "{env} {} test -p {} {} -- {} --exact",
            cargo_prefix(),
            t.package,
            t.target,
            t.name
        ),
        None => {
            if let Some(bin) = BINARY.with(|b| b.borrow().clone()) {
                return format!("{env} {} run --bin {bin}", cargo_prefix());
            }
            let test = std::thread::current()
                .name()
                .unwrap_or("<test name>")
                .to_string();
            format!("{env} {} test -- {test} --exact", cargo_prefix())
        }
    }
}

/// How this build was made, as the start of a command: `cargo sim` (the
/// whole graph simulated, `--cfg sim_graph`), or the cfg and plain cargo.
pub fn cargo_prefix() -> &'static str {
    if cfg!(sim_graph) {
        "cargo sim"
    } else {
        "RUSTFLAGS=\"--cfg simulation\" cargo"
    }
}

pub(crate) fn fmt_ns(ns: u64) -> String {
    format!("{}.{:09}s", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// What a report says of a run: read from the core when the report is
/// made (`Core::snapshot`), so formatting never holds the core.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Snapshot {
    pub seed: u64,
    pub schedule: Schedule,
    pub step: u64,
    /// Virtual time, ns.
    pub now: u64,
}

/// Seed, schedule, step, virtual time and the replay line.
pub(crate) fn context(at: &Snapshot, class: &str) -> String {
    let seed = at.seed;
    format!(
        "sim: {class} at step {} · virtual time {} · seed {seed} (schedule {})\n\
         sim: replay with: {}",
        at.step,
        fmt_ns(at.now),
        at.schedule.name(),
        replay_command(seed)
    )
}

pub(crate) fn render(at: &Snapshot, f: &Failure) -> String {
    format!(
        "sim: {}: {}\n{}",
        f.class.name(),
        f.message,
        context(at, f.class.name())
    )
}

/// Adds the context to a panic payload that is a string (so
/// `#[should_panic(expected = ..)]` still matches the original text).
pub(crate) fn augment_payload(
    payload: Box<dyn std::any::Any + Send>,
    context: &str,
) -> Box<dyn std::any::Any + Send> {
    // The payload keeps its type, so code that downcasts it (as Tokio's own
    // tests do) still works: a `&'static str` stays one, at the cost of
    // leaking the text of a failed run.
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        let text: &'static str = Box::leak(format!("{s}\n{context}").into_boxed_str());
        return Box::new(text);
    }
    if let Some(s) = payload.downcast_ref::<String>() {
        return Box::new(format!("{s}\n{context}"));
    }
    payload
}

/// What to say under a panic that came from the real `tokio` crate: a
/// dependency that calls Tokio directly (not through this crate) finds no
/// Tokio runtime inside a simulation. `None` for any other panic (the
/// simulation's own "no reactor" message names itself with "(sim:").
pub(crate) fn real_tokio_hint(message: &str) -> Option<&'static str> {
    let real = message.contains("must be called from the context of a Tokio 1.x runtime")
        || message.contains("A Tokio 1.x context was found, but");
    (real && !message.contains("(sim:")).then_some(REAL_TOKIO_HINT)
}

/// What to use instead of the real `tokio` crate's runtime, said under
/// every failure that came from a dependency calling it.
pub(crate) const REAL_TOKIO_HINT: &str =
    "sim: this panic comes from the real `tokio` crate: a dependency called Tokio directly \
     instead of through sim-runtime, and a simulation's real Tokio context has no timer, no \
     I/O and runs no tasks of its own. Usual suspects: hyper-util's TokioExecutor, TokioTimer \
     and HttpConnector, and axum::serve (use tokio::hyper::{Executor, Timer, Connector, \
     serve}, feature `hyper`); tokio-util's DelayQueue, TaskTracker::spawn and JoinMap; \
     tokio-stream's timeout, throttle and IntervalStream. docs/breakage.md lists each with \
     what to use instead.";

/// The text of a panic payload, as far as it has one.
pub(crate) fn payload_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "<non-string panic payload>".into()
    }
}

/// Silences the default panic hook's output on this thread while it lives
/// (the harness prints the failure itself); other threads are unaffected.
pub(crate) struct QuietPanics;

thread_local! {
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Where the last quiet panic on this thread was raised (`file:line`).
    static PANIC_SITE: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Where the last panic on this thread was raised while it was quiet
/// (`file:line`), taken: with the class, what says two failing runs fail
/// the same way (the harness's shrinking keeps it).
pub(crate) fn take_panic_site() -> Option<String> {
    PANIC_SITE.with(|p| p.borrow_mut().take())
}

/// Whether a harness reports this thread's failures itself (the executor
/// then prints none).
pub(crate) fn quiet() -> bool {
    QUIET.with(|q| q.get())
}

static INSTALL: std::sync::Once = std::sync::Once::new();

impl QuietPanics {
    pub(crate) fn new() -> QuietPanics {
        INSTALL.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                if !QUIET.with(|q| q.get()) {
                    previous(info);
                } else if let Some(at) = info.location() {
                    let site = format!("{}:{}", at.file(), at.line());
                    let _ = PANIC_SITE.try_with(|p| p.replace(Some(site)));
                }
            }));
        });
        QUIET.with(|q| q.set(true));
        let _ = take_panic_site();
        QuietPanics
    }
}

impl Drop for QuietPanics {
    fn drop(&mut self) {
        QUIET.with(|q| q.set(false));
    }
}

#[cfg(test)]
mod tests {
    use super::Class;

    /// The names reports, traces, results files and replay lines print:
    /// each class prints exactly its name of old, and reads back from it.
    #[test]
    fn every_class_prints_its_name_and_reads_back() {
        let names = [
            (Class::Deadlock, "deadlock"),
            (Class::Livelock, "livelock (virtual-time limit)"),
            (Class::StepLimit, "step limit"),
            (Class::Panic, "panic"),
            (Class::Forbidden, "forbidden operation"),
            (Class::Nondeterminism, "nondeterminism"),
            (Class::Assertion, "assertion"),
            (Class::Leak, "leak"),
            (Class::Liveness, "liveness"),
            (Class::Coverage, "coverage"),
        ];
        for (class, name) in names {
            assert_eq!(class.to_string(), name);
            assert_eq!(Class::from_name(name), Some(class));
        }
        assert_eq!(Class::from_name("pass"), None);
    }
}
