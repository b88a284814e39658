//! Making heap memory resident before the first masks need it.
//!
//! A matcher's first steps over a grammar learn states, walks and masks, and the memory
//! they grow into is new to the process: every page of it is a page fault, and where the
//! allocator asks for transparent huge pages (mimalloc does) a fault can stall for
//! milliseconds while the kernel finds and clears a 2 MiB page. On this project's
//! machine that was most of a cold step's time on open-object schemas (Kubernetes
//! kb_1077: p99 4.6 ms in two runs of five, 0.27 ms otherwise, 0.16 ms with 32 MiB made
//! resident first; docs/performance.md). Touching that much heap once at start-up and
//! freeing it leaves it resident in the allocator, so the first masks reuse it.
//! How much, if any, is the program's choice: it calls [`prefault_heap`] after loading a
//! vocabulary (`grail bench`, `grail generate` and `grail serve` do, and the Python and
//! Node bindings at their first vocabulary, sized by the `GRAIL_PREFAULT_MIB` environment
//! variable: [`prefault_bytes_setting`]). The memory must also stay resident once freed:
//! mimalloc returns freed pages to the system after a second by default, so those
//! programs turn that off (a Python process that loads the vocabulary, then llguidance's
//! tokenizer, then asks for masks faulted 474 pages in its first json.gbnf document with
//! Llama 3 without it, 28 with it; docs/performance.md).

/// Bytes a program may make resident by default: 32 MiB (on the machine measured, 8 MiB
/// did not help and 64 MiB did no better than 32). The `grail` binary uses it when
/// `GRAIL_PREFAULT_MIB` is not set.
pub const DEFAULT_PREFAULT_BYTES: usize = 32 << 20;

/// The name of the environment variable programs read the amount from (whole MiB).
pub const PREFAULT_ENV: &str = "GRAIL_PREFAULT_MIB";

/// The most [`PREFAULT_ENV`] may ask for, in MiB.
const MAX_PREFAULT_MIB: usize = 1 << 14;

/// The bytes a setting of [`PREFAULT_ENV`] asks for: `None` (unset) is
/// [`DEFAULT_PREFAULT_BYTES`], else a whole number of MiB from 0 to 16384; anything else is
/// an error that says so. The library never reads the environment itself: programs pass
/// what they read.
pub fn prefault_bytes_setting(setting: Option<&str>) -> Result<usize, String> {
    match setting {
        None => Ok(DEFAULT_PREFAULT_BYTES),
        Some(text) => match text.trim().parse::<usize>() {
            Ok(mib) if mib <= MAX_PREFAULT_MIB => Ok(mib << 20),
            _ => Err(format!(
                "{PREFAULT_ENV} must be a whole number of MiB from 0 to {MAX_PREFAULT_MIB}, not `{text}`"
            )),
        },
    }
}

/// What a program does before its first masks: makes the heap resident that `setting`
/// (its `GRAIL_PREFAULT_MIB`, see [`prefault_bytes_setting`]) asks for and, when that is
/// some and the program's environment does not set `MIMALLOC_PURGE_DELAY`
/// (`purge_delay_set`), with the `mimalloc` feature, tells mimalloc to keep freed memory
/// resident: by default it hands freed pages back to the system after a second, and the
/// prefaulted memory (and what earlier grammars freed) would be faulted in again by the
/// next masks. Returns the bytes made resident, or the setting's error.
pub fn prepare_heap(setting: Option<&str>, purge_delay_set: bool) -> Result<usize, String> {
    Ok(prepare(prefault_bytes_setting(setting)?, purge_delay_set))
}

/// [`prepare_heap`] once per process, for programs that may get there many times (the
/// bindings, at every vocabulary): the setting is checked at every call, its error
/// returned every time; the heap is prepared at the first call whose setting is valid.
pub fn prepare_heap_once(setting: Option<&str>, purge_delay_set: bool) -> Result<(), String> {
    static PREPARED: std::sync::Once = std::sync::Once::new();
    let bytes = prefault_bytes_setting(setting)?;
    PREPARED.call_once(|| {
        prepare(bytes, purge_delay_set);
    });
    Ok(())
}

/// Keeps freed memory (see [`prepare_heap`]) and makes `bytes` of heap resident.
fn prepare(bytes: usize, purge_delay_set: bool) -> usize {
    if bytes > 0 && !purge_delay_set {
        keep_freed_memory();
    }
    prefault_heap(bytes)
}

/// mimalloc's `mi_option_purge_delay` (its `mi_option_e` in mimalloc.h, version 3; the
/// `libmimalloc-sys` bindings name no constant for it).
#[cfg(feature = "mimalloc")]
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Sets mimalloc's purge delay to never.
#[cfg(feature = "mimalloc")]
fn keep_freed_memory() {
    // SAFETY: sets one option, which mimalloc reads on its purge paths; -1 is "never".
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
}

/// Without mimalloc as the allocator there is nothing to tell.
#[cfg(not(feature = "mimalloc"))]
fn keep_freed_memory() {}

/// Blocks of this size are allocated: small enough that the allocator keeps them in the
/// pages it reuses for small objects once freed (one huge allocation would go back to the
/// operating system when freed).
const BLOCK_BYTES: usize = 64 << 10;

/// The smallest page size of the platforms Grail runs on.
const PAGE_BYTES: usize = 4 << 10;

/// Allocates `bytes` of heap in small blocks, writes to every page of them, and frees
/// them, so that the allocator holds that much resident memory for what comes next.
/// Returns the number of bytes touched (`bytes` rounded up to whole blocks).
pub fn prefault_heap(bytes: usize) -> usize {
    let blocks = bytes.div_ceil(BLOCK_BYTES);
    let mut held: Vec<Vec<u8>> = Vec::with_capacity(blocks);
    for _ in 0..blocks {
        let mut block = vec![0u8; BLOCK_BYTES];
        for page in block.iter_mut().step_by(PAGE_BYTES) {
            *page = 1;
        }
        held.push(std::hint::black_box(block));
    }
    blocks * BLOCK_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touches_whole_blocks_covering_the_request() {
        assert_eq!(prefault_heap(0), 0);
        assert_eq!(prefault_heap(1), BLOCK_BYTES);
        assert_eq!(prefault_heap(BLOCK_BYTES * 3), BLOCK_BYTES * 3);
        assert_eq!(prefault_heap(BLOCK_BYTES * 3 + 1), BLOCK_BYTES * 4);
    }

    /// The option number is mimalloc's purge delay: its default there is 1000 ms, a value
    /// no neighbouring option has (a mimalloc update that renumbers options fails here).
    #[cfg(feature = "mimalloc")]
    #[test]
    fn the_option_set_is_mimallocs_purge_delay() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            eprintln!("skipped: MIMALLOC_PURGE_DELAY is set in the environment");
            return;
        }
        // SAFETY: reads one option.
        let delay = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        assert_eq!(delay, 1000);
    }

    #[test]
    fn prepared_once_but_a_bad_setting_is_refused_at_every_call() {
        assert!(prepare_heap_once(Some("lots"), true).is_err());
        assert_eq!(prepare_heap_once(Some("0"), true), Ok(()));
        assert!(prepare_heap_once(Some("lots"), true).is_err());
    }

    #[test]
    fn the_setting_is_whole_mib_up_to_the_maximum() {
        assert_eq!(prefault_bytes_setting(None), Ok(DEFAULT_PREFAULT_BYTES));
        assert_eq!(prefault_bytes_setting(Some("0")), Ok(0));
        assert_eq!(prefault_bytes_setting(Some(" 8 ")), Ok(8 << 20));
        assert_eq!(prefault_bytes_setting(Some("16384")), Ok(16384 << 20));
        for bad in ["16385", "-1", "1.5", "lots", ""] {
            let error = prefault_bytes_setting(Some(bad)).unwrap_err();
            assert!(
                error.contains(PREFAULT_ENV) && error.contains(bad),
                "{error}"
            );
        }
    }
}
