/work/main/sim-runtime/macros/target/sim/tests/trybuild/x86_64-unknown-linux-gnu/debug/deps/sim_runtime_macros_tests-61c87eee60e0a54d.d: main.rs

/work/main/sim-runtime/macros/target/sim/tests/trybuild/x86_64-unknown-linux-gnu/debug/deps/libsim_runtime_macros_tests-61c87eee60e0a54d.rmeta: main.rs

main.rs:
