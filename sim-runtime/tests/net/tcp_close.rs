//! How TCP connections end: half-close, full close, and reset.

use std::io;

use sim_runtime::io::{AsyncReadExt, AsyncWriteExt, Interest};
use sim_runtime::net::TcpStream;
use sim_runtime::time;

use crate::errno::{ECONNRESET, ENOTCONN, EPIPE};
use crate::{assert_os_error, bounded, expect_err, pair, pattern, run};

/// How many times a write is retried while waiting for the peer's RST to
/// come back. On real loopback the RST answers the first write's data a
/// moment later; in simulation it arrives after the link's latency.
const RST_WAIT_TRIES: usize = 500;
/// The pause between those retries (virtual time in simulation).
const RST_WAIT_PAUSE: std::time::Duration = std::time::Duration::from_millis(10);

/// Waits until `stream` has received bytes it has not read. (`readable()`
/// is not enough: Tokio allows it to be a false positive.)
async fn wait_for_unread_data(stream: &TcpStream) {
    let mut byte = [0u8; 1];
    let n = bounded("data", stream.peek(&mut byte)).await.unwrap();
    assert_eq!(n, 1);
}

#[test]
fn half_close_peer_reads_eof_and_can_still_answer() {
    run(async {
        let (mut client, mut server) = pair().await;
        client.write_all(b"request").await.unwrap();
        // poll_shutdown, through AsyncWriteExt::shutdown: sends FIN.
        client.shutdown().await.unwrap();

        let mut request = Vec::new();
        bounded("read to EOF", server.read_to_end(&mut request))
            .await
            .unwrap();
        assert_eq!(request, b"request");
        // EOF is sticky.
        let mut buf = [0u8; 8];
        assert_eq!(server.read(&mut buf).await.unwrap(), 0);

        // The half-closed client still receives.
        server.write_all(b"response").await.unwrap();
        server.shutdown().await.unwrap();
        let mut response = Vec::new();
        bounded("read answer", client.read_to_end(&mut response))
            .await
            .unwrap();
        assert_eq!(response, b"response");
    });
}

#[test]
fn readable_after_eof_is_immediate_and_reads_zero() {
    run(async {
        let (client, mut server) = pair().await;
        server.shutdown().await.unwrap();

        // Readiness at EOF: readable with the read side closed...
        let ready = bounded("ready", client.ready(Interest::READABLE))
            .await
            .unwrap();
        assert!(ready.is_readable());
        assert!(ready.is_read_closed());
        // ...and it stays so: every read returns 0, never WouldBlock, and
        // readable() does not wait.
        for _ in 0..3 {
            bounded("readable", client.readable()).await.unwrap();
            let mut buf = [0u8; 8];
            assert_eq!(client.try_read(&mut buf).unwrap(), 0);
        }
        let ready = bounded(
            "ready",
            client.ready(Interest::READABLE | Interest::WRITABLE),
        )
        .await
        .unwrap();
        assert!(ready.is_read_closed());
        assert!(ready.is_writable());
        // The other direction is still open.
        assert!(!ready.is_write_closed());
        client.try_write(b"still").unwrap();
        let mut buf = [0u8; 5];
        bounded("read", server.read_exact(&mut buf)).await.unwrap();
        assert_eq!(&buf, b"still");
    });
}

#[test]
fn write_after_own_shutdown_is_broken_pipe() {
    run(async {
        let (mut client, _server) = pair().await;
        client.shutdown().await.unwrap();
        let err = expect_err(client.write(b"late").await);
        assert_os_error(&err, io::ErrorKind::BrokenPipe, EPIPE);
    });
}

#[test]
fn write_after_peer_closed_succeeds_once_then_broken_pipe() {
    run(async {
        let (mut client, server) = pair().await;
        drop(server);
        // The FIN has arrived once the client reads EOF.
        let mut buf = [0u8; 8];
        assert_eq!(bounded("eof", client.read(&mut buf)).await.unwrap(), 0);

        // The first write is accepted: the client cannot know yet that the
        // peer is gone rather than half-closed.
        assert_eq!(client.write(b"first").await.unwrap(), 5);

        // Its data reaches a closed socket, which answers with RST; writes
        // after that fail. The RST takes a moment, so retry a bounded number
        // of times.
        let mut tries = 0;
        let err = loop {
            match client.write(b"again").await {
                Ok(n) => assert_eq!(n, 5),
                Err(e) => break e,
            }
            tries += 1;
            assert!(tries < RST_WAIT_TRIES, "writes never failed");
            time::sleep(RST_WAIT_PAUSE).await;
        };
        assert_os_error(&err, io::ErrorKind::BrokenPipe, EPIPE);
        // And it stays broken; reads still see the orderly EOF, and the
        // reset socket no longer has a peer.
        let err = expect_err(client.write(b"more").await);
        assert_os_error(&err, io::ErrorKind::BrokenPipe, EPIPE);
        assert_eq!(client.read(&mut buf).await.unwrap(), 0);
        let err = expect_err(client.peer_addr());
        assert_os_error(&err, io::ErrorKind::NotConnected, ENOTCONN);
        assert!(client.local_addr().is_ok());
    });
}

#[test]
fn close_with_unread_data_resets_peer_after_what_arrived() {
    run(async {
        let (mut client, mut server) = pair().await;
        server.write_all(b"goodbye").await.unwrap();
        client.write_all(b"never read").await.unwrap();
        // Wait until the client's bytes are in the server's receive buffer,
        // unread, then close: the kernel sends RST instead of FIN.
        wait_for_unread_data(&server).await;
        drop(server);

        // The client first reads everything that arrived before the RST...
        let mut buf = [0u8; 7];
        bounded("read", client.read_exact(&mut buf)).await.unwrap();
        assert_eq!(&buf, b"goodbye");
        // ...then the reset.
        let err = expect_err(bounded("reset", client.read(&mut buf)).await);
        assert_os_error(&err, io::ErrorKind::ConnectionReset, ECONNRESET);
        assert_reset_reported(&mut client).await;
    });
}

/// Writes the test pattern with `try_write` until the kernel takes no more
/// (the peer reads nothing); returns how many bytes it took.
fn fill(stream: &TcpStream) -> usize {
    /// Far above what any default socket buffers hold.
    const BUFFERED_MAX: usize = 64 << 20;
    const CHUNK: usize = 64 << 10;
    let mut total = 0;
    loop {
        match stream.try_write(&pattern(total, CHUNK)) {
            Ok(n) => {
                total += n;
                assert!(total < BUFFERED_MAX, "{total} bytes accepted");
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return total,
            Err(e) => panic!("try_write: {e:?}"),
        }
    }
}

/// Reads until the stream ends: the bytes, and the error that ended it
/// (`None` for EOF).
async fn read_to_the_end(stream: &mut TcpStream) -> (Vec<u8>, Option<io::Error>) {
    let mut got = Vec::new();
    let mut buf = vec![0u8; 16 << 10];
    loop {
        match bounded("read", stream.read(&mut buf)).await {
            Ok(0) => return (got, None),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => return (got, Some(e)),
        }
    }
}

#[test]
fn close_with_unread_data_discards_what_the_peer_had_not_taken() {
    claims!("net.close.reset-discards");
    run(async {
        let (mut client, server) = pair().await;
        client.write_all(b"never read").await.unwrap();
        wait_for_unread_data(&server).await;
        // The server's bytes fill the client's receive buffer, then its own
        // send queue; then it closes with the client's bytes unread.
        let written = fill(&server);
        drop(server);

        // The reset discards the server's send queue: the client reads what
        // its receive buffer took, the stream's start, then the reset once.
        let (got, err) = read_to_the_end(&mut client).await;
        let err = err.expect("the stream ends with a reset, not EOF");
        assert_os_error(&err, io::ErrorKind::ConnectionReset, ECONNRESET);
        assert!(!got.is_empty(), "the receive buffer's bytes arrive");
        assert!(
            got.len() < written,
            "{} of {written} bytes arrived: the send queue was not discarded",
            got.len()
        );
        assert!(got == pattern(0, got.len()), "a prefix, in order");
        assert_reset_reported(&mut client).await;
    });
}

#[test]
fn close_with_nothing_unread_delivers_every_byte_then_eof() {
    run(async {
        let (mut client, server) = pair().await;
        let written = fill(&server);
        drop(server);
        let (got, err) = read_to_the_end(&mut client).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(got.len(), written);
        assert!(got == pattern(0, written));
    });
}

#[test]
fn shutdown_with_unread_data_delivers_every_byte_then_eof() {
    run(async {
        let (mut client, mut server) = pair().await;
        client.write_all(b"never read").await.unwrap();
        wait_for_unread_data(&server).await;
        let written = fill(&server);
        server.shutdown().await.unwrap();
        let (got, err) = read_to_the_end(&mut client).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(got.len(), written);
        assert!(got == pattern(0, written));
        drop(server);
    });
}

/// After a reset has been reported once: reads see EOF, writes a broken
/// pipe, and the socket has no peer.
async fn assert_reset_reported(stream: &mut TcpStream) {
    let mut buf = [0u8; 8];
    assert_eq!(stream.read(&mut buf).await.unwrap(), 0);
    assert_eq!(stream.read(&mut buf).await.unwrap(), 0);
    let err = expect_err(stream.write(b"x").await);
    assert_os_error(&err, io::ErrorKind::BrokenPipe, EPIPE);
    let err = expect_err(stream.peer_addr());
    assert_os_error(&err, io::ErrorKind::NotConnected, ENOTCONN);
}

#[test]
fn write_after_reset_reports_the_reset_then_broken_pipe() {
    run(async {
        let (mut client, server) = pair().await;
        client.write_all(b"never read").await.unwrap();
        wait_for_unread_data(&server).await;
        drop(server);

        // The RST closes both directions, and readiness shows it before any
        // call has reported the error.
        let mut tries = 0;
        loop {
            let ready = bounded(
                "ready",
                client.ready(Interest::READABLE | Interest::WRITABLE),
            )
            .await
            .unwrap();
            if ready.is_write_closed() {
                assert!(ready.is_read_closed());
                break;
            }
            tries += 1;
            assert!(tries < RST_WAIT_TRIES, "the reset never arrived");
            time::sleep(RST_WAIT_PAUSE).await;
        }
        // The error is reported once, to whichever call comes first, here a
        // write.
        let err = expect_err(client.write(b"x").await);
        assert_os_error(&err, io::ErrorKind::ConnectionReset, ECONNRESET);
        let err = expect_err(client.write(b"x").await);
        assert_os_error(&err, io::ErrorKind::BrokenPipe, EPIPE);
        let mut buf = [0u8; 8];
        assert_eq!(client.read(&mut buf).await.unwrap(), 0);
    });
}

#[test]
fn zero_linger_close_resets_peer() {
    run(async {
        let (mut client, server) = pair().await;
        server.set_zero_linger().unwrap();
        drop(server);

        let mut buf = [0u8; 8];
        let err = expect_err(bounded("reset", client.read(&mut buf)).await);
        assert_os_error(&err, io::ErrorKind::ConnectionReset, ECONNRESET);
        assert_reset_reported(&mut client).await;
    });
}
