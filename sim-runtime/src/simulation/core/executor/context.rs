//! Real Tokio's task context around every simulated poll.
//!
//! Tokio's sync primitives, its io utilities, `select!` and the simulated
//! leaf futures (sleeps, sockets, join handles) spend Tokio's cooperative
//! budget: 128 units that Tokio's scheduler gives each task poll, after
//! which they return `Pending` (and wake the task) so that a task looping
//! over always-ready work still lets others run. Only Tokio's own scheduler
//! can set that budget, and Tokio's `blocking_*` methods refuse to block
//! only inside a runtime that Tokio itself entered. So the simulation's
//! step loop runs inside a task of a bare real current-thread runtime (one
//! per OS thread, no timer or I/O driver): each simulated poll starts with
//! a whole budget, as on Tokio, and `blocking_recv` in async code panics
//! with Tokio's message. Between two simulated polls the driver puts the
//! budget back to whole itself (dropping a token that holds a whole
//! budget, see [`reset_whole`]), which costs a few instructions; only a
//! poll that spent the whole budget hands control back to Tokio, whose
//! scheduler then wakes what it deferred.
//!
//! Nothing here draws from the seed or steers the schedule: which task runs
//! is still the executor's decision; real Tokio only re-polls the one
//! driver task. A closure of `spawn_blocking` runs outside the real
//! runtime (on Tokio, it runs on a thread of the blocking pool, outside the
//! runtime's context, with no budget), so its blocking calls work.
//!
//! The bare runtime must stay empty: a dependency compiled against the real
//! `tokio` crate that calls `tokio::spawn` would otherwise run its task on
//! it, outside the simulation. Every step checks, and such a spawn fails
//! the run (the runtime is then replaced, dropping the stray task).

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll};
use tokio::task::coop::RestoreOnPending;

/// What one call of the step function did.
pub(crate) enum Step<T> {
    /// It polled something (or did bookkeeping); call again.
    More,
    /// The run (or the pump) is over.
    Done(T),
    /// The executor picked a `spawn_blocking` task (slot, id): it must be
    /// polled outside the real runtime's context.
    Outside(u32, u64),
    /// Nothing is runnable: before the executor concludes so, real Tokio
    /// must wake what it deferred (a task that spent its budget is woken
    /// by Tokio's scheduler after the poll, not in it).
    Flush,
}

/// What the driver task does after one step.
enum Ctl {
    /// Return `Pending` and run again (with a fresh budget).
    Again,
    /// Return `Pending` after deferring its own wake, so that Tokio wakes
    /// everything deferred before it.
    Flush,
    /// Finish.
    Stop,
}

thread_local! {
    /// This thread's bare real runtime, made on first use. A fresh
    /// thread's reset (libc/tls.rs) drops it rather than keep it
    /// (`core::hooks::KEPT`): Tokio's builder makes a `RandomState`, which
    /// draws std's hash keys from the run's stream, so a seed that finds the
    /// runtime made would draw its `HashMap` keys differently from one that
    /// makes it.
    static REAL: RefCell<Option<tokio::runtime::Runtime>> = const { RefCell::new(None) };
    /// Whether this thread is inside `drive`'s real runtime now (a nested
    /// simulation, in a `block_in_place` closure, steps without it).
    static INSIDE: Cell<bool> = const { Cell::new(false) };
    /// The last step could not make the budget whole: the driver must hand
    /// control back to Tokio for a fresh one ([`refresh_budget`]).
    static NEED_FRESH: Cell<bool> = const { Cell::new(false) };
}

/// Whether a task was spawned on the bare real runtime (it holds only the
/// driver task otherwise).
pub(crate) struct Stray(Option<tokio::runtime::RuntimeMetrics>);

impl Stray {
    #[inline]
    pub(crate) fn spawned(&self) -> bool {
        self.0.as_ref().is_some_and(|m| m.num_alive_tasks() > 1)
    }
}

/// Records that a simulated leaf future (a sleep, a join handle, a socket
/// operation) made progress with the unit `token` took, as Tokio's leaves
/// do: the unit stays spent.
#[inline]
pub(crate) fn progress(token: RestoreOnPending) {
    token.made_progress();
}

/// The text of the failure when a task was spawned on the bare runtime.
pub(crate) const STRAY_REAL_TASK: &str =
    "a task was spawned on the real `tokio` crate's runtime (`tokio::spawn` called by a \
     dependency compiled against tokio itself, not sim-runtime); it would run outside the \
     simulation's control";

/// Runs `step` until it returns `Done`, each call inside real Tokio's task
/// context with a fresh cooperative budget; `Outside` picks are handed to
/// `outside`, out of that context.
pub(crate) fn drive<T>(
    mut step: impl FnMut(&Stray) -> Step<T>,
    mut outside: impl FnMut(u32, u64),
) -> T {
    if INSIDE.get() {
        // Nested: Tokio refuses a runtime inside a runtime.
        let no_stray = Stray(None);
        loop {
            match step(&no_stray) {
                Step::More | Step::Flush => {}
                Step::Done(v) => return v,
                Step::Outside(slot, id) => outside(slot, id),
            }
        }
    }
    loop {
        let mut result = None;
        run_inside(|stray: &Stray| match step(stray) {
            Step::More => Ctl::Again,
            Step::Flush => Ctl::Flush,
            other => {
                result = Some(other);
                Ctl::Stop
            }
        });
        match result.expect("the driver stops only with a result") {
            Step::Done(v) => return v,
            Step::Outside(slot, id) => outside(slot, id),
            Step::More | Step::Flush => unreachable!("the driver goes on after these"),
        }
    }
}

/// A future that is `Send` by assertion: the bare runtime is a
/// current-thread one, owned by this thread, so the driver task is only
/// ever polled (and dropped) here.
struct AssertSend(Pin<Box<dyn Future<Output = ()>>>);

// SAFETY: see the type's comment; the task never leaves this thread.
unsafe impl Send for AssertSend {}

impl Future for AssertSend {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.0.as_mut().poll(cx)
    }
}

/// Returns `Pending` once, having woken its task: Tokio polls the task
/// again at once, with a fresh budget.
struct Again(bool);

impl Future for Again {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Runs `step` as the one task of this thread's bare runtime, one call per
/// poll (so one fresh budget per call), until it says stop.
fn run_inside(mut step: impl FnMut(&Stray) -> Ctl) {
    let rt = REAL.with(|r| r.borrow_mut().take()).unwrap_or_else(|| {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a bare current-thread Tokio runtime builds")
    });
    struct Put(Option<tokio::runtime::Runtime>);
    impl Drop for Put {
        fn drop(&mut self) {
            INSIDE.set(false);
            if let Some(rt) = self.0.take() {
                // A stray task (or a panic mid-spawn) leaves the runtime
                // dirty: drop it here, outside any runtime, with its tasks.
                if rt.metrics().num_alive_tasks() == 0 {
                    REAL.with(|r| *r.borrow_mut() = Some(rt));
                }
            }
        }
    }
    let put = Put(Some(rt));
    let rt = put.0.as_ref().expect("just put");
    let stray = Stray(Some(rt.metrics()));
    let driver = async move {
        check_reading();
        NEED_FRESH.set(false);
        loop {
            match step(&stray) {
                // A poll that left some budget needs no fresh one from
                // Tokio: the step made it whole again ([`refresh_budget`])
                // and the next step runs in this same real poll. A poll
                // that spent it all may have left a deferred wake with
                // Tokio, which only Tokio's scheduler wakes: it gets
                // control back.
                Ctl::Again if !NEED_FRESH.get() => {}
                Ctl::Again => {
                    NEED_FRESH.set(false);
                    Again(false).await
                }
                // Tokio's own yield: its wake is deferred behind the others.
                Ctl::Flush => tokio::task::yield_now().await,
                Ctl::Stop => return,
            }
        }
    };
    let driver: Pin<Box<dyn Future<Output = ()> + '_>> = Box::pin(driver);
    // SAFETY: the driver borrows this frame; it is only polled inside the
    // `block_on` below, which returns when the task has finished (its
    // future is dropped on completion and on panic), and the runtime is
    // current-thread, so nothing polls or keeps it afterwards.
    let driver: Pin<Box<dyn Future<Output = ()> + 'static>> =
        unsafe { std::mem::transmute(driver) };
    INSIDE.set(true);
    match rt.block_on(rt.spawn(AssertSend(driver))) {
        Ok(()) => {}
        Err(e) => match e.try_into_panic() {
            Ok(payload) => std::panic::resume_unwind(payload),
            Err(e) => panic!("sim: the simulation's driver task was cancelled: {e}"),
        },
    }
    drop(put);
}

/// After a simulated poll inside the real runtime: makes Tokio's budget
/// whole again for the next, or, when the poll spent it all (or the
/// budget's layout is not trusted), has the driver ask Tokio for a fresh
/// one. Returns whether the poll spent the whole budget.
#[inline]
pub(crate) fn refresh_budget() -> bool {
    let left = tokio::task::coop::has_budget_remaining();
    if !(left && reset_whole()) {
        NEED_FRESH.set(true);
    }
    !left
}

/// Makes Tokio's budget whole (128) again; whether it did. When the
/// budget's layout cannot be trusted, `false` (every step then gets a fresh
/// budget from Tokio, which is exact but slower).
///
/// Tokio does not let a task set its budget. `poll_proceed` takes a unit
/// and returns a `RestoreOnPending` that holds the value it took it from
/// and puts that value back when dropped. Tokio 1.x keeps that value as
/// `Cell<Budget(Option<u8>)>`: two bytes. A token holding a whole budget
/// (`Some(128)`) is made from those bytes and dropped, which sets the
/// budget to 128. The layout is checked against the token's `Debug` text
/// once per process before it is trusted ([`check_reading`]); a different
/// layout turns this shortcut off, not the budget.
#[inline]
fn reset_whole() -> bool {
    if TRUSTED.load(Ordering::Relaxed) != 1 {
        return false;
    }
    // SAFETY: `RestoreOnPending` is two bytes whose layout was checked
    // (`TRUSTED == 1`): these bytes are a token holding `Some(128)`, a value
    // Tokio's own `poll_proceed` produces; its `Drop` stores it as the budget.
    let token: RestoreOnPending = unsafe { std::mem::transmute_copy(&WHOLE) };
    drop(token);
    true
}

/// Whether [`peek`]'s reading is trusted. 0: not checked yet; 1: trusted;
/// 2: not trusted.
static TRUSTED: AtomicU8 = AtomicU8::new(0);

/// Checks [`peek`]'s reading once per process; to be called where the
/// budget is whole (at the start of a real poll).
fn check_reading() {
    if TRUSTED.load(Ordering::Relaxed) == 0 {
        let ok = reading_matches_debug();
        TRUSTED.store(if ok { 1 } else { 2 }, Ordering::Relaxed);
    }
}

/// A whole budget's bytes: `Some(128)`.
const WHOLE: [u8; 2] = [1, 128];

/// The budget's bytes, or `None` if it is spent or has another size.
fn peek() -> Option<[u8; 2]> {
    use tokio::task::coop::{poll_proceed, RestoreOnPending};
    if std::mem::size_of::<RestoreOnPending>() != 2 {
        return None;
    }
    match poll_proceed(&mut Context::from_waker(std::task::Waker::noop())) {
        Poll::Ready(token) => {
            let bytes = read(&token);
            drop(token);
            Some(bytes)
        }
        Poll::Pending => None,
    }
}

/// The bytes of the value `token` puts back (see [`reset_whole`]).
fn read(token: &RestoreOnPending) -> [u8; 2] {
    if std::mem::size_of::<RestoreOnPending>() != 2 {
        return [0, 0];
    }
    // SAFETY: the token is two initialised bytes (checked above); they are
    // copied out and the token is left as it was.
    unsafe { std::mem::transmute_copy(token) }
}

/// Whether [`peek`] reads what the token's `Debug` says, for a whole budget
/// and for one unit less. Called in a fresh real poll (a whole budget).
fn reading_matches_debug() -> bool {
    use tokio::task::coop::poll_proceed;
    let mut cx = Context::from_waker(std::task::Waker::noop());
    let Poll::Ready(first) = poll_proceed(&mut cx) else {
        return false;
    };
    let Poll::Ready(second) = poll_proceed(&mut cx) else {
        return false;
    };
    let says = |t: &tokio::task::coop::RestoreOnPending, n: u8| {
        let text = format!("{t:?}");
        text.contains(&format!("Some({n})")) && !text.contains(&format!("Some({n}0"))
    };
    let ok = std::mem::size_of::<tokio::task::coop::RestoreOnPending>() == 2
        && says(&first, 128)
        && read(&first) == WHOLE
        && says(&second, 127)
        && read(&second) == [1, 127];
    // Both units stay spent; then a token made of a whole budget's bytes,
    // dropped, must make the budget whole again (what `reset_whole` does).
    first.made_progress();
    second.made_progress();
    drop(second);
    drop(first);
    if !ok || peek() != Some([1, 126]) {
        return false;
    }
    // SAFETY: the token is two bytes laid out as read above (checked).
    let whole: tokio::task::coop::RestoreOnPending = unsafe { std::mem::transmute_copy(&WHOLE) };
    drop(whole);
    peek() == Some(WHOLE)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With the Tokio this crate is built against, the budget's reading is
    /// trusted (else every step would pay for a fresh real poll), and it
    /// tells a whole budget from a spent unit; a whole token made from its
    /// bytes resets it.
    #[test]
    fn the_budget_reading_matches_tokio() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            assert!(reading_matches_debug());
            assert_eq!(peek(), Some(WHOLE));
            tokio::task::coop::consume_budget().await;
            assert_eq!(peek(), Some([1, 127]));
            TRUSTED.store(1, Ordering::Relaxed);
            for _ in 0..5 {
                tokio::task::coop::consume_budget().await;
            }
            assert!(!refresh_budget(), "budget was left");
            assert_eq!(peek(), Some(WHOLE), "so it is made whole");
            assert!(!NEED_FRESH.replace(false));
        });
        // Outside a runtime the budget is unconstrained: not whole.
        assert_ne!(peek(), Some(WHOLE));
    }
}
