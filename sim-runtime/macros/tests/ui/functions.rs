// The default crate path `::tokio` reaches the stand-in runtime.
extern crate self as tokio;
#[path = "../support/runtime.rs"]
pub mod __private;

#[sim_runtime_macros::test]
fn not_async() {}

#[sim_runtime_macros::test]
#[test]
async fn second_test_attribute() {}

#[sim_runtime_macros::main]
async fn main(port: u16) {
    let _ = port;
}
