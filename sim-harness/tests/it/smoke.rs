//! The harness end to end: nodes started by the harness, a request across
//! the simulated network, lifecycle calls, faults named in the trace.

// In a production build the bodies of `#[sim::test]`s are not compiled, so
// their helpers are unused there.
#![cfg_attr(not(simulation), allow(dead_code, unused_imports))]

use sim_runtime::io::{AsyncReadExt, AsyncWriteExt};
use sim_runtime::net::{TcpListener, TcpStream};
use std::time::Duration;

async fn echo() {
    let l = TcpListener::bind("0.0.0.0:7").await.unwrap();
    loop {
        let (mut s, _) = l.accept().await.unwrap();
        sim_runtime::spawn(async move {
            let mut buf = [0u8; 64];
            loop {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if s.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                }
            }
        });
    }
}

async fn ask(msg: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut c = TcpStream::connect("echo:7").await?;
    c.write_all(msg).await?;
    let mut buf = vec![0u8; msg.len()];
    c.read_exact(&mut buf).await?;
    Ok(buf)
}

/// Waits until the echo service accepts connections: a fixed sleep is a
/// race (an early timer can end it before the service's first step).
async fn until_listening() {
    while sim_runtime::net::TcpStream::connect("echo:7")
        .await
        .is_err()
    {
        sim_runtime::time::sleep(Duration::from_millis(1)).await;
    }
}

#[sim::test(seeds = 0..20)]
async fn echo_answers_and_survives_a_restart() {
    let node = sim::node("echo").start(echo);
    until_listening().await;
    assert_eq!(ask(b"ping").await.unwrap(), b"ping");
    node.crash();
    let e = sim_runtime::time::timeout(Duration::from_secs(5), ask(b"x")).await;
    assert!(
        e.is_err() || e.unwrap().is_err(),
        "a crashed node does not answer"
    );
    node.restart();
    until_listening().await;
    assert_eq!(ask(b"again").await.unwrap(), b"again");
}

/// The trace names each network fault and its nodes, after the code the
/// fingerprint records (it showed only `fault code=0x…`).
#[cfg(simulation)]
#[test]
fn the_trace_names_network_faults_and_their_nodes() {
    use crate::common::{options, report};
    let r = report(
        options(
            "smoke::named_faults",
            file!(),
            sim::__private::Seeds::One(1),
        ),
        || async {
            sim::node("kv1").build();
            sim::node("kv2").build();
            sim::net::partition("kv1", "kv2");
            sim::net::clog_oneway("kv2", "kv1");
            sim::net::refuse_connects("kv1", 7001);
            let silent = sim::net::ConnFault {
                silent: true,
                ..Default::default()
            };
            sim::net::set_conn_fault(|_| true, silent);
            sim::net::heal_all();
            panic!("planted after the faults");
        },
    );
    for words in [
        "DEBUG sim::net: partition kv1 ⇄ kv2 code=0x",
        "DEBUG sim::net: clog one way kv2 → kv1 code=0x",
        "DEBUG sim::net: refuse connects kv1:7001 code=0x",
        "DEBUG sim::net: connection fault silent on 0 end(s) code=0x",
        "DEBUG sim::net: heal all code=0x",
    ] {
        assert!(r.contains(words), "no `{words}` in the trace:\n{r}");
    }
    assert!(!r.contains("sim::net: fault code="), "{r}");
}

thread_local! {
    /// A user's thread-local that each seed changes.
    static TOUCHED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// A thread-local a seed changed is fresh for the next seed on the same
/// worker, however many seeds a worker runs (a worker's thread-locals are
/// made new after each seed: sim-runtime's libc/tls.rs).
#[sim::test(seeds = 0..16)]
async fn a_thread_local_a_seed_changed_is_fresh_for_the_next_seed() {
    assert_eq!(
        TOUCHED.with(|t| t.get()),
        0,
        "seed {} saw a thread-local an earlier seed set",
        sim::seed()
    );
    TOUCHED.with(|t| t.set(1 + sim::seed()));
    sim_runtime::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(TOUCHED.with(|t| t.get()), 1 + sim::seed());
}

/// The workers whose thread holds a live [`SeedWitness`].
static WITNESSED: std::sync::Mutex<Vec<std::thread::ThreadId>> = std::sync::Mutex::new(Vec::new());

/// A thread-local value with a destructor, made by each seed.
struct SeedWitness(std::thread::ThreadId);

impl Drop for SeedWitness {
    fn drop(&mut self) {
        WITNESSED.lock().unwrap().retain(|t| *t != self.0);
    }
}

thread_local! {
    static WITNESS: std::cell::RefCell<Option<SeedWitness>> = const { std::cell::RefCell::new(None) };
}

/// A pthread key with a destructor, as C libraries keep per-thread state
/// (AWS-LC's generator, OpenSSL's error queue).
fn seed_key() -> libc::pthread_key_t {
    static KEY: std::sync::OnceLock<libc::pthread_key_t> = std::sync::OnceLock::new();
    // SAFETY: unsafe only to fit glibc's destructor type; it reads nothing.
    unsafe extern "C" fn gone(_: *mut libc::c_void) {}
    *KEY.get_or_init(|| {
        let mut k = 0;
        // SAFETY: a valid out-pointer and a plain destructor.
        assert_eq!(unsafe { libc::pthread_key_create(&mut k, Some(gone)) }, 0);
        k
    })
}

/// What a seed left in a thread-local with a destructor, or under a
/// pthread key, is destroyed before the next seed on the same worker, as
/// the end of a thread destroys it, and the next seed finds none.
#[sim::test(seeds = 0..16)]
async fn what_a_seed_left_in_thread_locals_is_destroyed_before_the_next() {
    let me = std::thread::current().id();
    let fresh = {
        let mut w = WITNESSED.lock().unwrap();
        let fresh = !w.contains(&me);
        w.push(me);
        fresh
    };
    assert!(
        fresh,
        "seed {}: an earlier seed's thread-local on this thread was never destroyed",
        sim::seed()
    );
    WITNESS.with(|w| *w.borrow_mut() = Some(SeedWitness(me)));
    let key = seed_key();
    // SAFETY: a live key.
    unsafe {
        assert!(
            libc::pthread_getspecific(key).is_null(),
            "seed {} found a pthread key's value an earlier seed set",
            sim::seed()
        );
        libc::pthread_setspecific(key, (1 + sim::seed()) as *mut libc::c_void);
    }
    sim_runtime::time::sleep(Duration::from_millis(1)).await;
}

#[cfg(simulation)]
/// The std hash keys each seed's `HashMap`s saw, by seed.
static HASH_KEYS: std::sync::Mutex<std::collections::BTreeMap<u64, u64>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());

#[cfg(simulation)]
fn hash_keys_options(seeds: sim::__private::Seeds) -> sim::__private::Options {
    sim::__private::Options {
        name: "smoke::hash_keys",
        file: file!(),
        package: env!("CARGO_PKG_NAME"),
        crate_name: env!("CARGO_CRATE_NAME"),
        manifest_dir: env!("CARGO_MANIFEST_DIR"),
        seeds,
        ..sim::__private::Options::default()
    }
}

#[cfg(simulation)]
async fn note_hash_keys() {
    use std::hash::BuildHasher;
    sim_runtime::time::sleep(Duration::from_millis(1)).await;
    let h = std::collections::hash_map::RandomState::new().hash_one(1u64);
    HASH_KEYS.lock().unwrap().insert(sim::seed(), h);
}

#[cfg(simulation)]
/// A seed's `HashMap` order (std's hash keys, drawn from the run's stream)
/// is the same whether the seed is the first its worker runs or follows
/// others on it: a worker's reset leaves nothing that changes a run's draws.
#[test]
fn a_seeds_hash_keys_do_not_depend_on_the_seeds_before_it_on_its_worker() {
    sim::__private::run(
        hash_keys_options(sim::__private::Seeds::Range(0, 6)),
        note_hash_keys,
    );
    let swept = std::mem::take(&mut *HASH_KEYS.lock().unwrap());
    for seed in 0..6 {
        // Alone: the first seed of a new worker.
        sim::__private::run(
            hash_keys_options(sim::__private::Seeds::One(seed)),
            note_hash_keys,
        );
    }
    let alone = std::mem::take(&mut *HASH_KEYS.lock().unwrap());
    assert_eq!(swept.len(), 6);
    assert_eq!(swept, alone);
}
