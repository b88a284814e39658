//! Heap made resident once per process, when the first vocabulary is loaded, and kept, so
//! that the first masks do not page-fault the memory they grow into (see
//! `grail_engine::prepare_heap`): `GRAIL_PREFAULT_MIB` MiB, 32 when unset, none with `0`;
//! freed memory stays resident unless `MIMALLOC_PURGE_DELAY` is set (a program that loads
//! a vocabulary, then its model, then asks for masks would otherwise fault it all in
//! again). The binding is the program here, so it reads the environment.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Prepares the heap the first time it is called in this process; a bad
/// `GRAIL_PREFAULT_MIB` is a `ValueError`, every time.
pub(crate) fn prefault_heap_once(py: Python<'_>) -> PyResult<()> {
    let setting = std::env::var(grail_engine::PREFAULT_ENV).ok();
    let purge_delay_set = std::env::var_os("MIMALLOC_PURGE_DELAY").is_some();
    py.detach(|| grail_engine::prepare_heap_once(setting.as_deref(), purge_delay_set))
        .map_err(PyValueError::new_err)
}
