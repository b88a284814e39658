//! Heap made resident once per process, when the first vocabulary is loaded, and kept, so
//! that the first masks do not page-fault the memory they grow into (see
//! `grail_engine::prefault_heap`): `GRAIL_PREFAULT_MIB` MiB, 32 when unset, none with `0`.
//! The binding is the program here, so it reads the environment.

use std::sync::Once;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// mimalloc's `mi_option_purge_delay` (its `mi_option_e` in mimalloc.h, version 3; the
/// `libmimalloc-sys` bindings name no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

static PREFAULTED: Once = Once::new();

/// The first time it is called in this process: unless `GRAIL_PREFAULT_MIB` is 0 or
/// `MIMALLOC_PURGE_DELAY` is set, tells mimalloc to keep freed memory resident (by default
/// it returns it to the system after a second, and a program that loads a vocabulary, then
/// its model, then asks for masks would fault it all in again), then makes the heap
/// resident. A bad `GRAIL_PREFAULT_MIB` is a `ValueError`, every time.
pub(crate) fn prefault_heap_once(py: Python<'_>) -> PyResult<()> {
    let setting = std::env::var(grail_engine::PREFAULT_ENV).ok();
    let bytes =
        grail_engine::prefault_bytes_setting(setting.as_deref()).map_err(PyValueError::new_err)?;
    let keep = bytes > 0 && std::env::var_os("MIMALLOC_PURGE_DELAY").is_none();
    py.detach(|| {
        PREFAULTED.call_once(|| {
            if keep {
                // SAFETY: sets one option, read by mimalloc on its purge paths; -1 is
                // "never".
                unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
            }
            grail_engine::prefault_heap(bytes);
        })
    });
    Ok(())
}
