//! A metrics service whose request handlers (tasks) count into a shared
//! `std::sync::Mutex`, and whose flusher, an OS thread, takes the pending
//! count, exports it (a blocking call that takes time) and then resets the
//! counter, in two critical sections. A count made while the export runs
//! is wiped by the reset.

use super::Variant;
use std::sync::Mutex;
use std::time::Duration;

#[derive(Default)]
pub struct Metrics {
    pending: Mutex<u64>,
    exported: Mutex<u64>,
}

impl Metrics {
    pub fn count(&self) {
        *self.pending.lock().unwrap() += 1;
    }

    /// The flusher thread's one round.
    pub fn flush(&self, variant: Variant) {
        match variant {
            Variant::Buggy => {
                let n = *self.pending.lock().unwrap();
                export(n);
                // BUG: resets to 0 rather than subtracting what was
                // exported; a count made during the export is lost.
                *self.pending.lock().unwrap() = 0;
                *self.exported.lock().unwrap() += n;
            }
            Variant::Fixed => {
                let n = std::mem::take(&mut *self.pending.lock().unwrap());
                export(n);
                *self.exported.lock().unwrap() += n;
            }
        }
    }

    pub fn total(&self) -> u64 {
        *self.pending.lock().unwrap() + *self.exported.lock().unwrap()
    }
}

/// Sends the count to the metrics backend: a blocking call.
fn export(_n: u64) {
    std::thread::sleep(Duration::from_millis(2));
}

/// Three requests counted while a flusher thread flushes three times
/// (exports over 0-2, 5-7 and 10-12 ms); every request must be counted
/// once. The first two land between exports; the third at the instant
/// the last export returns, so it is lost only if it runs between the
/// flusher's two critical sections.
#[cfg(simulation)]
pub async fn scenario(variant: Variant) {
    use std::sync::Arc;
    let metrics = Arc::new(Metrics::default());
    let m = metrics.clone();
    let flusher = std::thread::spawn(move || {
        for _ in 0..3 {
            m.flush(variant);
            std::thread::sleep(Duration::from_millis(3));
        }
    });
    let requests: Vec<_> = [3u64, 8, 12]
        .into_iter()
        .map(|ms| {
            let metrics = metrics.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                metrics.count();
            })
        })
        .collect();
    for r in requests {
        r.await.expect("request");
    }
    tokio::task::spawn_blocking(move || flusher.join().expect("flusher"))
        .await
        .expect("join");
    assert_eq!(metrics.total(), 3, "a request's count was lost");
}
