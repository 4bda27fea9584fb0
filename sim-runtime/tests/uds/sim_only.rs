//! What has no production counterpart: each node's own namespace and disk,
//! a node's death closing the sockets made on it and leaving their socket
//! files, and determinism.

use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use sim_runtime::io::{AsyncReadExt, AsyncWriteExt};
use sim_runtime::net::{UnixDatagram, UnixListener, UnixStream};
use sim_runtime::sim;
use sim_runtime::sync::oneshot;
use sim_runtime::time::{self, Duration};

use crate::{assert_err, assert_errno, bounded, errno};

/// Linux's `EBADF`: an operation on a closed descriptor.
const EBADF: i32 = 9;

/// Runs `f` in a fresh simulation with `seed`.
fn run<F: std::future::Future>(seed: u64, f: F) -> F::Output {
    sim_runtime::runtime::Builder::new_current_thread()
        .sim_seed(seed)
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// A path in `/tmp`, which every node's fresh disk has.
fn path(name: &str) -> PathBuf {
    PathBuf::from("/tmp").join(name)
}

#[test]
fn a_name_bound_on_one_node_is_not_visible_from_another() {
    run(1, async {
        let a = sim::node("a").build();
        let p = path("svc.sock");
        let abstract_name = "\0sim-uds-namespace";
        let (bound_tx, bound_rx) = oneshot::channel();
        let server = sim::spawn_on(a, async move {
            let l = UnixListener::bind(path("svc.sock")).unwrap();
            let d = UnixDatagram::bind(path("svc.dgram")).unwrap();
            let al = UnixListener::bind(abstract_name).unwrap();
            bound_tx.send(()).unwrap();
            // A connection inside node a works.
            let c = UnixStream::connect(path("svc.sock")).await.unwrap();
            let (s, _) = l.accept().await.unwrap();
            c.try_write(b"local").unwrap();
            s.readable().await.unwrap();
            let mut buf = [0u8; 5];
            assert_eq!(s.try_read(&mut buf).unwrap(), 5);
            assert_eq!(&buf, b"local");
            // Node a's names are a's alone: main's bind below does not
            // take them.
            time::sleep(Duration::from_millis(10)).await;
            assert_eq!(
                l.local_addr().unwrap().as_pathname(),
                Some(&*path("svc.sock"))
            );
            drop((d, al));
        });
        bounded("bound", bound_rx).await.unwrap();

        // From main, none of a's names exist.
        assert_err(
            UnixStream::connect(&p).await,
            ErrorKind::NotFound,
            errno::ENOENT,
        );
        let u = UnixDatagram::unbound().unwrap();
        assert_err(
            u.send_to(b"x", path("svc.dgram")).await,
            ErrorKind::NotFound,
            errno::ENOENT,
        );
        assert_err(
            UnixStream::connect(abstract_name).await,
            ErrorKind::ConnectionRefused,
            errno::ECONNREFUSED,
        );
        // ... and main may bind the same names for itself.
        let mine = UnixListener::bind(&p).unwrap();
        let _mine_abstract = UnixListener::bind(abstract_name).unwrap();
        let c = UnixStream::connect(&p).await.unwrap();
        let (s, _) = bounded("accept", mine.accept()).await.unwrap();
        assert_eq!(c.peer_cred().unwrap().pid(), Some(1000));
        assert_eq!(s.peer_cred().unwrap().pid(), Some(1000));
        server.await.unwrap();
    });
}

#[test]
fn peer_cred_is_the_node_process() {
    run(2, async {
        let a = sim::node("a").build();
        let b = sim::node("b").build();
        for node in [a, b] {
            let pid = sim::spawn_on(node, async {
                let (x, _y) = UnixStream::pair().unwrap();
                x.peer_cred().unwrap().pid()
            })
            .await
            .unwrap();
            assert_eq!(pid, Some(1000 + node.as_u32() as i32));
        }
    });
}

#[test]
fn a_killed_node_closes_its_sockets() {
    for crash in [false, true] {
        run(3, async move {
            let a = sim::node("a").build();

            // Sockets made on node a, one end handed to main: the node's
            // death closes them wherever their handles are.
            let (tx, rx) = oneshot::channel();
            sim::spawn_on(a, async move {
                let (mine, theirs) = UnixStream::pair().unwrap();
                let (d1, d2) = UnixDatagram::pair().unwrap();
                let l = UnixListener::bind(path("a.sock")).unwrap();
                tx.send((theirs, d2)).unwrap();
                let _keep = (mine, d1, l);
                std::future::pending::<()>().await;
            });
            let (mut from_a, dgram_from_a) = bounded("handed over", rx).await.unwrap();

            // Sockets made on main, one end held by a task on node a: the
            // task dies with the node, and main's end sees the close.
            let (mut quiet, quiet_in_a) = UnixStream::pair().unwrap();
            let (mut noisy, noisy_in_a) = UnixStream::pair().unwrap();
            noisy.write_all(b"never read").await.unwrap();
            sim::spawn_on(a, async move {
                let _held = (quiet_in_a, noisy_in_a);
                std::future::pending::<()>().await;
            });

            // A reader on main waits on a socket of node a when it dies.
            let waiting = sim_runtime::spawn(async move {
                let mut buf = [0u8; 8];
                let r = from_a.read(&mut buf).await;
                (from_a, r)
            });
            time::sleep(Duration::from_millis(1)).await;
            if crash {
                sim::crash(a);
            } else {
                sim::kill(a);
            }

            // The waiting reader is woken with EBADF.
            let (mut from_a, r) = bounded("woken", waiting).await.unwrap();
            assert_errno(r, EBADF);
            // Every later operation on node a's sockets fails with EBADF.
            let mut buf = [0u8; 8];
            assert_errno(from_a.read(&mut buf).await, EBADF);
            assert_errno(from_a.write(b"x").await, EBADF);
            assert_errno(from_a.try_read(&mut buf), EBADF);
            assert_errno(from_a.local_addr(), EBADF);
            assert_errno(from_a.peer_addr(), EBADF);
            assert_errno(from_a.peer_cred(), EBADF);
            assert_errno(dgram_from_a.send(b"x").await, EBADF);
            assert_errno(dgram_from_a.try_recv(&mut buf), EBADF);
            assert_errno(dgram_from_a.local_addr(), EBADF);
            // Readiness reports a closed descriptor at once.
            let ready = bounded("ready", from_a.ready(sim_runtime::io::Interest::READABLE))
                .await
                .unwrap();
            assert!(ready.is_read_closed());

            // Main's ends see their peers closed: the end of the stream,
            // or a reset where the peer left bytes unread.
            assert_eq!(bounded("eof", quiet.read(&mut buf)).await.unwrap(), 0);
            assert_err(quiet.write(b"x").await, ErrorKind::BrokenPipe, errno::EPIPE);
            assert_err(
                bounded("reset", noisy.read(&mut buf)).await,
                ErrorKind::ConnectionReset,
                errno::ECONNRESET,
            );
            assert_eq!(noisy.read(&mut buf).await.unwrap(), 0);

            // Dropping the dead handles is harmless.
            drop((from_a, dgram_from_a));

            // After a revive: a kill left node a's socket file behind, which
            // refuses connects and binds until it is unlinked; a crash lost
            // it (its directory was never synced).
            sim::revive(a);
            sim::spawn_on(a, async move {
                if crash {
                    assert_err(
                        UnixStream::connect(path("a.sock")).await,
                        ErrorKind::NotFound,
                        errno::ENOENT,
                    );
                } else {
                    assert_err(
                        UnixStream::connect(path("a.sock")).await,
                        ErrorKind::ConnectionRefused,
                        errno::ECONNREFUSED,
                    );
                    assert_err(
                        UnixListener::bind(path("a.sock")),
                        ErrorKind::AddrInUse,
                        errno::EADDRINUSE,
                    );
                    sim_runtime::fs::remove_file(path("a.sock")).await.unwrap();
                }
                let l = UnixListener::bind(path("a.sock")).unwrap();
                let c = UnixStream::connect(path("a.sock")).await.unwrap();
                let (s, _) = l.accept().await.unwrap();
                c.try_write(b"again").unwrap();
                s.readable().await.unwrap();
                let mut buf = [0u8; 5];
                assert_eq!(s.try_read(&mut buf).unwrap(), 5);
            })
            .await
            .unwrap();
        });
    }
}

/// A service on a Unix socket: binds `/tmp/svc.sock` (first unlinking what
/// an earlier process left there, if `unlink_first`), makes the entry
/// durable, and answers each connection with `up`. Returns only if it
/// cannot bind.
async fn service(unlink_first: bool) -> std::io::Error {
    let p = path("svc.sock");
    if unlink_first {
        match sim_runtime::fs::remove_file(&p).await {
            Err(e) if e.kind() != ErrorKind::NotFound => return e,
            _ => {}
        }
    }
    let l = match UnixListener::bind(&p) {
        Ok(l) => l,
        Err(e) => return e,
    };
    // Durable across a crash too, like any directory entry.
    let dir = sim_runtime::fs::File::open("/tmp").await.unwrap();
    dir.sync_all().await.unwrap();
    loop {
        let (mut s, _) = l.accept().await.unwrap();
        s.write_all(b"up").await.unwrap();
    }
}

/// Connects to the service from its node: what it answers.
async fn ask(node: sim::Node) -> std::io::Result<String> {
    sim::spawn_on(node, async {
        let mut c = UnixStream::connect(path("svc.sock")).await?;
        let mut answer = String::new();
        c.read_to_string(&mut answer).await?;
        Ok(answer)
    })
    .await
    .unwrap()
}

/// The classic stale-socket bug: a killed or crashed service leaves its
/// socket file behind, and a restart that binds without unlinking it
/// fails with `EADDRINUSE`; the fixed service unlinks first.
#[test]
fn a_restarted_service_must_unlink_its_stale_socket_file() {
    claims!("fs.socket.stale");
    for crash in [false, true] {
        for unlink_first in [false, true] {
            run(5, async move {
                let node = sim::node("svc").build();
                sim::spawn_on(node, service(unlink_first));
                time::sleep(Duration::from_millis(1)).await;
                let first = ask(node).await;
                assert_eq!(first.unwrap(), "up");
                if crash {
                    sim::crash(node);
                } else {
                    sim::kill(node);
                }
                sim::revive(node);
                // The socket is gone, its file is not.
                assert_err(
                    ask(node).await,
                    ErrorKind::ConnectionRefused,
                    errno::ECONNREFUSED,
                );
                let restarted = sim::spawn_on(node, service(unlink_first));
                time::sleep(Duration::from_millis(1)).await;
                if unlink_first {
                    assert_eq!(ask(node).await.unwrap(), "up");
                } else {
                    let e = bounded("the failed bind", restarted).await.unwrap();
                    assert_eq!(e.raw_os_error(), Some(errno::EADDRINUSE), "{e}");
                }
            });
        }
    }
}

/// A workload of several clients and a server on one node, with jittered
/// sleeps: the order the server sees them in is the schedule's.
fn workload(seed: u64) -> (u64, Vec<String>) {
    run(seed, async {
        let node = sim::node("server").build();
        let server = sim::spawn_on(node, async {
            let l = UnixListener::bind(path("log.sock")).unwrap();
            let d = UnixDatagram::bind(path("log.dgram")).unwrap();
            let clients = (0..4)
                .map(|i| {
                    sim_runtime::spawn(async move {
                        time::sleep(Duration::from_micros(sim::fork_seed(&i.to_string()) % 50))
                            .await;
                        let mut c = UnixStream::connect(path("log.sock")).await.unwrap();
                        for j in 0..3 {
                            c.write_all(format!("s{i}.{j};").as_bytes()).await.unwrap();
                            sim_runtime::task::yield_now().await;
                        }
                        let u = UnixDatagram::unbound().unwrap();
                        u.send_to(format!("d{i}").as_bytes(), path("log.dgram"))
                            .await
                            .unwrap();
                    })
                })
                .collect::<Vec<_>>();
            // The socket files' inode numbers are the seed's too.
            let mut transcript = Vec::new();
            for name in ["log.sock", "log.dgram"] {
                let m = sim_runtime::fs::metadata(path(name)).await.unwrap();
                transcript.push(format!("{name} ino {}", m.ino()));
            }
            let mut readers = Vec::new();
            for _ in 0..4 {
                let (mut s, _) = l.accept().await.unwrap();
                readers.push(sim_runtime::spawn(async move {
                    let mut all = String::new();
                    s.read_to_string(&mut all).await.unwrap();
                    (all, sim::elapsed())
                }));
            }
            let mut buf = [0u8; 16];
            for _ in 0..4 {
                let n = d.recv(&mut buf).await.unwrap();
                transcript.push(format!(
                    "{}@{:?}",
                    String::from_utf8_lossy(&buf[..n]),
                    sim::elapsed()
                ));
            }
            for r in readers {
                let (all, at) = r.await.unwrap();
                transcript.push(format!("{all}@{at:?}"));
            }
            for c in clients {
                c.await.unwrap();
            }
            transcript
        });
        let transcript = server.await.unwrap();
        (sim::fingerprint(), transcript)
    })
}

#[test]
fn the_same_seed_gives_the_same_unix_socket_run() {
    let first = workload(7);
    assert_eq!(first.1.len(), 10);
    assert_eq!(workload(7), first);
    // The schedule follows the seed: some other seed orders the clients
    // differently (the fingerprint differs for every one).
    let others: Vec<_> = (8..16).map(workload).collect();
    assert!(others.iter().all(|o| o.0 != first.0));
    assert!(
        others.iter().any(|o| o.1 != first.1),
        "every seed gave the same transcript"
    );
}

#[test]
fn configuring_the_network_keeps_the_unix_sockets() {
    run(4, async {
        // Unix sockets take no network setting: made before
        // `sim::net::configure`, they live on in the rebuilt network.
        let l = UnixListener::bind(path("kept.sock")).unwrap();
        let (mut a, mut b) = UnixStream::pair().unwrap();
        a.write_all(b"before").await.unwrap();
        sim::net::configure(sim::net::Config {
            latency_ns: 2_000_000,
            ..Default::default()
        });
        let mut buf = [0u8; 6];
        b.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"before");
        let mut c = UnixStream::connect(path("kept.sock")).await.unwrap();
        let (mut s, _) = bounded("accept", l.accept()).await.unwrap();
        s.write_all(b"after").await.unwrap();
        drop(s);
        let mut all = String::new();
        c.read_to_string(&mut all).await.unwrap();
        assert_eq!(all, "after");
        // A TCP socket made after it takes the new settings.
        let tcp = sim_runtime::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap();
        drop(tcp);
    });
}
