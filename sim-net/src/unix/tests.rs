//! The Unix socket model's rules (the crate docs' **Unix sockets**), driven
//! directly: no executor, no time.

use super::*;
use crate::{Config, Notification};
use std::net::Shutdown;

/// The failure-mode rows a test checks (`cargo xtask failure-modes` reads
/// the source; nothing is expanded).
macro_rules! claims {
    ($($id:literal),+ $(,)?) => {};
}

const A: HostId = HostId(0);
const B: HostId = HostId(1);
const NOW: u64 = 7;

fn net() -> Net {
    let mut n = Net::new(Config::default());
    n.add_host(A, "10.0.0.1".parse().unwrap());
    n.add_host(B, "10.0.0.2".parse().unwrap());
    n
}

fn path(p: &str) -> UnixAddr {
    UnixAddr::Path(p.as_bytes().to_vec())
}

/// The inode of `p`'s socket file: the test plays the disk, with one file
/// per path (a real disk gives a rebound path a new one).
fn file(p: &str) -> u64 {
    p.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// What a connect or send to path `p` looks up.
fn to(p: &str) -> UnixName {
    UnixName::File(file(p))
}

fn abstract_name(p: &str) -> UnixAddr {
    UnixAddr::Abstract(p.as_bytes().to_vec())
}

fn abs(p: &str) -> UnixName {
    UnixName::Abstract(p.as_bytes().to_vec())
}

/// A listener on `host` bound to path `p` (its socket file made).
fn listen(n: &mut Net, host: HostId, p: &str) -> io::Result<SocketId> {
    n.unix_listen(host, path(p), Some(file(p)))
}

fn ready<T: std::fmt::Debug>(p: Progress<T>) -> io::Result<T> {
    match p {
        Progress::Ready(r) => r,
        Progress::Pending { wake_at } => panic!("pending (wake at {wake_at:?})"),
    }
}

fn is_pending<T: std::fmt::Debug>(p: Progress<T>) -> bool {
    match p {
        Progress::Pending { wake_at } => {
            assert_eq!(wake_at, None, "a Unix socket never waits for a time");
            true
        }
        Progress::Ready(r) => {
            eprintln!("ready: {r:?}");
            false
        }
    }
}

#[track_caller]
fn errno<T: std::fmt::Debug>(r: io::Result<T>) -> i32 {
    r.expect_err("expected an error")
        .raw_os_error()
        .expect("an errno")
}

fn notes(n: &mut Net) -> Vec<(SocketId, Wakes)> {
    let mut v: Vec<Notification> = Vec::new();
    n.take_notifications(&mut v);
    assert!(v.iter().all(|x| x.at == NOW), "notified now");
    v.into_iter().map(|x| (x.socket, x.wakes)).collect()
}

/// A listener on A at `name`, a connected client and its accepted server
/// end.
fn connected(n: &mut Net, name: &str) -> (SocketId, SocketId, SocketId) {
    let l = listen(n, A, name).unwrap();
    let c = n.unix_connect(A, &to(name), NOW).unwrap();
    let (s, from) = ready(n.unix_accept(l)).unwrap();
    assert_eq!(from, UnixAddr::Unnamed);
    notes(n);
    (l, c, s)
}

#[test]
fn connect_queues_the_server_end_until_accept() {
    let mut n = net();
    let l = listen(&mut n, A, "/run/s.sock").unwrap();
    assert_eq!(n.kind(l), Some(crate::SocketKind::UnixListener));
    assert!(is_pending(n.unix_accept(l)));
    assert!(!n.unix_readiness(l).readable);
    let c = n.unix_connect(A, &to("/run/s.sock"), NOW).unwrap();
    assert_eq!(notes(&mut n), vec![(l, Wakes::Readers)]);
    assert!(n.unix_readiness(l).readable);
    let (s, from) = ready(n.unix_accept(l)).unwrap();
    assert_eq!(from, UnixAddr::Unnamed);
    assert_eq!(n.kind(s), Some(crate::SocketKind::UnixStream));
    assert_eq!(n.unix_local_addr(s).unwrap(), path("/run/s.sock"));
    assert_eq!(n.unix_peer_addr(c).unwrap(), path("/run/s.sock"));
    assert_eq!(n.unix_local_addr(c).unwrap(), UnixAddr::Unnamed);
    assert_eq!(n.unix_peer_addr(s).unwrap(), UnixAddr::Unnamed);
    assert_eq!(n.unix_peer_host(s).unwrap(), A);
    assert_eq!(errno(n.unix_peer_addr(l)), ENOTCONN);
    assert_eq!(ready(n.unix_write(c, b"hi", NOW)).unwrap(), 2);
    assert_eq!(notes(&mut n), vec![(s, Wakes::Readers)]);
    let mut buf = [0u8; 8];
    assert_eq!(ready(n.unix_read(s, &mut buf, NOW)).unwrap(), 2);
    assert_eq!(&buf[..2], b"hi");
    assert!(is_pending(n.unix_read(s, &mut buf, NOW)));
    n.check_invariants();
}

#[test]
fn a_bound_client_names_itself_to_its_peer() {
    let mut n = net();
    let l = listen(&mut n, A, "/s").unwrap();
    n.unix_check_free(A, &to("/c")).unwrap();
    let c = n.unix_connect(A, &to("/s"), NOW).unwrap();
    n.unix_bind_client(c, path("/c"), Some(file("/c"))).unwrap();
    let (_s, from) = ready(n.unix_accept(l)).unwrap();
    assert_eq!(from, path("/c"));
    assert_eq!(errno(n.unix_check_free(A, &to("/c"))), EADDRINUSE);
    // A stream's name is not a listener's: connecting to it is refused.
    assert_eq!(errno(n.unix_connect(A, &to("/c"), NOW)), ECONNREFUSED);
}

#[test]
fn the_backlog_holds_1025_connections() {
    let mut n = net();
    let l = listen(&mut n, A, "/s").unwrap();
    for _ in 0..=UNIX_BACKLOG {
        n.unix_connect(A, &to("/s"), NOW).unwrap();
    }
    assert_eq!(errno(n.unix_connect(A, &to("/s"), NOW)), EAGAIN);
    ready(n.unix_accept(l)).unwrap();
    n.unix_connect(A, &to("/s"), NOW).unwrap();
}

#[test]
fn names_refuse_as_linux_does() {
    let mut n = net();
    // A socket file no socket holds, a missing abstract name: refused.
    assert_eq!(errno(n.unix_connect(A, &to("/nothing"), NOW)), ECONNREFUSED);
    assert_eq!(errno(n.unix_connect(A, &abs("nothing"), NOW)), ECONNREFUSED);
    let l = listen(&mut n, A, "/s").unwrap();
    assert_eq!(errno(listen(&mut n, A, "/s")), EADDRINUSE);
    n.unix_listen(A, abstract_name("a"), None).unwrap();
    assert_eq!(
        errno(n.unix_listen(A, abstract_name("a"), None)),
        EADDRINUSE
    );
    // A failed listen leaves no socket behind.
    assert_eq!(n.open_sockets(), 2);
    let d = n.unix_datagram(A);
    n.unix_bind(d, path("/d"), Some(file("/d"))).unwrap();
    assert_eq!(errno(n.unix_connect(A, &to("/d"), NOW)), EPROTOTYPE);
    assert_eq!(errno(n.unix_datagram_connect(d, &to("/s"))), EPROTOTYPE);
    // A closed socket's name is free at once; its socket file (the
    // caller's) refuses connects.
    n.close(l, NOW);
    assert_eq!(errno(n.unix_connect(A, &to("/s"), NOW)), ECONNREFUSED);
    n.unix_check_free(A, &to("/s")).unwrap();
    // The path bound again is a new socket file, reached by its inode.
    let l2 = n.unix_listen(A, path("/s"), Some(file("/s") + 1)).unwrap();
    assert_eq!(errno(n.unix_connect(A, &to("/s"), NOW)), ECONNREFUSED);
    n.unix_connect(A, &UnixName::File(file("/s") + 1), NOW)
        .unwrap();
    assert!(n.unix_readiness(l2).readable);
    assert_eq!(n.unix_local_addr(l2).unwrap(), path("/s"));
    n.check_invariants();
}

#[test]
fn a_socket_binds_once() {
    let mut n = net();
    let d = n.unix_datagram(A);
    n.unix_bind(d, path("/one"), Some(file("/one"))).unwrap();
    assert_eq!(
        errno(n.unix_bind(d, path("/two"), Some(file("/two")))),
        EINVAL
    );
    assert_eq!(errno(n.unix_bind(d, abstract_name("x"), None)), EINVAL);
    // Autobinding a bound socket leaves it as it is.
    n.unix_bind(d, UnixAddr::Unnamed, None).unwrap();
    assert_eq!(n.unix_local_addr(d).unwrap(), path("/one"));
    n.unix_check_free(A, &to("/two")).unwrap();
    n.unix_check_free(A, &abs("x")).unwrap();
    // An unbound one autobinds to the next free abstract name.
    n.unix_listen(A, abstract_name("00001"), None).unwrap();
    let e = n.unix_datagram(A);
    n.unix_bind(e, UnixAddr::Unnamed, None).unwrap();
    assert_eq!(n.unix_local_addr(e).unwrap(), abstract_name("00002"));
    n.check_invariants();
}

#[test]
#[should_panic(expected = "binds with the inode of its socket file")]
fn a_path_binds_only_with_its_socket_file() {
    let mut n = net();
    let d = n.unix_datagram(A);
    let _ = n.unix_bind(d, path("/p"), None);
}

#[test]
fn an_abstract_name_goes_with_its_socket() {
    let mut n = net();
    let l = n.unix_listen(A, abstract_name("svc"), None).unwrap();
    n.unix_connect(A, &abs("svc"), NOW).unwrap();
    n.close(l, NOW);
    assert_eq!(errno(n.unix_connect(A, &abs("svc"), NOW)), ECONNREFUSED);
    // The unnamed address autobinds to five hex digits.
    let auto = n.unix_listen(A, UnixAddr::Unnamed, None).unwrap();
    assert_eq!(n.unix_local_addr(auto).unwrap(), abstract_name("00001"));
    n.unix_connect(A, &abs("00001"), NOW).unwrap();
}

#[test]
fn each_host_has_its_own_namespace() {
    let mut n = net();
    listen(&mut n, A, "/s").unwrap();
    assert_eq!(errno(n.unix_connect(B, &to("/s"), NOW)), ECONNREFUSED);
    // The same inode number on B's disk would be another file: B's own.
    let lb = listen(&mut n, B, "/s").unwrap();
    let c = n.unix_connect(B, &to("/s"), NOW).unwrap();
    let (s, _) = ready(n.unix_accept(lb)).unwrap();
    assert_eq!(n.unix_peer_host(s).unwrap(), B);
    assert_eq!(n.socket_host(c), Some(B));
}

#[test]
fn shutdown_ends_reads_and_fails_writes_on_both_sides() {
    let mut n = net();
    let (_, c, s) = connected(&mut n, "/s");
    ready(n.unix_write(c, b"last", NOW)).unwrap();
    n.unix_shutdown(c, Shutdown::Write, NOW).unwrap();
    assert_eq!(
        notes(&mut n),
        vec![(s, Wakes::Readers), (c, Wakes::All), (s, Wakes::All)]
    );
    assert_eq!(errno(ready(n.unix_write(c, b"x", NOW))), EPIPE);
    let mut buf = [0u8; 8];
    assert_eq!(ready(n.unix_read(s, &mut buf, NOW)).unwrap(), 4);
    assert_eq!(ready(n.unix_read(s, &mut buf, NOW)).unwrap(), 0);
    let r = n.unix_readiness(s);
    assert!(r.readable && r.read_closed && !r.write_closed);
    // The other way still works.
    assert_eq!(ready(n.unix_write(s, b"back", NOW)).unwrap(), 4);
    assert_eq!(ready(n.unix_read(c, &mut buf, NOW)).unwrap(), 4);
    // Shutting reading down makes the peer's writes fail.
    n.unix_shutdown(c, Shutdown::Read, NOW).unwrap();
    assert_eq!(errno(ready(n.unix_write(s, b"x", NOW))), EPIPE);
    assert!(n.unix_readiness(s).write_closed);
}

#[test]
fn closing_with_unread_bytes_resets_the_peer_once() {
    claims!("net.unix.reset");
    let mut n = net();
    let (_, c, s) = connected(&mut n, "/s");
    ready(n.unix_write(c, b"unread", NOW)).unwrap();
    ready(n.unix_write(s, b"sent", NOW)).unwrap();
    notes(&mut n);
    n.close(s, NOW);
    assert_eq!(notes(&mut n), vec![(s, Wakes::All), (c, Wakes::All)]);
    let mut buf = [0u8; 8];
    // What the peer sent before closing is read first.
    assert_eq!(ready(n.unix_read(c, &mut buf, NOW)).unwrap(), 4);
    assert!(n.unix_readiness(c).error);
    assert_eq!(errno(ready(n.unix_read(c, &mut buf, NOW))), ECONNRESET);
    assert_eq!(ready(n.unix_read(c, &mut buf, NOW)).unwrap(), 0);
    assert_eq!(errno(ready(n.unix_write(c, b"x", NOW))), EPIPE);
    // A clean close is the end: no error.
    let (_, c2, s2) = connected(&mut n, "/s2");
    n.close(s2, NOW);
    assert_eq!(
        n.unix_take_error(c2).unwrap().map(|e| e.raw_os_error()),
        None
    );
    assert_eq!(ready(n.unix_read(c2, &mut buf, NOW)).unwrap(), 0);
}

#[test]
fn a_connection_never_accepted_is_reset_when_its_listener_closes() {
    claims!("net.unix.reset");
    let mut n = net();
    let l = listen(&mut n, A, "/s").unwrap();
    let c = n.unix_connect(A, &to("/s"), NOW).unwrap();
    notes(&mut n);
    n.close(l, NOW);
    let server = SocketId {
        index: c.index + 1,
        gen: 0,
    };
    assert_eq!(
        notes(&mut n),
        vec![(l, Wakes::All), (server, Wakes::All), (c, Wakes::All)]
    );
    let e = n.unix_take_error(c).unwrap().expect("a pending error");
    assert_eq!(e.raw_os_error(), Some(ECONNRESET));
    assert_eq!(n.unix_take_error(c).unwrap().map(|e| e.kind()), None);
    assert_eq!(n.open_sockets(), 1);
}

#[test]
fn a_full_writer_waits_until_a_quarter_is_left() {
    let mut n = net();
    let (_, c, s) = connected(&mut n, "/s");
    let big = vec![7u8; UNIX_SNDBUF + 10];
    assert_eq!(ready(n.unix_write(c, &big, NOW)).unwrap(), UNIX_SNDBUF);
    assert!(
        n.unix_readiness(c).writable,
        "writable until a write finds no room"
    );
    assert!(is_pending(n.unix_write(c, b"x", NOW)));
    assert!(!n.unix_readiness(c).writable);
    notes(&mut n);
    // Reading down to more than a quarter: still blocked, nobody told.
    let mut buf = vec![0u8; UNIX_SNDBUF / 2];
    ready(n.unix_read(s, &mut buf, NOW)).unwrap();
    assert_eq!(notes(&mut n), vec![]);
    assert!(!n.unix_readiness(c).writable);
    assert!(is_pending(n.unix_write(c, b"x", NOW)));
    // A quarter left: the writer is told, and writes again.
    let rest = UNIX_SNDBUF / 2 - UNIX_SNDBUF / 4;
    ready(n.unix_read(s, &mut buf[..rest], NOW)).unwrap();
    assert_eq!(notes(&mut n), vec![(c, Wakes::Writers)]);
    assert!(n.unix_readiness(c).writable);
    assert_eq!(
        ready(n.unix_write(c, &big, NOW)).unwrap(),
        UNIX_SNDBUF - UNIX_SNDBUF / 4
    );
    assert_eq!(ready(n.unix_write(c, b"", NOW)).unwrap(), 0);
}

#[test]
fn datagrams_keep_boundaries_and_senders() {
    let mut n = net();
    let r = n.unix_datagram(A);
    n.unix_bind(r, path("/r"), Some(file("/r"))).unwrap();
    let s = n.unix_datagram(A);
    n.unix_bind(s, abstract_name("s"), None).unwrap();
    assert_eq!(
        ready(n.unix_send(s, b"one", Some(&to("/r")), NOW)).unwrap(),
        3
    );
    assert_eq!(notes(&mut n), vec![(r, Wakes::Readers)]);
    ready(n.unix_send(s, b"second", Some(&to("/r")), NOW)).unwrap();
    let mut buf = [0u8; 3];
    let (k, from) = ready(n.unix_recv(r, &mut buf, NOW)).unwrap();
    assert_eq!((k, &buf, from), (3, b"one", abstract_name("s")));
    // A short buffer takes the start; the rest is lost.
    assert_eq!(ready(n.unix_recv(r, &mut buf, NOW)).unwrap().0, 3);
    assert_eq!(&buf, b"sec");
    assert!(is_pending(n.unix_recv(r, &mut buf, NOW)));
    let big = vec![0u8; UNIX_SNDBUF - 31];
    assert_eq!(
        errno(ready(n.unix_send(s, &big, Some(&to("/r")), NOW))),
        EMSGSIZE
    );
    assert_eq!(errno(ready(n.unix_send(s, b"x", None, NOW))), ENOTCONN);
    assert_eq!(
        errno(ready(n.unix_send(s, b"x", Some(&to("/no")), NOW))),
        ECONNREFUSED
    );
    // An unbound sender's datagrams come from the unnamed address.
    let u = n.unix_datagram(A);
    ready(n.unix_send(u, b"?", Some(&to("/r")), NOW)).unwrap();
    assert_eq!(
        ready(n.unix_recv(r, &mut buf, NOW)).unwrap().1,
        UnixAddr::Unnamed
    );
}

#[test]
fn a_full_receiver_makes_senders_wait_and_tells_them_of_room() {
    let mut n = net();
    let r = n.unix_datagram(A);
    n.unix_bind(r, path("/r"), Some(file("/r"))).unwrap();
    let (s1, s2) = (n.unix_datagram(A), n.unix_datagram(A));
    for _ in 0..=UNIX_MAX_DGRAM_QLEN {
        ready(n.unix_send(s1, b"d", Some(&to("/r")), NOW)).unwrap();
    }
    assert!(is_pending(n.unix_send(s1, b"d", Some(&to("/r")), NOW)));
    assert!(is_pending(n.unix_send(s2, b"d", Some(&to("/r")), NOW)));
    assert!(is_pending(n.unix_send(s1, b"d", Some(&to("/r")), NOW)));
    notes(&mut n);
    // One datagram out: every waiting sender is told, in the order they
    // came, once.
    let mut buf = [0u8; 1];
    ready(n.unix_recv(r, &mut buf, NOW)).unwrap();
    assert_eq!(
        notes(&mut n),
        vec![(s1, Wakes::Writers), (s2, Wakes::Writers)]
    );
    ready(n.unix_recv(r, &mut buf, NOW)).unwrap();
    assert_eq!(notes(&mut n), vec![]);
    // A socket connected to a full receiver is not writable, and waits
    // with the senders.
    n.unix_datagram_connect(s2, &to("/r")).unwrap();
    ready(n.unix_send(s2, b"d", None, NOW)).unwrap();
    ready(n.unix_send(s2, b"d", None, NOW)).unwrap();
    assert!(!n.unix_readiness(s2).writable);
    notes(&mut n);
    n.close(r, NOW);
    assert_eq!(notes(&mut n), vec![(r, Wakes::All), (s2, Wakes::Writers)]);
    // The peer gone, a send is refused once, then the socket is not
    // connected.
    assert!(n.unix_readiness(s2).writable);
    assert_eq!(errno(ready(n.unix_send(s2, b"d", None, NOW))), ECONNREFUSED);
    assert_eq!(errno(ready(n.unix_send(s2, b"d", None, NOW))), ENOTCONN);
}

#[test]
fn a_connected_datagram_socket_takes_only_its_peer() {
    let mut n = net();
    let (a, b) = n.unix_datagram_pair(A);
    assert_eq!(n.kind(a), Some(crate::SocketKind::UnixDatagram));
    ready(n.unix_send(a, b"to b", None, NOW)).unwrap();
    let mut buf = [0u8; 8];
    assert_eq!(ready(n.unix_recv(b, &mut buf, NOW)).unwrap().0, 4);
    let c = n.unix_datagram(A);
    n.unix_bind(c, path("/c"), Some(file("/c"))).unwrap();
    // b is connected to a: c's datagrams are refused, and so is c's
    // connect to b's (unnamed, so unreachable) name; a named target
    // connected elsewhere refuses a connect too.
    let d = n.unix_datagram(A);
    n.unix_bind(d, path("/d"), Some(file("/d"))).unwrap();
    n.unix_datagram_connect(d, &to("/c")).unwrap();
    assert_eq!(errno(n.unix_datagram_connect(a, &to("/d"))), EPERM);
    assert_eq!(
        errno(ready(n.unix_send(a, b"x", Some(&to("/d")), NOW))),
        EPERM
    );
    assert_eq!(n.unix_peer_addr(d).unwrap(), path("/c"));
    assert_eq!(ready(n.unix_send(d, b"x", None, NOW)).unwrap(), 1);
    assert_eq!(ready(n.unix_recv(c, &mut buf, NOW)).unwrap().1, path("/d"));
}

#[test]
fn a_datagram_socket_shut_for_reading_refuses_senders_but_never_ends() {
    let mut n = net();
    let r = n.unix_datagram(A);
    n.unix_bind(r, path("/r"), Some(file("/r"))).unwrap();
    let s = n.unix_datagram(A);
    ready(n.unix_send(s, b"kept", Some(&to("/r")), NOW)).unwrap();
    n.unix_shutdown(r, Shutdown::Read, NOW).unwrap();
    assert_eq!(
        errno(ready(n.unix_send(s, b"x", Some(&to("/r")), NOW))),
        EPIPE
    );
    let mut buf = [0u8; 8];
    assert_eq!(ready(n.unix_recv(r, &mut buf, NOW)).unwrap().0, 4);
    assert!(is_pending(n.unix_recv(r, &mut buf, NOW)));
    let ready_now = n.unix_readiness(r);
    assert!(ready_now.readable && ready_now.read_closed);
    n.unix_shutdown(s, Shutdown::Write, NOW).unwrap();
    assert_eq!(
        errno(ready(n.unix_send(s, b"x", Some(&to("/r")), NOW))),
        EPIPE
    );
}

#[test]
fn a_hosts_death_closes_its_sockets_in_the_order_they_were_made() {
    claims!("net.unix.death");
    for crash in [false, true] {
        let mut n = net();
        let (mine, theirs) = n.unix_pair(A);
        let l = n.unix_listen(A, abstract_name("l"), None).unwrap();
        let p = listen(&mut n, A, "/p").unwrap();
        let on_b = listen(&mut n, B, "/p").unwrap();
        ready(n.unix_write(theirs, b"unread", NOW)).unwrap();
        notes(&mut n);
        if crash {
            n.host_crash(A, NOW);
        } else {
            n.host_kill(A, NOW);
        }
        assert_eq!(
            notes(&mut n),
            vec![
                (mine, Wakes::All),
                // Once as `mine`'s peer, once closing.
                (theirs, Wakes::All),
                (theirs, Wakes::All),
                (l, Wakes::All),
                (p, Wakes::All)
            ]
        );
        let mut buf = [0u8; 4];
        for s in [mine, theirs, l, p] {
            assert_eq!(n.kind(s), None);
            assert_eq!(errno(ready(n.unix_read(s, &mut buf, NOW))), EBADF);
            assert_eq!(errno(n.unix_local_addr(s)), EBADF);
            assert!(n.unix_readiness(s).read_closed);
        }
        assert_eq!(n.open_sockets(), 1);
        assert_eq!(n.kind(on_b), Some(crate::SocketKind::UnixListener));
        // Both names are free: nothing holds them.
        if crash {
            n.host_revive(A, NOW);
        }
        assert_eq!(errno(n.unix_connect(A, &abs("l"), NOW)), ECONNREFUSED);
        assert_eq!(errno(n.unix_connect(A, &to("/p"), NOW)), ECONNREFUSED);
        n.unix_connect(B, &to("/p"), NOW).unwrap();
        n.check_invariants();
    }
}

#[test]
fn a_closed_sockets_id_never_names_another() {
    let mut n = net();
    let d = n.unix_datagram(A);
    n.close(d, NOW);
    let again = n.unix_datagram(A);
    assert_eq!(again.index(), d.index());
    assert_ne!(again, d);
    let mut buf = [0u8; 1];
    assert_eq!(errno(ready(n.unix_recv(d, &mut buf, NOW))), EBADF);
    assert_eq!(errno(n.unix_shutdown(d, Shutdown::Both, NOW)), EBADF);
    assert_eq!(errno(n.unix_take_error(d)), EBADF);
    n.close(d, NOW);
    assert_eq!(n.kind(again), Some(crate::SocketKind::UnixDatagram));
}

#[test]
fn unix_sockets_move_to_a_rebuilt_network_under_their_ids() {
    let mut old = net();
    let gone = old.unix_datagram(A);
    old.close(gone, NOW);
    let l = listen(&mut old, A, "/s").unwrap();
    let c = old.unix_connect(A, &to("/s"), NOW).unwrap();
    ready(old.unix_write(c, b"kept", NOW)).unwrap();
    let mut new = Net::new(Config {
        latency_ns: 1,
        ..Config::default()
    });
    new.add_host(A, "10.0.0.1".parse().unwrap());
    new.add_host(B, "10.0.0.2".parse().unwrap());
    new.adopt_unix_sockets(&mut old);
    assert_eq!(old.open_sockets(), 0);
    old.check_invariants();
    let (s, _) = ready(new.unix_accept(l)).unwrap();
    let mut buf = [0u8; 4];
    assert_eq!(ready(new.unix_read(s, &mut buf, NOW)).unwrap(), 4);
    assert_eq!(
        errno(new.unix_connect(A, &to("/nothing"), NOW)),
        ECONNREFUSED
    );
    assert_eq!(errno(listen(&mut new, A, "/s")), EADDRINUSE);
    // A new socket does not take a live one's id, nor a closed one's.
    let d = new.unix_datagram(A);
    assert!(![gone, l, c, s].contains(&d));
    new.check_invariants();
}
