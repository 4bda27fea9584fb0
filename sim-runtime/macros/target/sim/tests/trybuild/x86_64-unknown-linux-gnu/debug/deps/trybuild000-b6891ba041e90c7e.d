/work/main/sim-runtime/macros/target/sim/tests/trybuild/x86_64-unknown-linux-gnu/debug/deps/trybuild000-b6891ba041e90c7e.d: /work/main/sim-runtime/macros/tests/ui/arguments.rs /work/main/sim-runtime/macros/tests/ui/../support/runtime.rs

/work/main/sim-runtime/macros/target/sim/tests/trybuild/x86_64-unknown-linux-gnu/debug/deps/libtrybuild000-b6891ba041e90c7e.rmeta: /work/main/sim-runtime/macros/tests/ui/arguments.rs /work/main/sim-runtime/macros/tests/ui/../support/runtime.rs

/work/main/sim-runtime/macros/tests/ui/arguments.rs:
/work/main/sim-runtime/macros/tests/ui/../support/runtime.rs:
