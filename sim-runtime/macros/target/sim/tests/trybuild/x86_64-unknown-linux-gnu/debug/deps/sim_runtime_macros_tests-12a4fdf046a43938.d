/work/main/sim-runtime/macros/target/sim/tests/trybuild/x86_64-unknown-linux-gnu/debug/deps/sim_runtime_macros_tests-12a4fdf046a43938.d: main.rs

/work/main/sim-runtime/macros/target/sim/tests/trybuild/x86_64-unknown-linux-gnu/debug/deps/libsim_runtime_macros_tests-12a4fdf046a43938.rmeta: main.rs

main.rs:
