//! The tests both modes run.

use std::io::{ErrorKind, IoSlice, IoSliceMut};
use std::path::Path;

use sim_runtime::io::{AsyncReadExt, AsyncWriteExt, Interest};
use sim_runtime::net::{UnixDatagram, UnixListener, UnixStream};

use crate::{assert_err, assert_errno, bounded, errno, poll_once, with_dir};

#[test]
fn echo_over_a_stream_with_addresses() {
    with_dir(|dir| async move {
        let path = dir.join("echo.sock");
        let listener = UnixListener::bind(&path).unwrap();
        assert_eq!(listener.local_addr().unwrap().as_pathname(), Some(&*path));
        let server = sim_runtime::spawn(async move {
            let (mut s, from) = listener.accept().await.unwrap();
            assert!(from.is_unnamed(), "{from:?}");
            assert!(s.peer_addr().unwrap().is_unnamed());
            assert_eq!(
                s.local_addr().unwrap().as_pathname(),
                listener.local_addr().unwrap().as_pathname()
            );
            let mut buf = [0u8; 64];
            loop {
                let n = s.read(&mut buf).await.unwrap();
                if n == 0 {
                    break;
                }
                s.write_all(&buf[..n]).await.unwrap();
            }
        });
        let mut c = bounded("connect", UnixStream::connect(&path))
            .await
            .unwrap();
        assert!(c.local_addr().unwrap().is_unnamed());
        assert_eq!(c.peer_addr().unwrap().as_pathname(), Some(&*path));
        assert_eq!(format!("{:?}", c.local_addr().unwrap()), "(unnamed)");
        assert_eq!(
            format!("{:?}", c.peer_addr().unwrap()),
            format!("{:?} (pathname)", path)
        );
        for msg in [&b"hello"[..], b"", b"a longer message over the socket"] {
            c.write_all(msg).await.unwrap();
            let mut back = vec![0u8; msg.len()];
            bounded("echo", c.read_exact(&mut back)).await.unwrap();
            assert_eq!(back, msg);
        }
        c.shutdown().await.unwrap();
        let mut rest = Vec::new();
        bounded("eof", c.read_to_end(&mut rest)).await.unwrap();
        assert!(rest.is_empty());
        server.await.unwrap();
    });
}

#[test]
fn pair_is_connected_both_ways_and_unnamed() {
    with_dir(|_| async {
        let (mut a, mut b) = UnixStream::pair().unwrap();
        assert!(a.local_addr().unwrap().is_unnamed());
        assert!(a.peer_addr().unwrap().is_unnamed());
        assert_eq!(a.peer_addr().unwrap().as_pathname(), None);
        a.write_all(b"ping").await.unwrap();
        let mut buf = [0u8; 4];
        b.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"ping");
        b.write_all(b"pong").await.unwrap();
        a.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"pong");
        // Nothing more has been written: a non-blocking read would block.
        assert_eq!(
            a.try_read(&mut buf).unwrap_err().kind(),
            ErrorKind::WouldBlock
        );
        assert_eq!(a.take_error().unwrap().map(|e| e.kind()), None);
    });
}

#[test]
fn half_close_gives_eof_and_the_other_direction_still_works() {
    with_dir(|_| async {
        let (mut a, mut b) = UnixStream::pair().unwrap();
        a.write_all(b"last words").await.unwrap();
        a.shutdown().await.unwrap();
        // The reader drains what was written, then sees the end.
        let mut got = Vec::new();
        bounded("read to eof", b.read_to_end(&mut got))
            .await
            .unwrap();
        assert_eq!(got, b"last words");
        assert_eq!(b.read(&mut [0u8; 8]).await.unwrap(), 0);
        let ready = b.ready(Interest::READABLE).await.unwrap();
        assert!(ready.is_read_closed());
        // Writing after one's own shutdown is a broken pipe.
        assert_err(a.try_write(b"x"), ErrorKind::BrokenPipe, errno::EPIPE);
        // The other direction is open.
        b.write_all(b"reply").await.unwrap();
        let mut buf = [0u8; 5];
        a.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"reply");
    });
}

#[test]
fn write_after_the_peer_dropped_is_a_broken_pipe() {
    with_dir(|_| async {
        let (mut a, b) = UnixStream::pair().unwrap();
        drop(b);
        assert_err(
            a.write(b"anyone?").await,
            ErrorKind::BrokenPipe,
            errno::EPIPE,
        );
        assert_err(a.try_write(b"x"), ErrorKind::BrokenPipe, errno::EPIPE);
        // The peer's close is also the end of what it sends.
        assert_eq!(a.read(&mut [0u8; 8]).await.unwrap(), 0);
        let ready = a.ready(Interest::WRITABLE).await.unwrap();
        assert!(ready.is_write_closed());
    });
}

#[test]
fn closing_with_unread_bytes_resets_the_peer_once() {
    with_dir(|_| async {
        let (mut a, b) = UnixStream::pair().unwrap();
        a.write_all(b"never read").await.unwrap();
        drop(b);
        assert_err(
            a.read(&mut [0u8; 8]).await,
            ErrorKind::ConnectionReset,
            errno::ECONNRESET,
        );
        // The error is reported once; then the stream has ended.
        assert_eq!(a.read(&mut [0u8; 8]).await.unwrap(), 0);
        assert!(a.take_error().unwrap().is_none());

        // SO_ERROR reports the same reset, and takes it.
        let (a, b) = UnixStream::pair().unwrap();
        a.try_write(b"x").unwrap();
        drop(b);
        let e = a.take_error().unwrap().expect("a pending reset");
        assert_eq!(e.raw_os_error(), Some(errno::ECONNRESET));
        assert!(a.take_error().unwrap().is_none());
    });
}

#[test]
fn connect_to_nothing_is_not_found_and_to_a_closed_listener_refused() {
    with_dir(|dir| async move {
        let path = dir.join("nobody.sock");
        assert_err(
            UnixStream::connect(&path).await,
            ErrorKind::NotFound,
            errno::ENOENT,
        );
        let listener = UnixListener::bind(&path).unwrap();
        drop(listener);
        // The path's socket is gone, the name is not.
        assert_err(
            UnixStream::connect(&path).await,
            ErrorKind::ConnectionRefused,
            errno::ECONNREFUSED,
        );
    });
}

#[test]
fn a_socket_of_the_other_type_is_the_wrong_protocol() {
    with_dir(|dir| async move {
        let dg = dir.join("dgram.sock");
        let _d = UnixDatagram::bind(&dg).unwrap();
        assert_errno(UnixStream::connect(&dg).await, errno::EPROTOTYPE);
        let st = dir.join("stream.sock");
        let _l = UnixListener::bind(&st).unwrap();
        let s = UnixDatagram::unbound().unwrap();
        assert_errno(s.send_to(b"x", &st).await, errno::EPROTOTYPE);
        assert_errno(s.connect(&st), errno::EPROTOTYPE);
    });
}

#[test]
fn abstract_names_vanish_with_their_socket() {
    with_dir(|_| async {
        let name = format!("\0sim-uds-test-{}", std::process::id());
        let listener = UnixListener::bind(&name).unwrap();
        let addr = listener.local_addr().unwrap();
        assert_eq!(addr.as_abstract_name(), Some(&name.as_bytes()[1..]));
        assert_eq!(addr.as_pathname(), None);
        let c = UnixStream::connect(&name).await.unwrap();
        let (s, _) = listener.accept().await.unwrap();
        c.try_write(b"hi").unwrap();
        s.readable().await.unwrap();
        let mut buf = [0u8; 2];
        assert_eq!(s.try_read(&mut buf).unwrap(), 2);
        drop(listener);
        assert_err(
            UnixStream::connect(&name).await,
            ErrorKind::ConnectionRefused,
            errno::ECONNREFUSED,
        );
        // No file stays behind: the name is free again.
        drop(UnixListener::bind(&name).unwrap());
    });
}

#[test]
fn a_full_stream_waits_for_the_reader() {
    with_dir(|_| async {
        let (a, b) = UnixStream::pair().unwrap();
        let chunk = vec![7u8; 4096];
        let mut written = 0;
        loop {
            match a.try_write(&chunk) {
                Ok(n) => written += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => panic!("{e}"),
            }
            assert!(written < 64 << 20, "the buffer never filled");
        }
        assert!(written > 0);
        // Reading half of it is not yet room: Linux signals write space
        // only when the buffer is down to a quarter, and Tokio waits for
        // that signal once a write would have blocked.
        let mut read = 0;
        let mut buf = vec![0u8; 16384];
        drain_to(&b, &mut buf, &mut read, written / 2).await;
        assert!(read < written);
        {
            let mut writable = std::pin::pin!(a.writable());
            assert!(poll_once(writable.as_mut()).await.is_pending());
        }
        assert_eq!(
            a.try_write(b"more").unwrap_err().kind(),
            ErrorKind::WouldBlock
        );
        // Reading the rest makes room; the writer becomes writable again.
        drain_to(&b, &mut buf, &mut read, written).await;
        assert_eq!(read, written);
        bounded("writable", a.writable()).await.unwrap();
        assert!(a.try_write(b"more").unwrap() > 0);
    });
}

/// Reads from `b` until `read` reaches `target`.
async fn drain_to(b: &UnixStream, buf: &mut [u8], read: &mut usize, target: usize) {
    while *read < target {
        bounded("readable", b.readable()).await.unwrap();
        match b.try_read(buf) {
            Ok(n) => *read += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn vectored_and_buf_io() {
    with_dir(|_| async {
        let (a, b) = UnixStream::pair().unwrap();
        let n = a
            .try_write_vectored(&[IoSlice::new(b"abc"), IoSlice::new(b"defg")])
            .unwrap();
        assert_eq!(n, 7);
        b.readable().await.unwrap();
        let (mut x, mut y) = ([0u8; 2], [0u8; 8]);
        let n = b
            .try_read_vectored(&mut [IoSliceMut::new(&mut x), IoSliceMut::new(&mut y)])
            .unwrap();
        assert_eq!(n, 7);
        assert_eq!(&x, b"ab");
        assert_eq!(&y[..5], b"cdefg");
        a.try_write(b"buf").unwrap();
        b.readable().await.unwrap();
        let mut v = Vec::with_capacity(16);
        assert_eq!(b.try_read_buf(&mut v).unwrap(), 3);
        assert_eq!(v, b"buf");
    });
}

#[test]
fn into_split_and_reunite() {
    with_dir(|_| async {
        let (a, mut b) = UnixStream::pair().unwrap();
        let (mut r, mut w) = a.into_split();
        w.write_all(b"via the write half").await.unwrap();
        let mut buf = [0u8; 18];
        b.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"via the write half");
        b.write_all(b"back").await.unwrap();
        let mut back = [0u8; 4];
        r.read_exact(&mut back).await.unwrap();
        assert_eq!(&back, b"back");
        assert!(r.peer_addr().unwrap().is_unnamed());

        // Halves of different streams do not reunite.
        let (c, _d) = UnixStream::pair().unwrap();
        let (r2, w2) = c.into_split();
        let err = r.reunite(w2).unwrap_err();
        assert_eq!(
            err.to_string(),
            "tried to reunite halves that are not from the same socket"
        );
        let (r, w2) = (err.0, err.1);
        drop((r2, w2));
        let mut a = r.reunite(w).expect("halves of one stream");
        a.write_all(b"whole").await.unwrap();
        let mut five = [0u8; 5];
        b.read_exact(&mut five).await.unwrap();
        assert_eq!(&five, b"whole");

        // Dropping an owned write half shuts the write direction down.
        let (_r, w) = a.into_split();
        drop(w);
        let mut rest = Vec::new();
        bounded("eof", b.read_to_end(&mut rest)).await.unwrap();
        assert!(rest.is_empty());
    });
}

#[test]
fn borrowed_split_reads_and_writes() {
    with_dir(|_| async {
        let (mut a, mut b) = UnixStream::pair().unwrap();
        {
            let (mut r, mut w) = a.split();
            w.write_all(b"one").await.unwrap();
            b.write_all(b"two").await.unwrap();
            let mut buf = [0u8; 3];
            r.read_exact(&mut buf).await.unwrap();
            assert_eq!(&buf, b"two");
            w.shutdown().await.unwrap();
        }
        let mut got = Vec::new();
        b.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"one");
        assert_err(a.try_write(b"x"), ErrorKind::BrokenPipe, errno::EPIPE);
    });
}

#[cfg(not(simulation))]
fn expected_cred() -> (u32, u32, i32) {
    use std::os::unix::fs::MetadataExt;
    let me = std::fs::metadata("/proc/self").unwrap();
    (me.uid(), me.gid(), std::process::id() as i32)
}

#[cfg(simulation)]
fn expected_cred() -> (u32, u32, i32) {
    // EXCEPTION_SIMULATED_CREDENTIALS: the main node's simulated process.
    (1000, 1000, 1000)
}

#[test]
fn peer_cred_is_this_process() {
    with_dir(|dir| async move {
        let (uid, gid, pid) = expected_cred();
        let (a, _b) = UnixStream::pair().unwrap();
        let cred = a.peer_cred().unwrap();
        assert_eq!((cred.uid(), cred.gid(), cred.pid()), (uid, gid, Some(pid)));
        let path = dir.join("cred.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let c = UnixStream::connect(&path).await.unwrap();
        let (s, _) = listener.accept().await.unwrap();
        for cred in [c.peer_cred().unwrap(), s.peer_cred().unwrap()] {
            assert_eq!((cred.uid(), cred.gid(), cred.pid()), (uid, gid, Some(pid)));
        }
    });
}

#[test]
fn datagrams_keep_their_boundaries_and_truncate() {
    with_dir(|dir| async move {
        let (pa, pb) = (dir.join("a.sock"), dir.join("b.sock"));
        let a = UnixDatagram::bind(&pa).unwrap();
        let b = UnixDatagram::bind(&pb).unwrap();
        assert_eq!(a.local_addr().unwrap().as_pathname(), Some(&*pa));
        let sizes = [1usize, 5, 300, 0, 4000];
        for (i, &n) in sizes.iter().enumerate() {
            assert_eq!(a.send_to(&vec![i as u8; n], &pb).await.unwrap(), n);
        }
        let mut buf = vec![0u8; 8192];
        for (i, &n) in sizes.iter().enumerate() {
            let (got, from) = bounded("recv_from", b.recv_from(&mut buf)).await.unwrap();
            assert_eq!(got, n, "datagram {i}");
            assert!(buf[..got].iter().all(|&x| x == i as u8));
            assert_eq!(from.as_pathname(), Some(&*pa));
        }
        // A short buffer truncates: the rest of that datagram is gone.
        a.send_to(b"0123456789", &pb).await.unwrap();
        a.send_to(b"next", &pb).await.unwrap();
        let mut small = [0u8; 4];
        assert_eq!(b.recv(&mut small).await.unwrap(), 4);
        assert_eq!(&small, b"0123");
        let mut buf = [0u8; 16];
        assert_eq!(b.recv(&mut buf).await.unwrap(), 4);
        assert_eq!(&buf[..4], b"next");
        assert_eq!(
            b.try_recv(&mut buf).unwrap_err().kind(),
            ErrorKind::WouldBlock
        );
        // An unbound sender is unnamed.
        let u = UnixDatagram::unbound().unwrap();
        assert!(u.local_addr().unwrap().is_unnamed());
        u.send_to(b"anon", &pb).await.unwrap();
        let (n, from) = b.recv_from(&mut buf).await.unwrap();
        assert_eq!(n, 4);
        assert!(from.is_unnamed());
    });
}

#[test]
fn datagram_errors() {
    with_dir(|dir| async move {
        let s = UnixDatagram::unbound().unwrap();
        assert_err(s.send(b"x").await, ErrorKind::NotConnected, errno::ENOTCONN);
        assert_err(s.peer_addr(), ErrorKind::NotConnected, errno::ENOTCONN);
        let missing = dir.join("missing.sock");
        assert_err(
            s.send_to(b"x", &missing).await,
            ErrorKind::NotFound,
            errno::ENOENT,
        );
        assert_err(s.connect(&missing), ErrorKind::NotFound, errno::ENOENT);
        let gone = dir.join("gone.sock");
        drop(UnixDatagram::bind(&gone).unwrap());
        assert_err(
            s.send_to(b"x", &gone).await,
            ErrorKind::ConnectionRefused,
            errno::ECONNREFUSED,
        );
        let big = vec![0u8; 1 << 20];
        let (a, _b) = UnixDatagram::pair().unwrap();
        assert_errno(a.try_send(&big), errno::EMSGSIZE);
    });
}

#[test]
fn datagram_pair_connect_and_shutdown() {
    with_dir(|dir| async move {
        let (a, b) = UnixDatagram::pair().unwrap();
        assert!(a.peer_addr().unwrap().is_unnamed());
        a.send(b"one").await.unwrap();
        a.send(b"two").await.unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(b.recv(&mut buf).await.unwrap(), 3);
        assert_eq!(&buf[..3], b"one");
        assert_eq!(b.recv(&mut buf).await.unwrap(), 3);
        assert_eq!(&buf[..3], b"two");

        // connect: send goes to the peer, and the peer's address is known.
        let p = dir.join("server.sock");
        let server = UnixDatagram::bind(&p).unwrap();
        let client = UnixDatagram::unbound().unwrap();
        client.connect(&p).unwrap();
        assert_eq!(client.peer_addr().unwrap().as_pathname(), Some(&*p));
        client.send(b"hello").await.unwrap();
        let (n, _) = server.recv_from(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"hello");

        // A socket connected elsewhere refuses strangers.
        let third = UnixDatagram::bind(dir.join("third.sock")).unwrap();
        third.connect(dir.join("server.sock")).unwrap();
        let stranger = UnixDatagram::unbound().unwrap();
        assert_err(
            stranger.send_to(b"x", dir.join("third.sock")).await,
            ErrorKind::PermissionDenied,
            1,
        );

        // shutdown(Write): sends fail; shutdown(Read): receives end.
        a.shutdown(std::net::Shutdown::Write).unwrap();
        assert_err(a.send(b"x").await, ErrorKind::BrokenPipe, errno::EPIPE);
        b.shutdown(std::net::Shutdown::Read).unwrap();
        // Read-closed, yet a datagram socket never reads an end: Linux's
        // non-blocking recvmsg answers EAGAIN (only SOCK_SEQPACKET reads 0).
        // (The first WouldBlock also clears the readiness Tokio kept from
        // the receives above, so `ready` reports the shutdown.)
        assert_eq!(
            b.try_recv(&mut buf).unwrap_err().kind(),
            ErrorKind::WouldBlock
        );
        let ready = bounded("ready", b.ready(Interest::READABLE)).await.unwrap();
        assert!(ready.is_read_closed());
        assert_eq!(
            b.try_recv(&mut buf).unwrap_err().kind(),
            ErrorKind::WouldBlock
        );
        assert!(a.take_error().unwrap().is_none());

        // What was queued before shutdown(Read) is still received; sending
        // to a socket shut for reading is a broken pipe.
        let (c, d) = UnixDatagram::pair().unwrap();
        bounded("writable", c.writable()).await.unwrap();
        c.try_send(b"queued").unwrap();
        d.shutdown(std::net::Shutdown::Read).unwrap();
        bounded("readable", d.readable()).await.unwrap();
        assert_eq!(d.try_recv(&mut buf).unwrap(), 6);
        assert_eq!(&buf[..6], b"queued");
        assert_err(c.try_send(b"x"), ErrorKind::BrokenPipe, errno::EPIPE);
    });
}

#[test]
fn a_full_datagram_queue_makes_the_sender_wait() {
    with_dir(|dir| async move {
        let p = dir.join("q.sock");
        let r = UnixDatagram::bind(&p).unwrap();
        let s = UnixDatagram::unbound().unwrap();
        s.connect(&p).unwrap();
        // Tokio learns that a new socket is writable from the reactor.
        bounded("writable", s.writable()).await.unwrap();
        let mut sent = 0;
        loop {
            match s.try_send(b"d") {
                Ok(_) => sent += 1,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => panic!("{e}"),
            }
            assert!(sent < 100_000, "the queue never filled");
        }
        // Linux's net.unix.max_dgram_qlen is 10: the queue holds 11.
        assert_eq!(sent, 11);
        let mut buf = [0u8; 1];
        r.recv(&mut buf).await.unwrap();
        bounded("writable", s.writable()).await.unwrap();
        s.try_send(b"d").unwrap();
    });
}

#[test]
fn socket_addr_conversions() {
    with_dir(|dir| async move {
        let p = dir.join("conv.sock");
        let l = UnixListener::bind(&p).unwrap();
        let ours = l.local_addr().unwrap();
        let std_addr: std::os::unix::net::SocketAddr = ours.clone().into();
        assert_eq!(std_addr.as_pathname(), Some(Path::new(&p)));
        let back = sim_runtime::net::unix::SocketAddr::from(std_addr);
        assert_eq!(back.as_pathname(), ours.as_pathname());
        let again = UnixListener::bind_addr(&back);
        assert_err(again, ErrorKind::AddrInUse, errno::EADDRINUSE);
    });
}

/// Tokio caches readiness: a datagram socket seen writable stays writable
/// for `writable()` until a send would block, so a loop of `writable()`
/// and `try_send` ends with `WouldBlock` instead of waiting forever on a
/// full queue (Tokio's `uds_datagram::try_send_recv_never_block`).
#[test]
fn writable_stays_ready_until_a_send_would_block() {
    with_dir(|_dir| async move {
        let (a, b) = UnixDatagram::pair().unwrap();
        let mut sent = 0;
        loop {
            bounded("writable", a.writable()).await.unwrap();
            match a.try_send(b"d") {
                Ok(_) => sent += 1,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => panic!("{e}"),
            }
            assert!(sent < 100_000, "the queue never filled");
        }
        // EXCEPTION_PAIR_QUEUE_LENGTH: Linux queues more for a pair.
        assert!(sent > 0);
        let mut buf = [0u8; 4];
        for _ in 0..sent {
            bounded("readable", b.readable()).await.unwrap();
            assert_eq!(b.try_recv(&mut buf).unwrap(), 1);
        }
        assert_eq!(
            b.try_recv(&mut buf).unwrap_err().kind(),
            ErrorKind::WouldBlock
        );
    });
}

/// An accepted stream starts assumed readable (Tokio 1.54: its first read
/// tries the socket); a read that finds nothing clears that, and data from
/// the peer makes it readable again.
#[test]
fn an_accepted_stream_is_readable_until_a_read_finds_nothing() {
    with_dir(|dir| async move {
        let path = dir.join("acc.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let mut c = bounded("connect", UnixStream::connect(&path))
            .await
            .unwrap();
        let (s, _) = listener.accept().await.unwrap();
        assert!(
            poll_once(std::pin::pin!(s.readable())).await.is_ready(),
            "assumed readable"
        );
        let mut buf = [0u8; 8];
        assert_eq!(
            s.try_read(&mut buf).unwrap_err().kind(),
            ErrorKind::WouldBlock
        );
        assert!(
            poll_once(std::pin::pin!(s.readable())).await.is_pending(),
            "a read found nothing"
        );
        c.write_all(b"ping").await.unwrap();
        bounded("readable", s.readable()).await.unwrap();
        assert_eq!(s.try_read(&mut buf).unwrap(), 4);
    });
}

/// `UnixSocket`: a stream socket bound before `listen` or `connect` (the
/// accepted end sees the client's name), a datagram socket bound before
/// use, an address taken twice, and Tokio's errors for the wrong type.
#[test]
fn unix_socket_binds_before_it_listens_connects_or_sends() {
    use sim_runtime::net::UnixSocket;
    with_dir(|dir| async move {
        let (lp, cp) = (dir.join("l.sock"), dir.join("c.sock"));
        let l = UnixSocket::new_stream().unwrap();
        l.bind(&lp).unwrap();
        let listener = l.listen(16).unwrap();
        assert_eq!(listener.local_addr().unwrap().as_pathname(), Some(&*lp));
        let taken = UnixSocket::new_stream().unwrap();
        assert_err(taken.bind(&lp), ErrorKind::AddrInUse, errno::EADDRINUSE);
        let c = UnixSocket::new_stream().unwrap();
        c.bind(&cp).unwrap();
        let mut client = bounded("connect", c.connect(&lp)).await.unwrap();
        assert_eq!(client.local_addr().unwrap().as_pathname(), Some(&*cp));
        let (mut server, from) = listener.accept().await.unwrap();
        assert_eq!(from.as_pathname(), Some(&*cp));
        assert_eq!(server.peer_addr().unwrap().as_pathname(), Some(&*cp));
        client.write_all(b"hi").await.unwrap();
        drop(client);
        let mut got = Vec::new();
        bounded("read", server.read_to_end(&mut got)).await.unwrap();
        assert_eq!(got, b"hi");

        let dp = dir.join("d.sock");
        let d = UnixSocket::new_datagram().unwrap();
        d.bind(&dp).unwrap();
        let d = d.datagram().unwrap();
        assert_eq!(d.local_addr().unwrap().as_pathname(), Some(&*dp));
        let e = UnixDatagram::unbound().unwrap();
        e.send_to(b"x", &dp).await.unwrap();
        let mut buf = [0u8; 4];
        assert_eq!(bounded("recv", d.recv(&mut buf)).await.unwrap(), 1);

        let msg = |r: std::io::Result<()>| r.unwrap_err().to_string();
        let dg = || UnixSocket::new_datagram().unwrap();
        assert_eq!(
            msg(dg().connect(&lp).await.map(drop)),
            "connect cannot be called on a datagram socket"
        );
        assert_eq!(
            msg(dg().listen(1).map(drop)),
            "listen cannot be called on a datagram socket"
        );
        assert_eq!(
            msg(UnixSocket::new_stream().unwrap().datagram().map(drop)),
            "datagram cannot be called on a stream socket"
        );
    });
}

/// As on Tokio: once the runtime shut down, an accept on a listener made
/// before fails at once with the runtime's shutdown error (it does not
/// wait forever).
#[test]
fn accept_after_the_runtime_shut_down_is_the_shutdown_error() {
    let dir = tempfile::tempdir().unwrap();
    // The simulated disk has `/tmp`, not the real temporary directory.
    let path = if cfg!(simulation) {
        Path::new("/tmp/s.sock").to_path_buf()
    } else {
        dir.path().join("s.sock")
    };
    let rt = sim_runtime::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _enter = rt.enter();
    let listener = UnixListener::bind(path).unwrap();
    rt.shutdown_timeout(std::time::Duration::from_secs(1000));
    let handle = sim_runtime::runtime::Handle::current();
    let err = handle.block_on(listener.accept()).unwrap_err();
    assert!(sim_runtime::runtime::is_rt_shutdown_err(&err), "{err}");
}

/// As on Tokio: binding a listener on a runtime built without I/O panics
/// with Tokio's message.
#[test]
fn binding_without_io_enabled_panics() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sock");
    let rt = sim_runtime::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.block_on(async { drop(UnixListener::bind(&path)) })
    }));
    let payload = r.expect_err("bind panicked");
    let msg = payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    assert!(msg.contains("IO is disabled"), "{msg}");
}
