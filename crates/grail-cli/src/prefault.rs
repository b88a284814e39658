//! Heap made resident before masks are timed or served, and kept: `GRAIL_PREFAULT_MIB` MiB
//! (see `grail_engine::prepare_heap`). The environment is read here, by the program, not
//! by the engine library.

/// Makes `GRAIL_PREFAULT_MIB` MiB of heap resident (32 when unset; none with `0`) and
/// keeps freed memory resident unless `MIMALLOC_PURGE_DELAY` is set (as when `grail serve`
/// waits for its first request, mimalloc would hand it back after a second).
pub fn prefault_heap_from_env() -> anyhow::Result<()> {
    let setting = std::env::var(grail_engine::PREFAULT_ENV).ok();
    let purge_delay_set = std::env::var_os("MIMALLOC_PURGE_DELAY").is_some();
    grail_engine::prepare_heap(setting.as_deref(), purge_delay_set).map_err(anyhow::Error::msg)?;
    Ok(())
}
