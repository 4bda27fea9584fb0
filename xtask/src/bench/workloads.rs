//! The workloads, the binaries that run them (`Variant`), and each
//! workload's target from issue 8.

use super::Results;

/// The binaries, in the order of the table's columns.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Variant {
    Sim,
    Madsim,
    Turmoil,
    Tokio,
}

pub(super) const VARIANTS: [Variant; 4] = [
    Variant::Sim,
    Variant::Madsim,
    Variant::Turmoil,
    Variant::Tokio,
];

impl Variant {
    /// The mode name the binaries print in their `BENCH` lines.
    pub(super) fn label(self) -> &'static str {
        match self {
            Variant::Sim => "sim",
            Variant::Madsim => "madsim",
            Variant::Turmoil => "turmoil",
            Variant::Tokio => "tokio",
        }
    }
}

pub(super) struct Workload {
    pub(super) name: &'static str,
    pub(super) title: &'static str,
    pub(super) unit: &'static str,
    /// Why a variant does not run this workload (`None`: it does).
    pub(super) skip: fn(Variant) -> Option<&'static str>,
    pub(super) target: Target,
}

#[derive(Clone, Copy)]
pub(super) enum Target {
    /// sim/madsim, ratio of medians, at most this.
    RatioMax(f64),
    /// sim's µs per round trip at most this many times sim's workload 5
    /// (`net_rt`, ms per 10,000 round trips) per round trip.
    PerRoundTripOfNetRt(f64),
    None,
}

pub(super) const NO_TOKIO_NODES: &str = "real Tokio has one host: no nodes, no crash, no partition";

pub(super) const WORKLOADS: &[Workload] = &[
    Workload {
        name: "spawn_yield",
        title: "1. spawn 100,000 tasks × 10 `yield_now`, join all",
        unit: "ms",
        skip: |_| None,
        target: Target::RatioMax(0.2),
    },
    Workload {
        name: "sleep",
        title: "2. 1,000 tasks × 1,000 sequential `sleep(1 ms)`",
        unit: "ms",
        skip: |_| None,
        target: Target::RatioMax(0.3),
    },
    Workload {
        name: "sleepers",
        title: "3. 30,000 sleepers, task i sleeps (i+1) ms once, join all",
        unit: "ms",
        skip: |_| None,
        target: Target::None,
    },
    Workload {
        name: "seeds",
        title: "4. one tiny simulation per seed (runtime + 1 task × 10 `sleep(1 ms)`)",
        unit: "us/seed",
        skip: |_| None,
        target: Target::RatioMax(0.1),
    },
    Workload {
        name: "net_rt",
        title:
            "5. 10,000 TCP round trips of 64 B between two nodes (zero latency; Tokio: loopback)",
        unit: "ms",
        skip: |_| None,
        target: Target::RatioMax(0.3),
    },
    Workload {
        name: "net_idle_1000",
        title: "6. … with 1,000 idle nodes present, per round trip",
        unit: "us/rt",
        skip: |v| match v {
            Variant::Turmoil => Some(
                "turmoil polls every host at every step and its network's per-step work grows \
                 with the hosts: one round trip among 1,000 idle hosts took about 7 s of wall \
                 time here (20 round trips, one run of 172 s), so five runs do not fit the \
                 bench's time budget (`bench-turmoil --only net_idle_1000` still runs it)",
            ),
            Variant::Tokio => Some(NO_TOKIO_NODES),
            _ => None,
        },
        target: Target::PerRoundTripOfNetRt(2.0),
    },
    Workload {
        name: "heartbeats",
        title: "7. 24 simulated hours of 1 Hz UDP heartbeats among 10 nodes (each to every other)",
        unit: "ms",
        skip: |v| (v == Variant::Tokio).then_some(NO_TOKIO_NODES),
        target: Target::None,
    },
    Workload {
        name: "scenario",
        title: "8. 3 nodes, 100 requests, one crash, one partition: seeds per second, one core",
        unit: "seeds/s",
        skip: |v| (v == Variant::Tokio).then_some(NO_TOKIO_NODES),
        target: Target::None,
    },
];

impl Workload {
    pub(super) fn runs_on(&self, v: Variant) -> bool {
        (self.skip)(v).is_none()
    }

    /// The target as text, and whether the medians meet it (`None`: no
    /// target, or a median is missing).
    pub(super) fn verdict(&self, r: &Results) -> Option<(String, Option<bool>)> {
        let sim = r.median("sim", self.name);
        match self.target {
            Target::RatioMax(t) => Some((
                format!("sim/madsim ≤ {t}"),
                sim.zip(r.median("madsim", self.name))
                    .map(|(s, m)| s / m <= t),
            )),
            Target::PerRoundTripOfNetRt(f) => Some((
                format!("≤ {f}× workload 5's time per round trip (sim)"),
                sim.zip(r.median("sim", "net_rt"))
                    .map(|(v, ms)| v <= f * ms * 1e3 / 10_000.0),
            )),
            Target::None => None,
        }
    }
}
