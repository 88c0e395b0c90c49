//! Benchmarks live in this folder as cargo benches. They run on the allocator the `weaver`
//! server runs on (mimalloc), so that a figure here is what the server spends; each bench
//! names this crate (`use weaver_benches as _;`), which links the allocator in.

// The `weaver` binary's choice (see `elsa-ai-server/src/bin/weaver.rs`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
