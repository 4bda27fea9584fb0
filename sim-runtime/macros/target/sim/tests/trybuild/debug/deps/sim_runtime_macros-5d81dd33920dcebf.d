/work/main/sim-runtime/macros/target/sim/tests/trybuild/debug/deps/sim_runtime_macros-5d81dd33920dcebf.d: /work/main/sim-runtime/macros/src/lib.rs /work/main/sim-runtime/macros/src/entry.rs

/work/main/sim-runtime/macros/target/sim/tests/trybuild/debug/deps/libsim_runtime_macros-5d81dd33920dcebf.so: /work/main/sim-runtime/macros/src/lib.rs /work/main/sim-runtime/macros/src/entry.rs

/work/main/sim-runtime/macros/src/lib.rs:
/work/main/sim-runtime/macros/src/entry.rs:
