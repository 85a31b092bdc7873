//! Benchmarks behind `fleet bench` and `benches/`.
