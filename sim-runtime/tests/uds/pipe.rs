//! `tokio::net::unix::pipe::pipe()`: an anonymous pipe, one way, in order,
//! with end of file once the sender is gone and `EPIPE` once the receiver
//! is. (Named pipes are not simulated: tests/it/unsupported.rs.)

use std::io::{ErrorKind, IoSlice, IoSliceMut};
use std::os::fd::AsRawFd;

use sim_runtime::io::{AsyncReadExt, AsyncWriteExt, Interest};
use sim_runtime::net::unix::pipe;

use crate::{assert_err, bounded, errno, with_dir};

#[test]
fn bytes_go_one_way_in_order_then_end_of_file() {
    with_dir(|_| async {
        let (mut tx, mut rx) = pipe::pipe().unwrap();
        assert_ne!(tx.as_raw_fd(), rx.as_raw_fd());
        let err = rx.try_read(&mut [0u8; 4]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::WouldBlock);

        tx.write_all(b"first ").await.unwrap();
        assert_eq!(
            tx.try_write_vectored(&[IoSlice::new(b"sec"), IoSlice::new(b"ond")])
                .unwrap(),
            6
        );
        bounded("readable", rx.readable()).await.unwrap();
        let ready = rx.ready(Interest::READABLE).await.unwrap();
        assert!(ready.is_readable());
        let mut buf = [0u8; 12];
        bounded("read", rx.read_exact(&mut buf)).await.unwrap();
        assert_eq!(&buf, b"first second");

        tx.write_all(b"tail").await.unwrap();
        bounded("writable", tx.writable()).await.unwrap();
        drop(tx);
        let (mut a, mut b) = ([0u8; 2], [0u8; 8]);
        bounded("readable", rx.readable()).await.unwrap();
        let n = rx
            .try_read_vectored(&mut [IoSliceMut::new(&mut a), IoSliceMut::new(&mut b)])
            .unwrap();
        assert_eq!(n, 4);
        assert_eq!((&a, &b[..2]), (b"ta", &b"il"[..]));
        assert_eq!(rx.read(&mut buf).await.unwrap(), 0);
    });
}

#[test]
fn writing_after_the_receiver_is_gone_is_a_broken_pipe() {
    with_dir(|_| async {
        let (mut tx, rx) = pipe::pipe().unwrap();
        drop(rx);
        assert_err(
            tx.write(b"anyone?").await,
            ErrorKind::BrokenPipe,
            errno::EPIPE,
        );
        assert_err(tx.try_write(b"x"), ErrorKind::BrokenPipe, errno::EPIPE);
    });
}

#[test]
fn a_receiver_reads_into_a_buffers_spare_capacity() {
    with_dir(|_| async {
        let (mut tx, rx) = pipe::pipe().unwrap();
        tx.write_all(b"spare").await.unwrap();
        bounded("readable", rx.readable()).await.unwrap();
        let mut buf = Vec::with_capacity(16);
        assert_eq!(rx.try_read_buf(&mut buf).unwrap(), 5);
        assert_eq!(buf, b"spare");
    });
}
