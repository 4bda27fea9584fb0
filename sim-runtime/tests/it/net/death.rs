//! Process death and machine death: a kill closes the node's sockets, a
//! crash makes it silent, a restart binds again and old peers get a reset.

use super::*;

#[test]
fn kill_closes_the_nodes_sockets_fin_or_rst_and_its_listener_refuses() {
    claims!("net.kill");
    run(14, async {
        let server = sim::node("server").build();
        let (tx, rx) = sim_runtime::sync::oneshot::channel();
        sim::spawn_on(server, async move {
            let l = TcpListener::bind("0.0.0.0:80").await.unwrap();
            let (quiet, _) = l.accept().await.unwrap();
            let (busy, _) = l.accept().await.unwrap();
            // Wait until `busy` has data it will never read.
            let mut b = [0u8; 1];
            busy.peek(&mut b).await.unwrap();
            tx.send(()).unwrap();
            let _keep = (l, quiet, busy);
            std::future::pending::<()>().await;
        });
        time::sleep(ms(1)).await;
        let mut quiet = TcpStream::connect("server:80").await.unwrap();
        let mut busy = TcpStream::connect("server:80").await.unwrap();
        busy.write_all(b"never read").await.unwrap();
        rx.await.unwrap();

        sim::kill(server);
        let mut b = [0u8; 8];
        assert_eq!(quiet.read(&mut b).await.unwrap(), 0, "FIN");
        assert_os(
            &expect_err(busy.read(&mut b).await),
            io::ErrorKind::ConnectionReset,
            ECONNRESET,
        );
        let t0 = sim::elapsed();
        assert_os(
            &expect_err(TcpStream::connect("server:80").await),
            io::ErrorKind::ConnectionRefused,
            ECONNREFUSED,
        );
        assert!(sim::elapsed() - t0 < ms(5), "refused in a round trip");

        // A restarted process binds its port again and serves.
        sim::revive(server);
        echo_server(server, 80);
        time::sleep(ms(1)).await;
        let mut c = TcpStream::connect("server:80").await.unwrap();
        c.write_all(b"again").await.unwrap();
        assert_eq!(read_n(&mut c, 5).await, b"again");
    });
}

#[test]
fn kill_resets_connections_queued_but_not_accepted() {
    claims!("net.kill.backlog");
    run(15, async {
        let server = sim::node("server").build();
        let _l = sim::spawn_on(server, async {
            let _l = TcpListener::bind("0.0.0.0:80").await.unwrap();
            std::future::pending::<()>().await
        });
        time::sleep(ms(1)).await;
        // Completed in the backlog; the process never accepts.
        let mut c = TcpStream::connect("server:80").await.unwrap();
        time::sleep(ms(5)).await;
        sim::kill(server);
        let mut b = [0u8; 1];
        assert_os(
            &expect_err(c.read(&mut b).await),
            io::ErrorKind::ConnectionReset,
            ECONNRESET,
        );
    });
}

#[test]
fn a_crashed_machine_goes_silent() {
    claims!("net.crash");
    run(16, async {
        simnet::configure(simnet::Config {
            retransmit_timeout_ns: 5_000_000_000,
            ..Default::default()
        });
        let server = sim::node("server").build();
        echo_server(server, 80);
        time::sleep(ms(1)).await;
        let mut reader = TcpStream::connect("server:80").await.unwrap();
        let mut writer = TcpStream::connect("server:80").await.unwrap();
        time::sleep(ms(5)).await;

        sim::crash(server);
        // No FIN, no RST: a read stays pending.
        assert!(read_stays_pending(&mut reader, secs(60)).await);
        // Writes are accepted, held, and time out.
        let t0 = sim::elapsed();
        writer.write_all(b"hello?").await.unwrap();
        let mut b = [0u8; 8];
        assert_os(
            &expect_err(writer.read(&mut b).await),
            io::ErrorKind::TimedOut,
            ETIMEDOUT,
        );
        assert_eq!(sim::elapsed() - t0, secs(5));
        // Connects go unanswered and time out.
        let t1 = sim::elapsed();
        assert_os(
            &expect_err(TcpStream::connect("server:80").await),
            io::ErrorKind::TimedOut,
            ETIMEDOUT,
        );
        assert_eq!(sim::elapsed() - t1, SYN_TIMEOUT);
        // Still nothing for the idle reader.
        assert!(read_stays_pending(&mut reader, secs(1)).await);
    });
}

#[test]
fn after_a_crash_and_restart_old_connections_get_a_reset_and_the_port_binds_again() {
    claims!("net.restart");
    run(17, async {
        let server = sim::node("server").build();
        echo_server(server, 80);
        time::sleep(ms(1)).await;
        let mut idle = TcpStream::connect("server:80").await.unwrap();
        let mut sent = TcpStream::connect("server:80").await.unwrap();
        idle.write_all(b"hi").await.unwrap();
        assert_eq!(read_n(&mut idle, 2).await, b"hi");

        sim::crash(server);
        // Bytes sent while the machine is down are held (retransmitted).
        sent.write_all(b"while down").await.unwrap();
        time::sleep(secs(10)).await;
        sim::revive(server);
        // The machine is up, the service not yet: connects are refused.
        assert_os(
            &expect_err(TcpStream::connect("server:80").await),
            io::ErrorKind::ConnectionRefused,
            ECONNREFUSED,
        );
        echo_server(server, 80);
        time::sleep(ms(1)).await;

        // The retransmission reaches a kernel that does not know the
        // connection: RST.
        let mut b = [0u8; 16];
        assert_os(
            &expect_err(sent.read(&mut b).await),
            io::ErrorKind::ConnectionReset,
            ECONNRESET,
        );
        // The idle one learns only when it next sends.
        assert!(read_stays_pending(&mut idle, secs(5)).await);
        idle.write_all(b"anyone?").await.unwrap();
        assert_os(
            &expect_err(idle.read(&mut b).await),
            io::ErrorKind::ConnectionReset,
            ECONNRESET,
        );
        // The restarted service bound port 80 again and serves.
        let mut c = TcpStream::connect("server:80").await.unwrap();
        c.write_all(b"new").await.unwrap();
        assert_eq!(read_n(&mut c, 3).await, b"new");
    });
}

#[test]
fn bytes_in_flight_to_a_crashing_machine_time_the_sender_out() {
    claims!("net.crash.in-flight");
    run(42, async {
        simnet::configure(simnet::Config {
            retransmit_timeout_ns: 5_000_000_000,
            ..Default::default()
        });
        let server = sim::node("server").build();
        let (mut c, _s) = pair(server, 80).await;
        // Still in flight (unacknowledged) when the machine dies.
        c.write_all(b"unacked").await.unwrap();
        sim::crash(server);
        let t0 = sim::elapsed();
        let mut b = [0u8; 8];
        let r = time::timeout(secs(60), c.read(&mut b)).await;
        let e = expect_err(r.expect("the sender must time out, not wait forever"));
        assert_os(&e, io::ErrorKind::TimedOut, ETIMEDOUT);
        assert_eq!(sim::elapsed() - t0, secs(5));
    });
}
