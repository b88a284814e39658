//! Counts the heap allocations of one tool-call grammar build over the seeds' tools (the
//! build `--bench grammar` times), and with `--sites` where they come from: the two
//! innermost source places in Grail's crates, most frequent first. Source places need
//! debug info, so run it in the bench profile:
//!
//!     cargo run --profile bench -p grail-tools --example count_allocations -- --sites
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The system allocator, counting (and, while `TRACE` is set, recording where).
struct Counting;
static COUNT: AtomicUsize = AtomicUsize::new(0);
static BYTES: AtomicUsize = AtomicUsize::new(0);
static TRACE: AtomicBool = AtomicBool::new(false);
static SITES: Mutex<Option<HashMap<String, usize>>> = Mutex::new(None);
thread_local! { static INSIDE: Cell<bool> = const { Cell::new(false) }; }

/// Counts one allocation of `bytes` (not those made while recording another) and records
/// its place when tracing.
fn record(bytes: usize) {
    if INSIDE.with(Cell::get) {
        return;
    }
    COUNT.fetch_add(1, Ordering::Relaxed);
    BYTES.fetch_add(bytes, Ordering::Relaxed);
    if !TRACE.load(Ordering::Relaxed) {
        return;
    }
    INSIDE.with(|inside| inside.set(true));
    let trace = std::backtrace::Backtrace::force_capture().to_string();
    let frames: Vec<&str> = trace
        .lines()
        .map(str::trim)
        .filter_map(|line| line.strip_prefix("at "))
        .filter(|place| place.contains("/crates/grail-") && !place.contains("count_allocations"))
        .map(|place| {
            place
                .rsplit_once("/crates/")
                .map_or(place, |(_, tail)| tail)
        })
        .take(2)
        .collect();
    let key = frames.join(" < ");
    *SITES
        .lock()
        .unwrap()
        .get_or_insert_with(HashMap::new)
        .entry(key)
        .or_default() += 1;
    INSIDE.with(|inside| inside.set(false));
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        record(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        record(new);
        unsafe { System.realloc(ptr, layout, new) }
    }
}
#[global_allocator]
static A: Counting = Counting;

fn main() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/tools/seeds.tools.json"
    );
    let registry =
        grail_tools::ToolRegistry::from_json_text(&std::fs::read_to_string(path).unwrap()).unwrap();
    let options = grail_tools::CallOptions {
        choice: grail_tools::ToolChoice::Required,
        ..Default::default()
    };
    let grammar = grail_tools::tool_call_grammar(&registry, &options).unwrap();
    drop(grammar);
    let sites = std::env::args().any(|arg| arg == "--sites");
    let (c0, b0) = (COUNT.load(Ordering::Relaxed), BYTES.load(Ordering::Relaxed));
    TRACE.store(sites, Ordering::Relaxed);
    let grammar = grail_tools::tool_call_grammar(&registry, &options).unwrap();
    TRACE.store(false, Ordering::Relaxed);
    let (c1, b1) = (COUNT.load(Ordering::Relaxed), BYTES.load(Ordering::Relaxed));
    println!(
        "allocations {} bytes {} gbnf lines {}",
        c1 - c0,
        b1 - b0,
        grammar.gbnf().lines().count()
    );
    if let Some(sites) = SITES.lock().unwrap().take() {
        let mut sites: Vec<_> = sites.into_iter().collect();
        sites.sort_by_key(|site| std::cmp::Reverse(site.1));
        for (site, count) in sites.iter().take(40) {
            println!("{count:6} {site}");
        }
    }
}
