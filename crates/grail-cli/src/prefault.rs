//! Heap made resident before masks are timed or served: `GRAIL_PREFAULT_MIB` MiB (see
//! `grail_engine::prefault_heap`). The environment is read here, by the program, not by
//! the engine library.

use anyhow::bail;

/// Makes `GRAIL_PREFAULT_MIB` MiB of heap resident (32 when unset, none with `0`).
pub fn prefault_heap_from_env() -> anyhow::Result<()> {
    grail_engine::prefault_heap(prefault_bytes_from_env()?);
    Ok(())
}

/// The bytes `GRAIL_PREFAULT_MIB` asks for (a whole number of MiB from 0 to 16384), or
/// [`grail_engine::DEFAULT_PREFAULT_BYTES`] when it is unset.
fn prefault_bytes_from_env() -> anyhow::Result<usize> {
    match std::env::var("GRAIL_PREFAULT_MIB") {
        Err(_) => Ok(grail_engine::DEFAULT_PREFAULT_BYTES),
        Ok(text) => match text.trim().parse::<usize>() {
            Ok(mib) if mib <= 1 << 14 => Ok(mib << 20),
            _ => bail!(
                "GRAIL_PREFAULT_MIB must be a whole number of MiB from 0 to 16384, not `{text}`"
            ),
        },
    }
}
