//! `validateCall`: a model's output checked against a tool registry.

use grail_tools::validate_output;
use napi::Either;
use napi_derive::napi;

use crate::errors::Failure;
use crate::grammar::{ToolsOptions, registry_and_options};

/// One fault of an invalid output.
#[napi(object)]
pub struct CallFaultObject {
    /// A stable identifier of the kind of fault.
    pub code: String,
    /// The tool, when the fault is in a call.
    pub tool: Option<String>,
    /// The JSON pointer into the call's arguments.
    pub pointer: Option<String>,
    /// What is wrong.
    pub message: String,
}

/// The verdict on an output.
#[napi(object)]
pub struct CallCheck {
    /// True when the output is a valid answer.
    pub valid: bool,
    /// When valid: the calls in OpenAI's shape (arguments as JSON text), as JSON text.
    pub tool_calls_json: Option<String>,
    /// When valid: the text before or instead of calls.
    pub content: Option<String>,
    /// When valid: the reasoning block's text.
    pub reasoning: Option<String>,
    /// When not: the message to give the model back.
    pub feedback: Option<String>,
    /// When not: each fault.
    pub faults: Option<Vec<CallFaultObject>>,
}

/// Checks a model's `output` against `tools` (JSON text) framed and chosen as `options`
/// say; a registry Grail refuses comes back as a failure.
#[napi]
pub fn validate_call(
    tools: String,
    output: String,
    options: Option<ToolsOptions>,
) -> napi::Result<Either<CallCheck, Failure>> {
    let (registry, options) = match registry_and_options(&tools, options)? {
        Ok(pair) => pair,
        Err(failure) => return Ok(Either::B(failure)),
    };
    Ok(Either::A(
        match validate_output(&registry, &options, &output) {
            Ok(checked) => CallCheck {
                valid: true,
                tool_calls_json: Some(checked.tool_calls().to_string()),
                content: checked.text.clone(),
                reasoning: checked.reasoning.clone(),
                feedback: None,
                faults: None,
            },
            Err(fault) => CallCheck {
                valid: false,
                tool_calls_json: None,
                content: None,
                reasoning: None,
                feedback: Some(fault.feedback()),
                faults: Some(
                    fault
                        .faults
                        .iter()
                        .map(|fault| CallFaultObject {
                            code: fault.code.to_string(),
                            tool: fault.tool.clone(),
                            pointer: fault.pointer.clone(),
                            message: fault.message.clone(),
                        })
                        .collect(),
                ),
            },
        },
    ))
}
