//! `TcpStream` halves, borrowed (`split`) and owned (`into_split`):
//! `shared::stream_halves!`, plus the peeks only TCP's read halves have.

use super::shared::stream_halves;
use super::stream::TcpStream;
use crate::io::ReadBuf;
use std::io;
use std::net::SocketAddr;
use std::task::{Context, Poll};

stream_halves!(TcpStream, SocketAddr);

macro_rules! peek {
    ($t:ty, $s:ident => $stream:expr) => {
        impl $t {
            /// Receives data without removing it from the queue.
            pub async fn peek(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let $s = &*self;
                $stream.peek(buf).await
            }

            /// Polls to receive data without removing it from the queue.
            pub fn poll_peek(
                &mut self,
                cx: &mut Context<'_>,
                buf: &mut ReadBuf<'_>,
            ) -> Poll<io::Result<usize>> {
                let $s = &*self;
                $stream.poll_peek(cx, buf)
            }
        }
    };
}

peek!(ReadHalf<'_>, s => s.0);
peek!(OwnedReadHalf, s => s.inner);
