//! The same seed gives the same network run; another seed another.

use super::*;

/// A small two-node echo workload with jitter: its fingerprint and the
/// virtual times at which the replies arrived.
fn echo_workload(seed: u64) -> (u64, Vec<Duration>) {
    run(seed, async {
        let me = sim::current_node();
        let server = sim::node("server").build();
        simnet::set_latency(me, server, ms(2), ms(3));
        simnet::set_latency(server, me, ms(2), ms(3));
        echo_server(server, 80);
        time::sleep(ms(1)).await;
        let mut c = TcpStream::connect("server:80").await.unwrap();
        let mut times = Vec::new();
        for i in 0..20 {
            c.write_all(&pattern(i * 10, 10)).await.unwrap();
            assert_eq!(read_n(&mut c, 10).await, pattern(i * 10, 10));
            times.push(sim::elapsed());
        }
        (sim::fingerprint(), times)
    })
}

#[test]
fn the_same_seed_gives_the_same_run_and_another_seed_another() {
    let a = echo_workload(42);
    let b = echo_workload(42);
    assert_eq!(a, b);
    let c = echo_workload(43);
    assert_ne!(a.1, c.1, "jitter draws follow the seed");
    assert_ne!(a.0, c.0, "and so does the fingerprint");
}
