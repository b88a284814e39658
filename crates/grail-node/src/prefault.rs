//! Heap made resident once per process, when the first vocabulary is loaded, and kept, so
//! that the first masks do not page-fault the memory they grow into (see
//! `grail_engine::prepare_heap`): `GRAIL_PREFAULT_MIB` MiB, 32 when unset, none with `0`;
//! freed memory stays resident unless `MIMALLOC_PURGE_DELAY` is set. The addon is the
//! program here, so it reads the environment.

/// Prepares the heap the first time it is called in this process; a bad
/// `GRAIL_PREFAULT_MIB` is an error, every time.
pub(crate) fn prefault_heap_once() -> napi::Result<()> {
    let setting = std::env::var(grail_engine::PREFAULT_ENV).ok();
    let purge_delay_set = std::env::var_os("MIMALLOC_PURGE_DELAY").is_some();
    grail_engine::prepare_heap_once(setting.as_deref(), purge_delay_set)
        .map_err(|message| napi::Error::new(napi::Status::InvalidArg, message))
}
