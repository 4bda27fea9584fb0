//! For `LIBC_CALLS.md`: one store's open, commit, read and close on a real
//! directory, so `ltrace -f -c` and `strace -f` can list the C library
//! functions and system calls it makes.
//!
//! ```sh
//! cargo build -p stores --example probe
//! ltrace -f -c target/debug/examples/probe redb /tmp/probe-redb
//! strace -f -c target/debug/examples/probe sqlite /tmp/probe-sqlite
//! ```
//!
//! The store (`redb`, `sqlite`, `sqlite-wal`, `lsm`, `fjall`, `std`) is the
//! first argument, the directory the second. Plain `main` on the calling
//! thread: no runtime, no threads of its own (fjall starts its workers), so
//! the traces show the store alone.

use std::path::Path;
use stores::{state_file, Durability, Fjall, Lsm, Redb, Sqlite, Store};

fn cycle<S: Store>(dir: &Path) {
    let s = S::open(dir).unwrap();
    s.put("k1", "durable", Durability::Durable).unwrap();
    s.put("k2", "volatile", Durability::Volatile).unwrap();
    assert_eq!(s.get("k1").unwrap().as_deref(), Some("durable"));
    assert_eq!(s.get("k2").unwrap().as_deref(), Some("volatile"));
    drop(s);
    let s = S::open(dir).unwrap();
    assert_eq!(s.get("k1").unwrap().as_deref(), Some("durable"));
}

fn main() {
    let mut args = std::env::args().skip(1);
    let which = args
        .next()
        .expect("usage: probe redb|sqlite|sqlite-wal|lsm|fjall|std DIR");
    let dir = args.next().expect("usage: probe STORE DIR");
    let dir = Path::new(&dir);
    match which.as_str() {
        "redb" => cycle::<Redb>(dir),
        "sqlite" => cycle::<Sqlite>(dir),
        "sqlite-wal" => cycle::<stores::sqlite_store::SqliteWal>(dir),
        "lsm" => cycle::<Lsm>(dir),
        "fjall" => cycle::<Fjall>(dir),
        "std" => {
            let rename = state_file::Rename::WithDirSync;
            state_file::prepare(dir, rename).unwrap();
            state_file::save(dir, b"one", rename).unwrap();
            state_file::save(dir, b"two", rename).unwrap();
            assert_eq!(state_file::load(dir).unwrap().as_deref(), Some(&b"two"[..]));
            for e in std::fs::read_dir(dir).unwrap() {
                let e = e.unwrap();
                let _ = e.metadata().unwrap().len();
            }
            std::fs::remove_file(state_file::state_path(dir)).unwrap();
        }
        other => panic!("unknown store {other:?}"),
    }
}
