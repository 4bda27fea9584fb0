//! The integration tests of sim-check, as one binary.

mod brute;
mod classic;
mod random;
mod render;
mod store;
