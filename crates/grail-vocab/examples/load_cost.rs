//! What loading a vocabulary costs: wall time and memory of `load` and of the index built
//! on it (peak and resident, from /proc/self/status).
//!
//!     cargo run --release -p grail-vocab --example load_cost -- PATH [PATH...]

use std::path::Path;
use std::time::Instant;

use grail_vocab::{VocabularyIndex, load};

/// A field of /proc/self/status in KiB (0 where it cannot be read).
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|value| value.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or(0)
}

fn main() {
    for path in std::env::args().skip(1) {
        let rss_start = status_kib("VmRSS");
        let started = Instant::now();
        let vocabulary = match load(Path::new(&path)) {
            Ok(vocabulary) => vocabulary,
            Err(error) => {
                eprintln!("{path}: {error}");
                std::process::exit(1);
            }
        };
        let loaded = started.elapsed();
        let peak_load = status_kib("VmHWM");
        let rss_loaded = status_kib("VmRSS");
        let tokens = vocabulary.len();
        let index = VocabularyIndex::new(vocabulary);
        let indexed = started.elapsed();
        println!(
            "{path}: {tokens} tokens; load {:.1} ms, +index {:.1} ms; RSS {} -> {} KiB loaded -> {} KiB indexed; peak {} KiB while loading, {} KiB in all",
            loaded.as_secs_f64() * 1e3,
            (indexed - loaded).as_secs_f64() * 1e3,
            rss_start,
            rss_loaded,
            status_kib("VmRSS"),
            peak_load,
            status_kib("VmHWM"),
        );
        drop(index);
    }
}
