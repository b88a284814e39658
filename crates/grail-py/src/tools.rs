//! `validate_call`: a model's output checked against a tool registry.

use grail_tools::validate_output;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::grammar::registry_and_options;
use crate::json::to_python;

/// Checks a model's `output` against `tools` in wire format `wire` with `choice`
/// (options as `Grammar.from_tools`).
///
/// Returns a dict: `valid` (bool); when valid, `tool_calls` (OpenAI's shape, arguments as
/// a JSON string), `content` (text before or instead of calls) and `reasoning`; when
/// not, `feedback` (the message to give the model back: "missing required arguments
/// ['city'] for tool 'get_weather'") and `faults` (code, tool, pointer, message).
#[pyfunction]
#[pyo3(signature = (tools, output, *, wire = "openai", choice = "auto", parallel = None, think = None))]
pub fn validate_call<'py>(
    py: Python<'py>,
    tools: &Bound<'py, PyAny>,
    output: &str,
    wire: &str,
    choice: &str,
    parallel: Option<&Bound<'py, PyAny>>,
    think: Option<&str>,
) -> PyResult<Bound<'py, PyDict>> {
    let (registry, options) = registry_and_options(tools, wire, choice, parallel, think)?;
    let result = PyDict::new(py);
    match validate_output(&registry, &options, output) {
        Ok(checked) => {
            result.set_item("valid", true)?;
            result.set_item("tool_calls", to_python(py, &checked.tool_calls())?)?;
            result.set_item("content", checked.text.clone())?;
            result.set_item("reasoning", checked.reasoning.clone())?;
        }
        Err(fault) => {
            result.set_item("valid", false)?;
            result.set_item("feedback", fault.feedback())?;
            let faults: Vec<Bound<'py, PyDict>> = fault
                .faults
                .iter()
                .map(|fault| {
                    let dict = PyDict::new(py);
                    dict.set_item("code", fault.code)?;
                    dict.set_item("tool", fault.tool.clone())?;
                    dict.set_item("pointer", fault.pointer.clone())?;
                    dict.set_item("message", fault.message.clone())?;
                    Ok(dict)
                })
                .collect::<PyResult<_>>()?;
            result.set_item("faults", faults)?;
        }
    }
    Ok(result)
}
