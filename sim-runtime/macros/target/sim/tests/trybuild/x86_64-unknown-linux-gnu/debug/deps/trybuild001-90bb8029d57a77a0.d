/work/main/sim-runtime/macros/target/sim/tests/trybuild/x86_64-unknown-linux-gnu/debug/deps/trybuild001-90bb8029d57a77a0.d: /work/main/sim-runtime/macros/tests/ui/functions.rs /work/main/sim-runtime/macros/tests/ui/../support/runtime.rs

/work/main/sim-runtime/macros/target/sim/tests/trybuild/x86_64-unknown-linux-gnu/debug/deps/libtrybuild001-90bb8029d57a77a0.rmeta: /work/main/sim-runtime/macros/tests/ui/functions.rs /work/main/sim-runtime/macros/tests/ui/../support/runtime.rs

/work/main/sim-runtime/macros/tests/ui/functions.rs:
/work/main/sim-runtime/macros/tests/ui/../support/runtime.rs:
