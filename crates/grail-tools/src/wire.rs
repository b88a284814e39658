//! The wire formats models write tool calls in.

/// How a model writes a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WireFormat {
    /// `{"name": "get_weather", "arguments": {"city": "Paris"}}` (OpenAI's shape, as most
    /// JSON-trained models write it). Several calls: a JSON array of them.
    #[default]
    OpenAi,
    /// `{"tool": "get_weather", "args": {…}}`. Several calls: a JSON array.
    ToolArgs,
    /// Hermes and Qwen: `<tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>`.
    /// Several calls: one block each, separated by a newline.
    Hermes,
    /// Llama 3.x: `{"name": …, "parameters": {…}}`. Several calls: a JSON array.
    Llama3,
    /// Mistral: `[TOOL_CALLS][{"name": …, "arguments": {…}}]` (always a list; the marker
    /// written as text).
    Mistral,
}

impl WireFormat {
    /// Every format, in the order of their labels.
    pub const ALL: [WireFormat; 5] = [
        WireFormat::OpenAi,
        WireFormat::ToolArgs,
        WireFormat::Hermes,
        WireFormat::Llama3,
        WireFormat::Mistral,
    ];

    /// The format's label (`openai`, `tool-args`, `hermes`, `llama3`, `mistral`).
    pub fn label(self) -> &'static str {
        match self {
            WireFormat::OpenAi => "openai",
            WireFormat::ToolArgs => "tool-args",
            WireFormat::Hermes => "hermes",
            WireFormat::Llama3 => "llama3",
            WireFormat::Mistral => "mistral",
        }
    }

    /// The format a model's chat template teaches, from the markers its tool section
    /// writes: `[TOOL_CALLS]` (Mistral), `<tool_call>` (Hermes, Qwen), or an `ipython`
    /// role with Llama 3's headers (Llama 3.1–3.3 JSON calls). None when the template
    /// shows none of them (SmolLM2's, or a family Grail does not know yet).
    pub fn detect_from_template(template: &str) -> Option<WireFormat> {
        if template.contains("[TOOL_CALLS]") {
            Some(WireFormat::Mistral)
        } else if template.contains("<tool_call>") {
            Some(WireFormat::Hermes)
        } else if template.contains("<|start_header_id|>") && template.contains("ipython") {
            Some(WireFormat::Llama3)
        } else {
            None
        }
    }

    /// The format with this label.
    pub fn from_label(label: &str) -> Option<WireFormat> {
        WireFormat::ALL
            .into_iter()
            .find(|format| format.label() == label)
    }

    /// The key of the tool's name in a call object.
    pub fn name_key(self) -> &'static str {
        match self {
            WireFormat::ToolArgs => "tool",
            _ => "name",
        }
    }

    /// The key of the arguments in a call object.
    pub fn arguments_key(self) -> &'static str {
        match self {
            WireFormat::ToolArgs => "args",
            WireFormat::Llama3 => "parameters",
            _ => "arguments",
        }
    }

    /// The text that opens the calls (what a lazy grammar waits for), when the format
    /// has one.
    pub fn opening(self) -> Option<&'static str> {
        match self {
            WireFormat::Hermes => Some(HERMES_OPEN),
            WireFormat::Mistral => Some(MISTRAL_OPEN),
            _ => None,
        }
    }
}

/// Hermes' opening tag, with the newline after it.
pub(crate) const HERMES_OPEN: &str = "<tool_call>";
/// Hermes' closing tag.
pub(crate) const HERMES_CLOSE: &str = "</tool_call>";
/// Mistral's marker before the list of calls.
pub(crate) const MISTRAL_OPEN: &str = "[TOOL_CALLS]";
