//! The cost targets: what a seed, a sleep, a round trip and a datagram may
//! cost, as ratios to madsim in the same run. Each with the figure it
//! needs, how far the run is from it, and why, from the profiles in
//! docs/perf.md (its "per-seed cost" section).

use super::report::fmt_value;
use super::Results;
use std::fmt::Write as _;

enum Goal {
    /// sim's value at least this many times madsim's (a rate).
    AtLeast(f64),
    /// sim's value at most this many times madsim's (a time).
    AtMost(f64),
}

struct Target {
    workload: &'static str,
    number: &'static str,
    goal: Goal,
    /// Where the time goes, as profiled (docs/perf.md).
    why: &'static str,
}

const TARGETS: [Target; 5] = [
    Target {
        workload: "scenario",
        number: "8",
        goal: Goal::AtLeast(2.0),
        why: "a seed no longer pays for a new OS thread (46 µs here): it runs on a worker \
              whose thread-locals are made new after it, about 2 µs (docs/perf.md, session \
              23). What is left is the scenario itself, about 1.06 M instructions a seed \
              (callgrind, 300 seeds; 1.13 M before the second round: one link look-up per \
              segment, lone timers kept out of the timer map, no wake list allocated per \
              socket operation, traces built only for failing seeds), spread flat over the TCP \
              binding (`poll_read`, `route`, `slot`, `host_model`), the step loop, timers and \
              malloc/free, and the harness's own work per seed (the seeds log's two lines, the \
              trace collector, the report: under a tenth of a seed in `perf`). The bare \
              scenario alone (a runtime per seed on one thread, no harness) takes longer than a \
              whole seed may at 2× madsim: the target now needs the scenario's own path (the \
              network above all, see workload 5) shorter, not the harness",
    },
    Target {
        workload: "seeds",
        number: "4",
        goal: Goal::AtMost(0.5),
        why:
            "about 24.8 K instructions per seed (callgrind, 5,000 seeds; 37.0 K before the work on \
              these targets, 27.6 K after its first round; a lone sleep's timer no longer goes \
              through the timer map): what is left is making the executor (three ChaCha8 \
              streams, the main task and the node table, the executor's structs copied into \
              place: memcpy is 7%), the step loop and the runtime's drop; reaching 0.5× means \
              about 11 K",
    },
    Target {
        workload: "sleep",
        number: "2",
        goal: Goal::AtMost(0.3),
        why: "about 880 instructions per sleep (callgrind: 0.882 G for 1 M sleeps), unchanged \
              by the per-seed work: registering and firing the timer, the pick, and the poll \
              inside real Tokio's task context for its cooperative budget (a cost taken on \
              purpose, +19% on this workload, docs/perf.md)",
    },
    Target {
        workload: "net_rt",
        number: "5",
        goal: Goal::AtMost(0.3),
        why: "about 6,400 instructions per round trip (callgrind: 64.5 M for 10,000; 65.4 M \
              before the second round): two writes and two reads, each through the \
              cooperative budget, the network driver's borrow, the model's byte pipes and \
              arrival marks, the waiter lists and the routing of the model's notifications, \
              spread flat (no function above 5% of the instructions by itself). 0.3× needs \
              about 4,000: a differently shaped path (a reader woken by the model directly, \
              without a waiter list and a routing pass per operation), not more tuning",
    },
    Target {
        workload: "heartbeats",
        number: "7",
        goal: Goal::AtMost(0.3),
        why: "about 4,700 instructions per datagram (callgrind: 36.5 G for 7.78 M; 5,600 \
              before the second round, which took out the allocations per datagram and two of \
              three link look-ups): the send through the model (link, port and route \
              look-ups in B-trees), the arrival routed to the receiver's waiter as a timer \
              (at the default 0.5 ms latency and jitter each datagram has its own deadline: \
              a timer-map insert and remove each), then the receiver's wake, poll and next \
              registration. 0.3× needs about 2,800",
    },
];

/// The section of docs/bench.md: one row per target, then why each that
/// is not met is short.
pub(super) fn section(r: &Results) -> String {
    let mut s = String::from(
        "## Cost targets (per seed and per operation, against madsim)\n\n\
         | workload | target | measured | | short by |\n|---|---|---|---|---|\n",
    );
    let mut short = Vec::new();
    for t in &TARGETS {
        let (Some(sim), Some(madsim)) =
            (r.median("sim", t.workload), r.median("madsim", t.workload))
        else {
            let _ = writeln!(s, "| {} | | not measured | | |", t.number);
            continue;
        };
        let unit = unit(t.workload);
        let ratio = sim / madsim;
        let (target, needs, met, factor) = match t.goal {
            Goal::AtLeast(k) => (
                format!("sim ≥ {k}× madsim"),
                k * madsim,
                ratio >= k,
                k / ratio,
            ),
            Goal::AtMost(k) => (
                format!("sim/madsim ≤ {k}"),
                k * madsim,
                ratio <= k,
                ratio / k,
            ),
        };
        let measured = format!(
            "{ratio:.2} (sim {}, madsim {}; the target needs {} {})",
            fmt_value(sim, unit),
            fmt_value(madsim, unit),
            match t.goal {
                Goal::AtLeast(_) => "≥",
                Goal::AtMost(_) => "≤",
            },
            fmt_value(needs, unit)
        );
        let (verdict, by) = if met {
            ("met", String::new())
        } else {
            short.push((t, factor));
            ("**not met**", format!("{factor:.1}×"))
        };
        let _ = writeln!(
            s,
            "| {} | {target} | {measured} | {verdict} | {by} |",
            t.number
        );
    }
    if !short.is_empty() {
        s.push_str(
            "\n\"Short by\" is how many times faster sim must get to meet the target. Why, \
             from the profiles in [perf.md](perf.md#issue-26-item-1-per-seed-cost):\n\n",
        );
        for (t, factor) in short {
            let _ = writeln!(
                s,
                "- workload {} ({factor:.1}× short): {}.",
                t.number, t.why
            );
        }
    }
    s
}

fn unit(workload: &str) -> &'static str {
    super::workloads::WORKLOADS
        .iter()
        .find(|w| w.name == workload)
        .map_or("ms", |w| w.unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_target_says_met_or_how_far_and_why() {
        let mut r = Results::default();
        // Workload 8 at 0.68× madsim's rate: 2.9× short of 2×.
        r.push("sim", "scenario", 6112.0);
        r.push("madsim", "scenario", 8979.0);
        // Workload 4 at 0.4×: met.
        r.push("sim", "seeds", 0.9);
        r.push("madsim", "seeds", 2.25);
        let s = section(&r);
        assert!(s.contains("| 8 | sim ≥ 2× madsim | 0.68 (sim 6112 seeds/s, madsim 8979 seeds/s; the target needs ≥ 17958 seeds/s) | **not met** | 2.9× |"), "{s}");
        assert!(s.contains("| 4 | sim/madsim ≤ 0.5 | 0.40 "), "{s}");
        assert!(s.contains("| 2 | | not measured | | |"), "{s}");
        assert!(
            s.contains("- workload 8 (2.9× short): a seed no longer pays for a new OS thread"),
            "{s}"
        );
        assert!(
            !s.contains("- workload 4"),
            "a met target needs no why: {s}"
        );
    }
}
