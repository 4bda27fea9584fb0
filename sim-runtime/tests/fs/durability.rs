//! Crash and kill semantics (simulation only).
