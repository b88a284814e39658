//! Heap made resident before masks are timed or served, and kept: `GRAIL_PREFAULT_MIB` MiB
//! (see `grail_engine::prefault_heap`). The environment is read here, by the program, not
//! by the engine library.

/// mimalloc's `mi_option_purge_delay` (its `mi_option_e` in mimalloc.h, version 3; the
/// `libmimalloc-sys` bindings name no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Makes `GRAIL_PREFAULT_MIB` MiB of heap resident (32 when unset; none with `0`) and,
/// unless that is 0 or `MIMALLOC_PURGE_DELAY` says otherwise, tells mimalloc to keep
/// freed memory resident: by default it returns freed pages to the system after a second,
/// and the prefaulted memory (and what earlier grammars freed) would be page-faulted in
/// again by the next masks, as when `grail serve` waits for its first request.
pub fn prefault_heap_from_env() -> anyhow::Result<()> {
    let setting = std::env::var(grail_engine::PREFAULT_ENV).ok();
    let bytes =
        grail_engine::prefault_bytes_setting(setting.as_deref()).map_err(anyhow::Error::msg)?;
    if bytes > 0 && std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets one option, read by mimalloc on its purge paths; -1 is "never".
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
    }
    grail_engine::prefault_heap(bytes);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The option number is mimalloc's purge delay: its default there is 1000 ms, a value
    /// no neighbouring option has (a mimalloc update that renumbers options fails here).
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
}
