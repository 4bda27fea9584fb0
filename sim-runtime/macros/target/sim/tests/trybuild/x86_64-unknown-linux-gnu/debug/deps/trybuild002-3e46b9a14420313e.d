/work/main/sim-runtime/macros/target/sim/tests/trybuild/x86_64-unknown-linux-gnu/debug/deps/trybuild002-3e46b9a14420313e.d: /work/main/sim-runtime/macros/tests/ui/return_type.rs /work/main/sim-runtime/macros/tests/ui/../support/runtime.rs

/work/main/sim-runtime/macros/target/sim/tests/trybuild/x86_64-unknown-linux-gnu/debug/deps/libtrybuild002-3e46b9a14420313e.rmeta: /work/main/sim-runtime/macros/tests/ui/return_type.rs /work/main/sim-runtime/macros/tests/ui/../support/runtime.rs

/work/main/sim-runtime/macros/tests/ui/return_type.rs:
/work/main/sim-runtime/macros/tests/ui/../support/runtime.rs:
