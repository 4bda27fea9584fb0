use super::*;

/// The order in which `n` tasks that each yield `rounds` times are
/// polled, with the prefetch pipeline on or off.
fn poll_order(n: usize, rounds: usize, prefetch: bool) -> (Vec<u32>, u64) {
    let exec = Exec::new(Config::from_env(7));
    if !prefetch {
        exec.core.borrow_mut().prefetch_min = usize::MAX;
    }
    let order = Rc::new(RefCell::new(Vec::new()));
    let fingerprint = {
        let _entered = exec.enter();
        for i in 0..n as u32 {
            let order = order.clone();
            exec.spawn(
                async move {
                    for _ in 0..rounds {
                        order.borrow_mut().push(i);
                        crate::simulation::task::yield_now().await;
                    }
                },
                None,
                Location::caller(),
                None,
            );
        }
        exec.block_on(async {
            while exec.core.borrow().alive_tasks() > 0 {
                crate::simulation::task::yield_now().await;
            }
        });
        exec.core.borrow().trace.fingerprint()
    };
    let order = order.borrow().clone();
    (order, fingerprint)
}

#[test]
fn prefetching_never_changes_the_schedule() {
    // Enough runnable tasks for the pipeline (and the yield list's
    // prefetch) to run, for several rounds.
    let n = PREFETCH_MIN_RUNNABLE + 500;
    let with = poll_order(n, 3, true);
    let without = poll_order(n, 3, false);
    assert_eq!(with.0.len(), 3 * n);
    assert!(
        with.0 == without.0,
        "the poll order differs with prefetching"
    );
    assert_eq!(with.1, without.1, "fingerprints differ");
    // And the order is a random one, not the spawn order.
    assert!(with.0[..n].windows(2).any(|w| w[0] > w[1]));
}

/// Enough tasks that the slab and the run queue move to huge-page
/// mappings of their own (`mem::HugeVec` past `mem::HUGE_MIN`): every
/// task still runs each round, and a second run in the same process
/// (reusing the mappings the first let go of) runs the same schedule.
#[test]
fn many_tasks_run_on_the_huge_page_slab() {
    let n = 40_000;
    assert!(n * std::mem::size_of::<Option<Task>>() > mem::HUGE_MIN);
    let first = poll_order(n, 2, true);
    let mut seen = first.0.clone();
    seen.sort_unstable();
    let expected: Vec<u32> = (0..n as u32).flat_map(|i| [i, i]).collect();
    assert_eq!(seen, expected);
    let second = poll_order(n, 2, true);
    assert!(first.0 == second.0, "the same seed ran another schedule");
    assert_eq!(first.1, second.1);
}
