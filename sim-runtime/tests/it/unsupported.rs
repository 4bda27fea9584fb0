//! What the simulation refuses rather than fake (unsupported.rs): each call
//! compiles (Tokio's signature), gives the caller `Unsupported` or panics,
//! and fails the run as a forbidden operation with a message that names the
//! call and what to use instead.

use crate::run_failing;
use sim_runtime::io::Interest;
use sim_runtime::net::unix::pipe;
use sim_runtime::net::{TcpListener, TcpSocket, TcpStream, UdpSocket, UnixSocket};
use sim_runtime::time;
use std::io::ErrorKind;
use std::time::Duration;

/// Runs `f` (which must hit a refusal) and returns the run's failure text,
/// checked to be a forbidden operation that names `call`.
fn refused<F, Fut>(seed: u64, call: &str, f: F) -> String
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future,
{
    let msg = run_failing(seed, f);
    assert!(msg.contains("forbidden operation"), "{msg}");
    assert!(msg.contains(call), "{msg}");
    assert!(msg.contains("is not supported in simulation"), "{msg}");
    msg
}

#[test]
fn raw_io_through_a_socket_descriptor_fails_the_run() {
    let msg = refused(40, "TcpStream::try_io", || async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let stream = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let err = stream
            .try_io(Interest::READABLE, || Ok::<_, std::io::Error>(()))
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported);
        time::sleep(Duration::from_millis(1)).await;
    });
    assert!(msg.contains("Use the socket's own"), "{msg}");

    refused(41, "UdpSocket::async_io", || async {
        let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let r = socket
            .async_io(Interest::READABLE, || Ok::<_, std::io::Error>(()))
            .await;
        assert_eq!(r.unwrap_err().kind(), ErrorKind::Unsupported);
        time::sleep(Duration::from_millis(1)).await;
    });
}

#[test]
fn binding_to_a_network_device_fails_the_run() {
    refused(42, "TcpSocket::bind_device", || async {
        let socket = TcpSocket::new_v4().unwrap();
        // Removing a binding the socket does not have is fine.
        socket.bind_device(None).unwrap();
        let err = socket.bind_device(Some(b"eth0")).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported);
        time::sleep(Duration::from_millis(1)).await;
    });
}

#[test]
fn named_pipes_and_kernel_descriptors_fail_the_run() {
    let msg = refused(43, "OpenOptions::open_receiver", || async {
        let err = pipe::OpenOptions::new()
            .read_write(true)
            .open_receiver("/tmp/fifo")
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported);
        time::sleep(Duration::from_millis(1)).await;
    });
    assert!(msg.contains("named pipes"), "{msg}");

    refused(44, "pipe::Receiver::into_blocking_fd", || async {
        let (_tx, rx) = pipe::pipe().unwrap();
        assert_eq!(
            rx.into_blocking_fd().unwrap_err().kind(),
            ErrorKind::Unsupported
        );
        time::sleep(Duration::from_millis(1)).await;
    });

    refused(45, "pipe::Sender::from_owned_fd", || async {
        let fd = std::os::fd::OwnedFd::from(std::fs::File::open("/dev/null").unwrap());
        let err = pipe::Sender::from_owned_fd(fd).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported);
        time::sleep(Duration::from_millis(1)).await;
    });
}

/// A call with no error to return panics with the message; the run fails
/// as a forbidden operation even when the panic is caught (here, by the
/// task's `JoinHandle`).
#[test]
fn a_descriptor_the_simulation_cannot_hand_out_fails_the_run() {
    use std::os::fd::IntoRawFd;
    refused(46, "UnixSocket::into_raw_fd", || async {
        let task = sim_runtime::spawn(async {
            let socket = UnixSocket::new_stream().unwrap();
            let _ = socket.into_raw_fd();
        });
        assert!(task.await.unwrap_err().is_panic());
        time::sleep(Duration::from_millis(1)).await;
    });

    refused(47, "TcpSocket::into_raw_fd of a bound socket", || async {
        let task = sim_runtime::spawn(async {
            let socket = TcpSocket::new_v4().unwrap();
            socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
            let _ = socket.into_raw_fd();
        });
        assert!(task.await.unwrap_err().is_panic());
        time::sleep(Duration::from_millis(1)).await;
    });
}

#[test]
fn an_async_fd_is_never_made() {
    use sim_runtime::io::unix::AsyncFd;
    let msg = refused(48, "AsyncFd::register", || async {
        let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        // SAFETY: the socket outlives the registration attempt.
        let err = unsafe { AsyncFd::register(socket) }.unwrap_err();
        let (socket, cause) = err.into_parts();
        assert_eq!(cause.kind(), ErrorKind::Unsupported);
        // The value handed in comes back, usable.
        assert!(socket.local_addr().is_ok());
        time::sleep(Duration::from_millis(1)).await;
    });
    assert!(msg.contains("Use tokio::net's types"), "{msg}");
}
