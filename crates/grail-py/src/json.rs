//! Python objects to and from `serde_json` values, through Python's `json` module (the
//! schemas and registries Grail reads are JSON documents; a Python dict of them is
//! serialized the way `json.dumps` does).

use pyo3::prelude::*;
use pyo3::types::PyString;
use serde_json::Value;

/// A JSON document from a Python object: a `str` is parsed as JSON text, anything else
/// is serialized with `json.dumps` first.
pub fn to_value(object: &Bound<'_, PyAny>, what: &str) -> PyResult<Value> {
    let text: String = if object.is_instance_of::<PyString>() {
        object.extract()?
    } else {
        let json = object.py().import("json")?;
        json.call_method1("dumps", (object,))?.extract()?
    };
    serde_json::from_str(&text).map_err(|error| {
        pyo3::exceptions::PyValueError::new_err(format!("{what} is not valid JSON: {error}"))
    })
}

/// A Python object (dicts, lists, strings, numbers) from a JSON value.
pub fn to_python<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    let json = py.import("json")?;
    json.call_method1("loads", (value.to_string(),))
}
