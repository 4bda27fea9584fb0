// The default crate path `::tokio` reaches the stand-in runtime.
extern crate self as tokio;
#[path = "../support/runtime.rs"]
pub mod __private;

#[sim_runtime_macros::test(worker_threads = 2)]
async fn worker_threads_without_multi_thread() {}

#[sim_runtime_macros::test(flavor = "multi_threaded")]
async fn no_such_flavor() {}

#[sim_runtime_macros::test(seed = 7)]
async fn unknown_argument() {}

#[sim_runtime_macros::test(start_paused = true, start_paused = false)]
async fn given_twice() {}

#[sim_runtime_macros::main(start_paused = true)]
async fn main() {}
