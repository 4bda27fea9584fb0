//! On real Tokio (a plain `cargo test`): the runner's outcomes, with short
//! durations so the test is quick.

use jobs::{run, Job, Outcome};
use std::time::Duration;

#[tokio::test]
async fn jobs_finish_or_time_out() {
    let ms = Duration::from_millis;
    let jobs = vec![
        Job {
            id: 1,
            after: ms(5),
            work: ms(1),
        },
        Job {
            id: 2,
            after: ms(1),
            work: ms(200),
        },
    ];
    let report = run(jobs, ms(50)).await;
    assert!(
        matches!(report.outcomes[0], (1, Outcome::Done { .. })),
        "{report:?}"
    );
    assert!(
        matches!(report.outcomes[1], (2, Outcome::TimedOut { .. })),
        "{report:?}"
    );
}
