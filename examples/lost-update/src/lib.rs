//! A ticket office with a planted bug: it checks the stock, awaits an audit
//! write, and only then records the sale from the value it read before the
//! await. Two buyers whose audits overlap both pass the check and one sale
//! is lost — the office sells more tickets than it has.
//!
//! The code is ordinary Tokio. Under `--cfg simulation` a seed sweep finds
//! an interleaving that oversells, and that seed replays it exactly.

use std::time::Duration;
use tokio::sync::Mutex;

/// Why a purchase failed.
#[derive(Debug, PartialEq, Eq)]
pub struct SoldOut;

pub struct TicketOffice {
    sold: Mutex<u32>,
    capacity: u32,
    /// The fixed office holds the lock across the audit.
    fixed: bool,
}

impl TicketOffice {
    pub fn buggy(capacity: u32) -> TicketOffice {
        TicketOffice {
            sold: Mutex::new(0),
            capacity,
            fixed: false,
        }
    }

    pub fn fixed(capacity: u32) -> TicketOffice {
        TicketOffice {
            sold: Mutex::new(0),
            capacity,
            fixed: true,
        }
    }

    /// Sells one ticket and returns its number (1-based).
    pub async fn buy(&self, buyer: u32) -> Result<u32, SoldOut> {
        if self.fixed {
            let mut sold = self.sold.lock().await;
            if *sold >= self.capacity {
                return Err(SoldOut);
            }
            audit(buyer).await;
            *sold += 1;
            return Ok(*sold);
        }
        // BUG: check, await, then act on the stale value.
        let sold = *self.sold.lock().await;
        if sold >= self.capacity {
            return Err(SoldOut);
        }
        audit(buyer).await;
        let mut now = self.sold.lock().await;
        *now = sold + 1;
        Ok(*now)
    }

    pub async fn sold(&self) -> u32 {
        *self.sold.lock().await
    }
}

/// Writes an audit record; the storage takes a few milliseconds.
async fn audit(_buyer: u32) {
    let micros = rand::random::<u64>() % 3_000;
    tokio::time::sleep(Duration::from_micros(micros)).await;
}

/// The workload: `buyers` clients arrive within 150 ms and each tries to
/// buy one ticket. Returns the tickets handed out.
pub async fn rush(office: std::sync::Arc<TicketOffice>, buyers: u32) -> Vec<u32> {
    let mut handles = Vec::new();
    for b in 0..buyers {
        let office = office.clone();
        handles.push(tokio::spawn(async move {
            let arrive = rand::random::<u64>() % 150;
            tokio::time::sleep(Duration::from_millis(arrive)).await;
            office.buy(b).await.ok()
        }));
    }
    let mut tickets = Vec::new();
    for h in handles {
        if let Some(t) = h.await.expect("buyer task failed") {
            tickets.push(t);
        }
    }
    tickets.sort_unstable();
    tickets
}

/// The office's promise: at most `capacity` tickets, each number once.
pub fn check(tickets: &[u32], capacity: u32) -> Result<(), String> {
    if tickets.len() as u32 > capacity {
        return Err(format!(
            "oversold: {} tickets handed out for {capacity} seats: {tickets:?}",
            tickets.len()
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    for t in tickets {
        if !seen.insert(t) {
            return Err(format!("ticket {t} was sold twice: {tickets:?}"));
        }
    }
    Ok(())
}
