//! A job runner written the usual way, on the crates everyone uses:
//!
//! - jobs wait in a tokio-util `DelayQueue` until they are due;
//! - each due job is run through a tower stack, `Buffer` (a worker task
//!   that owns the service) around `Timeout` (a job over its budget fails);
//! - the runs are tasks of a tokio-util `TaskTracker` (waited for at
//!   shutdown), their results gathered in a `JoinMap` keyed by job id;
//! - a heartbeat is a tokio-stream `IntervalStream` under `timeout`.
//!
//! Nothing here knows about simulation. `cargo sim test` runs it, and
//! every one of those crates, on the simulated Tokio.

use std::convert::Infallible;
use std::time::Duration;
use tokio_stream::wrappers::IntervalStream;
use tokio_stream::StreamExt;
use tokio_util::task::{JoinMap, TaskTracker};
use tokio_util::time::DelayQueue;
use tower::{Service, ServiceBuilder, ServiceExt};

/// A job: due `after` from submission, then `work` long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Job {
    pub id: u32,
    pub after: Duration,
    pub work: Duration,
}

/// How a job ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Done { at: Duration },
    TimedOut { at: Duration },
}

/// What a run reports: each job's outcome in id order, the heartbeats seen.
#[derive(Debug, PartialEq, Eq)]
pub struct Report {
    pub outcomes: Vec<(u32, Outcome)>,
    pub heartbeats: u32,
}

/// Runs `jobs`: each starts when due and may take at most `budget`.
pub async fn run(jobs: Vec<Job>, budget: Duration) -> Report {
    let start = tokio::time::Instant::now();
    let worker = tower::service_fn(|job: Job| async move {
        tokio::time::sleep(job.work).await;
        Ok::<u32, Infallible>(job.id)
    });
    let service = ServiceBuilder::new()
        .buffer(8)
        .timeout(budget)
        .service(worker);

    let heartbeat = tokio::spawn(async move {
        let ticks = IntervalStream::new(tokio::time::interval(Duration::from_millis(100)))
            .timeout(Duration::from_secs(1));
        tokio::pin!(ticks);
        let mut seen = 0u32;
        while let Some(Ok(_)) = ticks.next().await {
            seen += 1;
            if seen == 10 {
                break;
            }
        }
        seen
    });

    let mut queue = DelayQueue::new();
    for job in &jobs {
        queue.insert(*job, job.after);
    }
    let tracker = TaskTracker::new();
    let mut results = JoinMap::new();
    while let Some(expired) = queue.next().await {
        let job = expired.into_inner();
        let mut svc = service.clone();
        let run = tracker.track_future(async move {
            let r = svc
                .ready()
                .await
                .expect("the buffer's worker lives")
                .call(job)
                .await;
            (r.is_ok(), start.elapsed())
        });
        results.spawn(job.id, run);
    }
    tracker.close();
    let mut outcomes = Vec::new();
    while let Some((id, r)) = results.join_next().await {
        let (ok, at) = r.expect("a job's task does not panic");
        outcomes.push((
            id,
            if ok {
                Outcome::Done { at }
            } else {
                Outcome::TimedOut { at }
            },
        ));
    }
    tracker.wait().await;
    outcomes.sort_by_key(|(id, _)| *id);
    Report {
        outcomes,
        heartbeats: heartbeat.await.expect("heartbeat"),
    }
}
