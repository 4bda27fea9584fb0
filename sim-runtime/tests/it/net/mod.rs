//! The simulated network across nodes: names and routes, per-link latency,
//! backpressure, how connections end, partitions, clogs, process and machine
//! death, the fault calls, UDP, determinism, and bad input. These are the
//! semantics the single-host conformance suite (tests/net) cannot show: they
//! need two or more hosts, faults, or virtual time.
//!
//! One file per topic; the helpers every topic shares are here.

mod bad_input;
mod death;
mod determinism;
mod faults;
mod names;
mod partitions;
mod streams;
mod udp;

use crate::run;
use sim_runtime::io::{AsyncReadExt, AsyncWriteExt};
use sim_runtime::net::{lookup_host, TcpListener, TcpStream, UdpSocket};
use sim_runtime::sim::{self, net as simnet};
use sim_runtime::time::{self, Duration};
use std::cell::RefCell;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::rc::Rc;

const EACCES: i32 = 13;
const EINVAL: i32 = 22;
const EPIPE: i32 = 32;
const EMSGSIZE: i32 = 90;
const EADDRNOTAVAIL: i32 = 99;
const ECONNRESET: i32 = 104;
const ETIMEDOUT: i32 = 110;
const ECONNREFUSED: i32 = 111;

/// Linux's connect timeout with `tcp_syn_retries = 6`: SYNs at 0, 1, 3, 7,
/// 15, 31 and 63 s, failure 64 s after the last one.
const SYN_TIMEOUT: Duration = Duration::from_secs(127);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

#[track_caller]
fn assert_os(err: &io::Error, kind: io::ErrorKind, errno: i32) {
    assert_eq!(err.kind(), kind, "kind of {err:?}");
    assert_eq!(err.raw_os_error(), Some(errno), "errno of {err:?}");
}

#[track_caller]
fn expect_err<T: std::fmt::Debug>(r: io::Result<T>) -> io::Error {
    match r {
        Ok(v) => panic!("expected an error, got Ok({v:?})"),
        Err(e) => e,
    }
}

/// Byte `i` of a test stream (period 251, prime, so no size lines up).
fn pattern(start: usize, len: usize) -> Vec<u8> {
    (start..start + len).map(|i| (i % 251) as u8).collect()
}

/// Runs `f` as a task of `node` and returns its output.
async fn on<F>(node: sim::Node, f: F) -> F::Output
where
    F: Future + 'static,
    F::Output: 'static,
{
    sim::spawn_on(node, f)
        .await
        .expect("the task on the node ran")
}

/// A listener on `node`, on every address, at `port`.
async fn listen(node: sim::Node, port: u16) -> TcpListener {
    on(node, TcpListener::bind(("0.0.0.0", port)))
        .await
        .unwrap()
}

/// A connection from the current node to `server` by name: (client end,
/// the server's accepted end, a socket of `server`).
async fn pair(server: sim::Node, port: u16) -> (TcpStream, TcpStream) {
    let listener = listen(server, port).await;
    let client = TcpStream::connect(format!("{}:{port}", sim::node_name(server)))
        .await
        .unwrap();
    let (accepted, from) = listener.accept().await.unwrap();
    assert_eq!(from, client.local_addr().unwrap());
    (client, accepted)
}

/// Serves an echo on `node`:`port`: every connection gets back what it
/// sends until EOF, then a FIN.
fn echo_server(node: sim::Node, port: u16) -> sim_runtime::task::JoinHandle<()> {
    sim::spawn_on(node, async move {
        let listener = TcpListener::bind(("0.0.0.0", port)).await.unwrap();
        loop {
            let (mut s, _) = listener.accept().await.unwrap();
            sim_runtime::spawn(async move {
                let mut buf = [0u8; 4096];
                loop {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            if s.write_all(&buf[..n]).await.is_err() {
                                break;
                            }
                        }
                    }
                }
            });
        }
    })
}

/// Reads exactly `n` bytes or fails.
async fn read_n(s: &mut TcpStream, n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    s.read_exact(&mut v).await.unwrap();
    v
}

/// Whether a read on `s` stays pending for `d` of virtual time.
async fn read_stays_pending(s: &mut TcpStream, d: Duration) -> bool {
    let mut b = [0u8; 1];
    time::timeout(d, s.read(&mut b)).await.is_err()
}

/// A UDP socket on `node`, on every address, at `port`.
async fn udp_on(node: sim::Node, port: u16) -> UdpSocket {
    on(node, UdpSocket::bind(("0.0.0.0", port))).await.unwrap()
}
