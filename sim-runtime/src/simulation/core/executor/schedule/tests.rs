//! A strategy registered by one line is chosen by its name, and runs.

use super::{Runnable, Schedule, Strategy};
use crate::simulation::core::config::Config;
use crate::simulation::core::executor::Exec;
use std::cell::RefCell;
use std::panic::Location;
use std::rc::Rc;

/// Last in, first out: registered for tests only (its line in
/// `strategies!` is `#[cfg(test)]`), and otherwise written as any
/// strategy is.
pub(crate) struct Lifo;

impl Strategy for Lifo {
    const NAMES: &'static [&'static str] = &["lifo"];

    fn new(_variant: usize, _seed: u64) -> Lifo {
        Lifo
    }

    fn pick(&mut self, runnable: &mut Runnable<'_>) -> (u32, u64) {
        runnable.remove(runnable.len() - 1)
    }
}

/// The order in which three tasks spawned at once first run, under the
/// strategy named `name`, and the name the run's report prints.
fn first_polls(name: &str) -> (Vec<u32>, &'static str) {
    let mut config = Config::from_env(3);
    config.schedule = Schedule::parse(name, 3).expect("a registered name");
    let exec = Exec::new(config);
    let order = Rc::new(RefCell::new(Vec::new()));
    {
        let _entered = exec.enter();
        for i in 0..3 {
            let order = order.clone();
            exec.spawn(
                async move { order.borrow_mut().push(i) },
                None,
                Location::caller(),
                None,
            );
        }
        exec.block_on(async {
            while exec.core().alive_tasks() > 0 {
                crate::simulation::task::yield_now().await;
            }
        });
    }
    let printed = exec.core().snapshot().schedule.name();
    let order = order.borrow().clone();
    (order, printed)
}

#[test]
fn a_strategy_registered_by_one_line_is_chosen_by_its_name() {
    assert!(Schedule::accepted().split(", ").any(|n| n == "lifo"));
    assert_eq!(first_polls("lifo"), (vec![2, 1, 0], "lifo"));
    // The same tasks under FIFO, so the order above is the strategy's.
    assert_eq!(first_polls("fifo"), (vec![0, 1, 2], "fifo"));
}

/// The names reports print, and the portfolio over seeds, as they have
/// always been: a seed alone names its strategy, so these never change.
#[test]
fn names_and_portfolio_are_stable() {
    let names: Vec<&str> = (0..12).map(|s| Schedule::portfolio(s).name()).collect();
    assert_eq!(
        names,
        [
            "random", "pct2", "random", "pct3", "random", "pct4", "random", "pct2", "random",
            "pct3", "random", "pct4"
        ]
    );
    assert_eq!(Schedule::random().name(), "random");
    assert!(Schedule::accepted().starts_with("portfolio, random, fifo, pct2, pct3, pct4"));
    for name in ["random", "fifo", "pct2", "pct3", "pct4"] {
        assert_eq!(Schedule::parse(name, 0).map(Schedule::name), Some(name));
    }
    assert_eq!(
        Schedule::parse("portfolio", 5),
        Some(Schedule::portfolio(5))
    );
    assert_eq!(Schedule::parse("pct5", 0), None);
    assert!(Schedule::parse("fifo", 0).unwrap().keeps_tokio_order());
    assert!(!Schedule::random().keeps_tokio_order());
}
