//! The exceptions: one base class, one per kind of input, each carrying `diagnostics`
//! (a list of dicts: `code`, `message`, and where: `line`/`column`/`span` for grammars,
//! `pointer`/`keyword` for schemas, `tool` for tool registries).

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

create_exception!(
    grail_gbnf,
    GrailError,
    PyValueError,
    "Base class of Grail's errors."
);
create_exception!(
    grail_gbnf,
    GrammarError,
    GrailError,
    "A GBNF grammar that does not parse or check; `diagnostics` says where and why."
);
create_exception!(
    grail_gbnf,
    SchemaError,
    GrailError,
    "A JSON Schema Grail refuses; `diagnostics` names the JSON pointer and keyword."
);
create_exception!(
    grail_gbnf,
    ToolsError,
    GrailError,
    "A tool registry or tool-call option Grail refuses; `diagnostics` names the tool."
);
create_exception!(
    grail_gbnf,
    VocabularyError,
    GrailError,
    "A vocabulary that cannot be read."
);

/// One diagnostic as a dict of its fields (`None` values left out).
pub fn diagnostic_dict<'py>(
    py: Python<'py>,
    fields: &[(&str, Option<String>)],
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (key, value) in fields {
        if let Some(value) = value {
            dict.set_item(key, value)?;
        }
    }
    Ok(dict)
}

/// An exception of type `E` with `message` and its `diagnostics`.
pub fn with_diagnostics<E: pyo3::PyTypeInfo>(
    py: Python<'_>,
    message: String,
    diagnostics: Vec<Bound<'_, PyDict>>,
) -> PyErr {
    let error = PyErr::new::<E, _>(message);
    let list = PyList::new(py, diagnostics);
    if let Ok(list) = list {
        let _ = error.value(py).setattr("diagnostics", list);
    }
    error
}
