//! The shrinking criterion, checked on docs/canaries.md's tables: every
//! canary's shrunk run is no bigger than its seed's, and it is *much
//! shorter* (at most half the seed's injected faults, when it had any, or
//! at most half its steps) for more than half of the canaries that can be:
//! a canary listed in [`FLOORS`] needs, by its program, at least half the
//! steps its seed's run took, so no run that still fails is half as long;
//! the check holds it to that (its seed's steps at most twice its floor).
//!
//! "No bigger" is the shrinker's own order: faults, then steps, then
//! virtual time (a shrunk run may take a few more steps when it injects
//! fewer faults). The quick canaries' cells come from `cargo xtask
//! canaries`, the hard ones' from `--hard`; each command checks the
//! whole catalog after writing its part, reading the other part from the
//! committed docs/canaries.md.

/// The canaries whose seed's run is already within twice the fewest steps
/// their bug needs: name, that fewest number of steps (a lower bound read
/// from the program), and why.
pub const FLOORS: &[(&str, u64, &str)] = &[
    (
        "lost_update",
        5,
        "the main task, each deposit's read and await, each deposit's write",
    ),
    (
        "missed_wakeup",
        4,
        "the worker's check, the push, the notify, the worker's wait",
    ),
    (
        "lock_order",
        3,
        "the main task and each transfer's first lock",
    ),
    (
        "retry_forever",
        600,
        "a retry every 100 ms until the 60 s limit reports the livelock",
    ),
    (
        "run_ahead",
        33,
        "16 loader→warmer hand-offs (two steps each), then the handler",
    ),
    (
        "eof_as_miss",
        9,
        "connect, a get (client and server), an idle close after 50 ms, a second get",
    ),
    (
        "rejected_fill",
        1,
        "the fill that reads back the rejected entry",
    ),
    (
        "yield_ahead",
        22,
        "the payment 21 steps ahead of the cancel's second step",
    ),
    (
        "thread_lost_update",
        19,
        "the whole program runs before its one assertion: the flusher's seven turns (three \
         exports, three sleeps, its end), two polls per request, the main task's awaits, the join",
    ),
    (
        "depth3",
        14,
        "snapshot, reader start, publication, 10 updater steps, the reader's read",
    ),
    (
        "stale_term",
        18,
        "the scenario and three nodes start; six nemesis ticks (an election no earlier than \
         150 ms, a candidate held paused through its next timeout, 150 ms more); the first \
         election's timeout and grant, the candidate's second timeout, a rival's timeout and \
         grant, both grants received, the check",
    ),
];

/// A run's size as a table cell gives it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Size {
    pub faults: u64,
    pub steps: u64,
    /// Virtual time in milliseconds (the cells show three decimals).
    pub ms: u64,
}

/// A canary's shrunk cell: `None` when nothing smaller failed the same
/// way (`= seed's`), else the seed's size and the shrunk one.
pub type Cell = Option<(Size, Size)>;

/// `F faults, S steps, T s → F2, S2, T2 s` (hard::compact's form) or
/// `= seed's`; `Err` for anything else (a missing figure).
pub fn parse(cell: &str) -> Result<Cell, String> {
    let cell = cell.trim();
    if cell == "= seed's" {
        return Ok(None);
    }
    let bad = || format!("not a shrunk cell: {cell:?}");
    let (before, after) = cell.split_once(" → ").ok_or_else(bad)?;
    let ms = |t: &str| -> Option<u64> {
        let t = t.trim().strip_suffix(" s")?;
        let (whole, frac) = t.split_once('.').unwrap_or((t, "0"));
        let frac = format!("{frac:0<3}");
        Some(whole.parse::<u64>().ok()? * 1000 + frac.get(..3)?.parse::<u64>().ok()?)
    };
    let before = {
        let w: Vec<&str> = before.split(", ").collect();
        let [f, s, t] = w[..] else { return Err(bad()) };
        Size {
            faults: f
                .strip_suffix(" faults")
                .and_then(|f| f.parse().ok())
                .ok_or_else(bad)?,
            steps: s
                .strip_suffix(" steps")
                .and_then(|s| s.parse().ok())
                .ok_or_else(bad)?,
            ms: ms(t).ok_or_else(bad)?,
        }
    };
    let after = {
        let w: Vec<&str> = after.split(", ").collect();
        let [f, s, t] = w[..] else { return Err(bad()) };
        Size {
            faults: f.parse().map_err(|_| bad())?,
            steps: s.parse().map_err(|_| bad())?,
            ms: ms(t).ok_or_else(bad)?,
        }
    };
    Ok(Some((before, after)))
}

/// No bigger in the shrinker's order (faults, steps, virtual time).
pub fn no_bigger(before: Size, after: Size) -> bool {
    (after.faults, after.steps, after.ms) <= (before.faults, before.steps, before.ms)
}

/// At most half the faults (when there were any) or at most half the
/// steps.
pub fn much_shorter(before: Size, after: Size) -> bool {
    (before.faults > 0 && after.faults * 2 <= before.faults) || after.steps * 2 <= before.steps
}

/// Each canary's shrunk cell in `md`'s tables (a table row's first cell
/// is the canary's name in backticks, its last the shrunk cell), in the
/// order `names` lists them; a canary without one is missing.
pub fn cells<'a>(md: &str, names: &'a [String]) -> Vec<(&'a str, Option<Result<Cell, String>>)> {
    names
        .iter()
        .map(|name| {
            let tag = format!("| `{name}` |");
            let cell = md
                .lines()
                .filter(|l| l.starts_with(&tag))
                .filter_map(|l| l.trim_end().trim_end_matches('|').rsplit('|').next())
                .map(parse)
                .find(|c| c.is_ok());
            (name.as_str(), cell)
        })
        .collect()
}

/// The criterion over the whole catalog: `Ok(summary)`, or what breaks
/// it.
pub fn check(md: &str, names: &[String]) -> Result<String, String> {
    let mut problems = Vec::new();
    let (mut much, mut floor, mut rest) = (Vec::new(), Vec::new(), Vec::new());
    for (name, cell) in cells(md, names) {
        let at_floor = FLOORS.iter().find(|f| f.0 == name);
        let sizes = match cell {
            None => {
                problems.push(format!("{name}: no shrunk figures in the tables"));
                continue;
            }
            Some(Err(e)) => {
                problems.push(format!("{name}: {e}"));
                continue;
            }
            Some(Ok(sizes)) => sizes,
        };
        if let Some((before, after)) = sizes {
            if !no_bigger(before, after) {
                problems.push(format!(
                    "{name}: the shrunk run is bigger than the seed's ({before:?} → {after:?})"
                ));
            }
            if much_shorter(before, after) {
                much.push(name);
                continue;
            }
        }
        match (at_floor, sizes) {
            (Some(&(_, fewest, _)), Some((before, _))) if before.steps > 2 * fewest => problems
                .push(format!(
                    "{name}: listed at its floor of {fewest} steps, but its seed's run took {} \
                     (more than twice): it can be shrunk to half, or the floor is wrong",
                    before.steps
                )),
            (Some(_), _) => floor.push(name),
            (None, _) => rest.push(name),
        }
    }
    let can = much.len() + rest.len();
    if can > 0 && much.len() * 2 <= can {
        problems.push(format!(
            "only {} of the {can} canaries not at their floor shrink to at most half their \
             faults or steps (more than half must): {}; not: {}",
            much.len(),
            much.join(", "),
            rest.join(", ")
        ));
    }
    let list = |v: &[&str]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(", ")
        }
    };
    if problems.is_empty() {
        Ok(format!(
            "shrinking: every shrunk run is no bigger than its seed's; much shorter (at most half \
             the faults or steps): {} of {} ({}); at their floor: {} ({}); neither: {}",
            much.len(),
            names.len(),
            list(&much),
            floor.len(),
            list(&floor),
            list(&rest)
        ))
    } else {
        Err(format!(
            "the shrinking criterion failed:\n  {}",
            problems.join("\n  ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_both_forms() {
        let (b, a) = parse("37 faults, 340 steps, 1.386 s → 1, 129, 1.029 s")
            .unwrap()
            .unwrap();
        assert_eq!(
            b,
            Size {
                faults: 37,
                steps: 340,
                ms: 1386
            }
        );
        assert_eq!(
            a,
            Size {
                faults: 1,
                steps: 129,
                ms: 1029
            }
        );
        assert_eq!(parse("= seed's").unwrap(), None);
        assert!(parse("—").is_err());
        assert!(parse("1 (found 3 of 3)").is_err());
    }

    #[test]
    fn much_shorter_is_half_the_faults_or_half_the_steps() {
        let s = |faults, steps| Size {
            faults,
            steps,
            ms: 0,
        };
        assert!(much_shorter(s(99, 280), s(48, 280)));
        assert!(!much_shorter(s(99, 280), s(50, 280)));
        assert!(much_shorter(s(0, 34), s(0, 12)));
        assert!(!much_shorter(s(0, 17), s(0, 14)));
        assert!(!much_shorter(s(0, 0), s(0, 1)), "no faults: steps decide");
    }

    #[test]
    fn fewer_faults_may_take_more_steps_but_nothing_may_grow_otherwise() {
        let s = |faults, steps, ms| Size { faults, steps, ms };
        assert!(no_bigger(s(49, 131, 10), s(22, 136, 11)));
        assert!(!no_bigger(s(1, 60, 50), s(1, 61, 50)));
        assert!(!no_bigger(s(1, 60, 50), s(2, 10, 0)));
    }

    #[test]
    fn the_check_wants_more_than_half_and_nothing_bigger() {
        let md = "| `a` | x | 37 faults, 340 steps, 1.386 s → 1, 129, 1.029 s |\n\
                  | `b` | x | 0 faults, 34 steps, 0.005 s → 0, 12, 0.002 s |\n\
                  | `c` | x | = seed's |\n";
        let ok = check(md, &names(&["a", "b", "c"])).unwrap();
        assert!(
            ok.contains("much shorter (at most half the faults or steps): 2 of 3"),
            "{ok}"
        );
        let err = check(md, &names(&["a", "b", "c", "d"])).unwrap_err();
        assert!(err.contains("d: no shrunk figures"), "{err}");
        let worse = format!(
            "{md}| `e` | x | 0 faults, 10 steps, 0.000 s → 0, 9, 0.000 s |\n\
                             | `f` | x | = seed's |\n"
        );
        let err = check(&worse, &names(&["a", "b", "c", "e", "f"])).unwrap_err();
        assert!(err.contains("only 2 of the 5"), "{err}");
        let floor = "| `lock_order` | 0 faults, 6 steps, 0.000 s → 0, 5, 0.000 s |\n";
        assert!(
            check(floor, &names(&["lock_order"])).is_ok(),
            "within twice its floor"
        );
        let above = "| `lock_order` | 0 faults, 7 steps, 0.000 s → 0, 5, 0.000 s |\n";
        let err = check(above, &names(&["lock_order"])).unwrap_err();
        assert!(err.contains("more than twice"), "{err}");
        let bigger = "| `a` | 0 faults, 10 steps, 0.000 s → 0, 11, 0.000 s |\n";
        let err = check(bigger, &names(&["a"])).unwrap_err();
        assert!(err.contains("bigger than the seed's"), "{err}");
    }
}
