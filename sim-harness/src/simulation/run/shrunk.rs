//! The first failure's tape, shrunk (the search is shrink.rs): each
//! candidate tape is replayed untraced, and the smallest one found runs
//! once more, traced and drawn, to tell the report's story.

use super::files::write_trace_as;
use crate::simulation::seed::{cargo_target, run_one, trace_dir, How, Options, SeedResult};
use crate::simulation::shrink::{shrink, Budget, Size};
use crate::simulation::tape;
use crate::simulation::trace;
use sim_runtime::__private::harness::{cargo_prefix, TapeMode};
use sim_runtime::__private::TestOutput;
use std::future::Future;
use std::sync::Arc;

/// A failing seed's shrunk run: its result, drawn and traced,
/// and the report's line comparing sizes.
pub(super) struct ShrunkRun {
    pub result: SeedResult,
    pub line: String,
    /// Whether it is smaller than the seed's run (else the report tells
    /// the seed's story).
    pub smaller: bool,
}

/// Shrinks the first failure's tape and runs the smallest one found once
/// more, drawn; writes its tape and trace next to the seed's.
pub(super) fn shrink_first<F, Fut>(
    opts: &Options,
    name: &str,
    make: &Arc<F>,
    again: &SeedResult,
    tape: Vec<u8>,
    budget: Budget,
) -> ShrunkRun
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future + 'static,
    Fut::Output: TestOutput,
{
    let seed = again.outcome.seed;
    let size_of = |r: &SeedResult| Size {
        faults: r.faults,
        steps: r.outcome.step,
        virtual_ns: r.outcome.now.as_nanos() as u64,
    };
    let original = size_of(again);
    let replay = |t: Vec<u8>, draw: bool| {
        run_one(
            opts,
            seed,
            make,
            How {
                // Only the run that tells the story is traced.
                trace: draw.then(trace::Collector::new),
                draw,
                tape: Some(TapeMode::Replay(t)),
                ..How::default()
            },
        )
    };
    let found = shrink(tape, original, budget, |t| {
        let r = replay(t.to_vec(), false);
        (r.outcome.class == again.outcome.class && r.outcome.site == again.outcome.site)
            .then(|| size_of(&r))
    });
    let result = replay(found.tape.clone(), true);
    let file = format!("{seed}.shrunk.trace");
    write_trace_as(opts, name, &result, &file);
    let tape_file = trace_dir(opts, name).join(format!("{seed}.shrunk.tape"));
    let written = tape::write_as(&tape_file, name, seed, &found.tape);
    if size_of(&result) != found.size {
        // The same tape twice, two sizes: a leak past the tape.
        return ShrunkRun {
            line: format!(
                "NOT deterministic: the shrunk tape ran at {} and then at {}; the story below \
                 is the second run's",
                found.size,
                size_of(&result)
            ),
            result,
            smaller: true,
        };
    }
    let smaller = found.size < original
        || found.tape.len() < again.outcome.tape.as_ref().map_or(0, |t| t.bytes.len());
    let line = if !smaller {
        format!(
            "nothing smaller fails the same way ({} run(s); {}); the story below is the seed's",
            found.runs, found.stopped
        )
    } else {
        format!(
            "{original} → {} ({} run(s); stopped: {}); the story below is the shrunk run's · {}",
            size_of(&result),
            found.runs,
            found.stopped,
            match written {
                Ok(path) => format!(
                    "replay: {}={} {} test -p {} {} -- {name} --exact",
                    tape::VAR,
                    path.display(),
                    cargo_prefix(),
                    opts.package,
                    cargo_target(opts)
                ),
                Err(e) => format!("its tape was not written: {e}"),
            }
        )
    };
    ShrunkRun {
        result,
        line,
        smaller,
    }
}
