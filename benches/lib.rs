//! Benchmarks live in this folder as cargo benches.
