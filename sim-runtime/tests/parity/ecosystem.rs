//! Compile-time parity: items, signatures and trait impls that crates in a
//! service's graph name on Tokio's types, built against real Tokio (a
//! production build, where this crate is `pub use tokio::*`) and against the
//! simulation (`--cfg simulation`). Under `cargo sim` every crate in the
//! graph compiles against the simulation, so a missing impl is a build
//! error in a crate the user does not own (tonic's server needs `AsFd` on
//! `TcpStream`). This file keeps, by hand, what the ecosystem crates we
//! build were found to need, each a regression test with its reason;
//! Tokio's whole public API is checked mechanically by `tokio_api.rs`,
//! generated from Tokio's own rustdoc by `cargo xtask parity`.

use sim_runtime::net::{TcpListener, TcpSocket, TcpStream, UdpSocket};
use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::time::Duration;

fn fd<T: AsFd + AsRawFd>() {}
fn send_sync<T: Send + Sync + 'static>() {}
fn debug<T: std::fmt::Debug>() {}

#[test]
fn sockets_have_tokios_traits() {
    fd::<TcpStream>();
    fd::<TcpListener>();
    fd::<UdpSocket>();
    send_sync::<TcpStream>();
    send_sync::<TcpListener>();
    send_sync::<UdpSocket>();
    send_sync::<TcpSocket>();
    debug::<TcpStream>();
    debug::<TcpListener>();
    debug::<UdpSocket>();
    debug::<TcpSocket>();
}

#[test]
fn conversions_from_std_have_tokios_signatures() {
    let _: fn(std::net::TcpStream) -> TcpSocket = TcpSocket::from_std_stream;
    let _: fn(std::net::TcpListener) -> io::Result<TcpListener> = TcpListener::from_std;
    let _: fn(std::net::TcpStream) -> io::Result<TcpStream> = TcpStream::from_std;
    let _: fn(std::net::UdpSocket) -> io::Result<UdpSocket> = UdpSocket::from_std;
    let _: fn() -> io::Result<TcpSocket> = TcpSocket::new_v4;
}

#[test]
fn time_and_tasks_have_tokios_signatures() {
    let _: fn(Duration) -> sim_runtime::time::Sleep = sim_runtime::time::sleep;
    let _: fn(sim_runtime::time::Instant) -> sim_runtime::time::Sleep =
        sim_runtime::time::sleep_until;
    let _: fn(Duration) -> sim_runtime::time::Interval = sim_runtime::time::interval;
    let _ = sim_runtime::time::timeout::<std::future::Ready<()>>;
    send_sync::<sim_runtime::task::JoinHandle<()>>();
    send_sync::<sim_runtime::task::AbortHandle>();
    send_sync::<sim_runtime::runtime::Handle>();
    debug::<sim_runtime::time::error::Elapsed>();
    let _: fn() -> sim_runtime::runtime::Handle = sim_runtime::runtime::Handle::current;
}

/// The future `f` returns, checked for `Send` without being run.
fn send_future<F: std::future::Future + Send>(_: F) {}

#[test]
fn futures_that_touch_the_disk_or_network_are_send_as_tokios() {
    // `tokio::spawn(async { File::create(..).await })` compiles only if
    // these are Send; the simulation's once held an `Rc` across an await.
    // The futures are made and dropped, never polled.
    send_future(sim_runtime::fs::File::create("/tmp/parity"));
    send_future(sim_runtime::fs::File::open("/tmp/parity"));
    send_future(
        sim_runtime::fs::OpenOptions::new()
            .read(true)
            .open("/tmp/parity"),
    );
    send_future(sim_runtime::fs::read("/tmp/parity"));
    send_future(sim_runtime::fs::write("/tmp/parity", b"x"));
    send_future(sim_runtime::fs::read_dir("/tmp"));
    send_future(sim_runtime::fs::create_dir_all("/tmp/parity-dir"));
    send_future(TcpStream::connect("127.0.0.1:1"));
    send_future(TcpListener::bind("127.0.0.1:0"));
    send_future(UdpSocket::bind("127.0.0.1:0"));
}
