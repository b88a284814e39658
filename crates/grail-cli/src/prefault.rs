//! Heap made resident before masks are timed or served (`GRAIL_PREFAULT_MIB`; see
//! `grail_engine::prefault_heap`).

/// Makes `GRAIL_PREFAULT_MIB` MiB of heap resident (32 when unset, none with `0`).
pub fn prefault_heap_from_env() -> anyhow::Result<()> {
    let bytes = grail_engine::prefault_bytes_from_env().map_err(anyhow::Error::msg)?;
    grail_engine::prefault_heap(bytes);
    Ok(())
}
