//! The network's settings, with Linux-like defaults.

/// Settings of a simulated network. Times are nanoseconds of virtual time.
#[derive(Clone, Debug)]
pub struct Config {
    /// The seed of every draw the network makes (jitter, ephemeral ports,
    /// routed names, UDP loss).
    pub seed: u64,
    /// One-way delay between two different hosts.
    pub latency_ns: u64,
    /// Extra delay in `0..=jitter_ns`, drawn per chunk.
    pub jitter_ns: u64,
    /// One-way delay of a host talking to itself.
    pub loopback_latency_ns: u64,
    /// A direction's send buffer (bytes written, not yet arrived).
    pub send_buffer: usize,
    /// A direction's receive buffer (bytes arrived, not yet read).
    pub recv_buffer: usize,
    /// SYN retransmissions before a connect times out (Linux `tcp_syn_retries`).
    pub syn_retries: u32,
    /// How long a partition may hold a direction's bytes before the sender
    /// fails with `TimedOut` (Linux: `tcp_retries2` = 15, about 924.6 s).
    pub retransmit_timeout_ns: u64,
    /// Bytes of datagrams a UDP socket queues before dropping.
    pub udp_recv_buffer: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            seed: 0,
            latency_ns: 500_000,
            jitter_ns: 100_000,
            loopback_latency_ns: 0,
            send_buffer: 64 * 1024,
            recv_buffer: 128 * 1024,
            syn_retries: 6,
            retransmit_timeout_ns: 924_600_000_000,
            udp_recv_buffer: 208 * 1024,
        }
    }
}

impl Config {
    pub(crate) fn validate(&self) {
        assert!(self.send_buffer > 0, "sim-net: send_buffer must be > 0");
        assert!(self.recv_buffer > 0, "sim-net: recv_buffer must be > 0");
        assert!(
            self.retransmit_timeout_ns > 0,
            "sim-net: retransmit_timeout_ns must be > 0"
        );
        assert!(
            self.jitter_ns <= u64::MAX / 4 && self.latency_ns <= u64::MAX / 4,
            "sim-net: latency and jitter must leave room for arithmetic"
        );
    }
}
