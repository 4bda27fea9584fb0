#![allow(unused_crate_dependencies, missing_docs)]
fn main() {}
