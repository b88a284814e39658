//! Python bindings of Grail: the native module `grail_gbnf._native`, wrapped by the
//! pure-Python package `grail_gbnf` (python/grail_gbnf), which adds the numpy/torch
//! helpers and the transformers integration.
//!
//! The classes are thin over the Rust API: [`grammar::Grammar`] (GBNF, JSON Schema or a
//! tool registry, compiled once, shared by any number of matchers),
//! [`vocabulary::Vocabulary`] (exact token bytes and the token trie) and
//! [`matcher::Matcher`] (tokens in, masks out, into a caller's int32 buffer with the
//! GIL released). Errors are Python exceptions carrying their diagnostics as dicts.

use pyo3::prelude::*;

mod batch;
mod errors;
mod grammar;
mod json;
mod logits;
mod matcher;
mod prefault;
mod tools;
mod vocabulary;

/// Grammar building allocates many small objects: mimalloc, as the `grail` binary (without
/// transparent huge pages: see Cargo.toml).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The native module.
#[pymodule]
#[pyo3(name = "_native")]
fn native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    module.add("GrailError", py.get_type::<errors::GrailError>())?;
    module.add("GrammarError", py.get_type::<errors::GrammarError>())?;
    module.add("SchemaError", py.get_type::<errors::SchemaError>())?;
    module.add("ToolsError", py.get_type::<errors::ToolsError>())?;
    module.add("VocabularyError", py.get_type::<errors::VocabularyError>())?;
    module.add_class::<grammar::Grammar>()?;
    module.add_class::<vocabulary::Vocabulary>()?;
    module.add_class::<matcher::Matcher>()?;
    module.add_function(wrap_pyfunction!(tools::validate_call, module)?)?;
    module.add_function(wrap_pyfunction!(batch::fill_next_token_bitmasks, module)?)?;
    module.add_function(wrap_pyfunction!(logits::mask_logits, module)?)?;
    Ok(())
}
