//! What crossed the wire: a digest of every byte a server's connections
//! read and wrote (the TLS records, before decryption), to tell whether two
//! runs of a seed sent the same bytes.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// FNV-1a digests of the bytes read and of the bytes written, each in
/// order (so independent of how they were split into calls), and counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Digest {
    pub read: u64,
    pub written: u64,
    pub read_len: u64,
    pub written_len: u64,
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

fn fold(h: &mut u64, bytes: &[u8]) {
    if *h == 0 {
        *h = FNV_OFFSET;
    }
    for &b in bytes {
        *h ^= u64::from(b);
        *h = h.wrapping_mul(FNV_PRIME);
    }
}

/// A shared digest that taps connections.
#[derive(Clone, Debug, Default)]
pub struct Tap(Arc<Mutex<Digest>>);

impl Tap {
    /// The digest so far.
    pub fn digest(&self) -> Digest {
        *self.0.lock().unwrap()
    }

    /// `io`, with every byte it reads or writes folded into the digest.
    pub fn wrap<S>(&self, io: S) -> Tapped<S> {
        Tapped {
            io,
            tap: self.clone(),
        }
    }
}

/// A connection whose bytes a [`Tap`] sees.
pub struct Tapped<S> {
    io: S,
    tap: Tap,
}

impl<S: AsyncRead + Unpin> AsyncRead for Tapped<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.io).poll_read(cx, buf);
        let new = &buf.filled()[before..];
        if !new.is_empty() {
            let mut d = self.tap.0.lock().unwrap();
            fold(&mut d.read, new);
            d.read_len += new.len() as u64;
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Tapped<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write(cx, data);
        if let Poll::Ready(Ok(n)) = r {
            let mut d = self.tap.0.lock().unwrap();
            fold(&mut d.written, &data[..n]);
            d.written_len += n as u64;
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
