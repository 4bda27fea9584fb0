//! Conformance for what `tokio_api.rs` brought into the simulated
//! surface and the simulation implements: each test runs against real
//! Tokio (a production build) and against the simulation, asserting the
//! same outcomes. (What the simulation refuses instead is tested in
//! `tests/it/unsupported.rs`; what is only a type, a trait or a bound, such
//! as `JoinHandle: Sync` or `time::error::Error: Copy`, is proved by
//! `tokio_api.rs` compiling.)

use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd};

use sim_runtime::net::{TcpListener, TcpSocket, TcpStream};
use sim_runtime::task::{spawn_local, LocalSet};

fn rt() -> sim_runtime::runtime::Runtime {
    sim_runtime::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_local_set_entered_takes_spawn_local() {
    rt().block_on(async {
        let local = LocalSet::new();
        let task = {
            let _entered = local.enter();
            spawn_local(async { std::rc::Rc::new(7) })
        };
        let out = local.run_until(task).await.unwrap();
        assert_eq!(*out, 7);
    });
}

#[test]
fn local_sets_have_ids_of_their_own() {
    rt().block_on(async {
        let (a, b) = (LocalSet::new(), LocalSet::new());
        assert_ne!(a.id(), b.id());
        assert_eq!(a.id(), a.id());
    });
}

#[test]
fn standard_streams_show_the_process_descriptors() {
    rt().block_on(async {
        assert_eq!(sim_runtime::io::stdout().as_raw_fd(), 1);
        assert_eq!(sim_runtime::io::stderr().as_raw_fd(), 2);
    });
}

#[test]
fn an_unbound_socket_round_trips_through_its_descriptor() {
    rt().block_on(async {
        let socket = TcpSocket::new_v4().unwrap();
        assert_eq!(socket.as_raw_fd(), socket.as_raw_fd());
        socket.set_reuseaddr(true).unwrap();
        socket.set_nodelay(true).unwrap();
        assert_eq!(socket.device().unwrap(), None);
        let fd = socket.into_raw_fd();
        // SAFETY: `fd` was just given up by the socket, so it is open and
        // this is its only owner.
        let socket = unsafe { TcpSocket::from_raw_fd(fd) };
        assert!(socket.reuseaddr().unwrap());
        assert!(socket.nodelay().unwrap());
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let listener: TcpListener = socket.listen(8).unwrap();
        let addr = listener.local_addr().unwrap();
        let client = TcpStream::connect(addr).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        assert_eq!(server.peer_addr().unwrap(), client.local_addr().unwrap());
        // A stream is its own `AsRef`, as Tokio's.
        assert_eq!(
            AsRef::<TcpStream>::as_ref(&client).peer_addr().unwrap(),
            addr
        );
    });
}
