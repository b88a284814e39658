//! Tool calling for Grail.
//!
//! A registry of tools (the OpenAI `tools` array, bare functions or an MCP `tools/list`
//! result: [`ToolRegistry`]) becomes a tool-call grammar ([`tool_call_grammar`]) in which a
//! tool's name fixes its arguments: the name of one tool can never carry another tool's
//! arguments, and every argument is enforced all the way down by `grail-schema` (strict:
//! a keyword it cannot enforce refuses the tool, naming it). The grammar is written in
//! the wire format the model emits ([`WireFormat`]), with OpenAI's `tool_choice`, several
//! calls and an optional reasoning block. After decoding, [`validate_output`] reads the
//! model's text back into calls, checks each against its tool's schema with the
//! `jsonschema` crate (for what grammars cannot say), and gives either OpenAI-shaped
//! `tool_calls` or a message for the model naming the tool, the place and the fault.
//!
//! ```
//! use grail_tools::{CallOptions, ToolRegistry, tool_call_grammar, validate_output};
//! let registry = ToolRegistry::from_json_text(r#"[{"type": "function", "function": {
//!     "name": "get_weather",
//!     "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
//!                    "required": ["city"]}}}]"#).unwrap();
//! let options = CallOptions::default();
//! let grammar = tool_call_grammar(&registry, &options).unwrap();
//! assert!(grammar.gbnf().contains("get_weather"));
//!
//! let checked = validate_output(&registry, &options, r#"{"name": "get_weather", "arguments": {}}"#);
//! assert_eq!(checked.unwrap_err().feedback(), "missing required arguments ['city'] for tool 'get_weather'");
//! ```
#![warn(missing_docs)]

mod answer;
mod arguments;
mod choice;
mod error;
pub mod filter;
mod grammar;
mod json_read;
mod keywords;
mod lazy;
mod markers;
mod numbers;
mod parameters;
mod registry;
mod relevance;
mod stream;
mod validate;
mod wire;

pub use arguments::Arguments;
pub use error::ToolsError;
pub use filter::{FilteredPool, PoolFilter};
pub use grammar::{
    CallOptions, MAX_CALLS_BOUND, Think, ToolChoice, ToolGrammar, classification_grammar,
    tool_call_grammar,
};
pub use lazy::{LazyGrammar, Trigger, lazy_tool_call_grammar};
pub use numbers::{CALL_EXPONENT_DIGITS, CALL_INTEGER_DIGITS};
pub use registry::{MAX_NAME_LEN, Tool, ToolRegistry};
pub use relevance::{RankedTool, rank_tools, top_tools};
pub use stream::{CallStream, StreamDelta};
pub use validate::{
    CallFault, Checked, Fault, ToolCall, WrittenCalls, validate_output, written_calls,
};
pub use wire::{ReasoningMarkers, THINK_MARKERS, WireFormat};
