//! Counts the heap allocations (and bytes asked for) of one build of the seeds' tool-call
//! grammar, after a first build that warms up what is built once per process:
//!
//!     cargo build --profile bench -p grail-tools --example alloc_count
//!     target/release/examples/alloc_count

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use grail_tools::{CallOptions, ToolChoice, ToolRegistry, tool_call_grammar};

/// The system allocator, counting allocations and reallocations.
struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);
static BYTES: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(pointer, layout) }
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(size, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.realloc(pointer, layout, size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn main() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/tools/seeds.tools.json"
    );
    let text = std::fs::read_to_string(path).expect("the seeds' tools");
    let registry = ToolRegistry::from_json_text(&text).expect("a registry");
    let options = CallOptions {
        choice: ToolChoice::Required,
        ..CallOptions::default()
    };
    tool_call_grammar(&registry, &options).expect("a grammar");
    let (allocations, bytes) = (
        ALLOCATIONS.load(Ordering::Relaxed),
        BYTES.load(Ordering::Relaxed),
    );
    let grammar = tool_call_grammar(&registry, &options).expect("a grammar");
    println!(
        "one build: {} allocations, {} bytes",
        ALLOCATIONS.load(Ordering::Relaxed) - allocations,
        BYTES.load(Ordering::Relaxed) - bytes
    );
    drop(grammar);
}
