//! Injected faults (simulation only).
