//! The benchmarks of `grammar.rs` with mimalloc as the allocator, as the `grail` binary
//! and `grail serve` run them:
//!
//!     cargo bench -p grail-tools --bench grammar_mimalloc

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

include!("grammar.rs");
