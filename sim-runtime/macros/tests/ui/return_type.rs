// The default crate path `::tokio` reaches the stand-in runtime.
extern crate self as tokio;
#[path = "../support/runtime.rs"]
pub mod __private;

// A body whose type is not the declared one: the error points at the last
// statement, not at the attribute. (`#[tokio::main]` rather than `test`,
// because the cases are only type-checked, and `#[test]` functions are not
// compiled outside `cargo test`.)
#[sim_runtime_macros::main]
async fn returns_a_str() -> u32 {
    let _ = 1;
    "one"
}

#[sim_runtime_macros::main(flavor = "current_thread")]
async fn ends_in_a_semicolon() -> Result<(), std::fmt::Error> {
    Err(std::fmt::Error)?;
}

fn main() {}
