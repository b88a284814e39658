//! The wire formats models write tool calls in.
//!
//! Two layouts cover them. The JSON wires (`openai`, `tool-args`, `llama3`) write a call
//! as a bare JSON object, several as a JSON list. Every other format is *marked*
//! ([`Marked`]): fixed texts (most of them a model's special tokens) open the calls,
//! wrap each call and separate them, and a call is either a JSON object with name and
//! arguments keys (Hermes, Mistral's list, Granite, Llama's `<|python_tag|>`) or the
//! tool's name written outside the JSON, before its arguments (Mistral v11's
//! `[TOOL_CALLS]name[ARGS]{…}`, DeepSeek's and Kimi K2's tokens), with each argument
//! apart in tags (Qwen3-Coder's, GLM's) or as a Python call's keyword arguments
//! (`pythonic`, `gemma3`: `[name(key=value)]`). The grammar, the
//! validator, the `auto` answer's call start, the lazy grammar's trigger and the
//! examples in messages are all read from this one description.

use grail_schema::Literals;
use grail_schema::diagnostic::escape_pointer_token;

use crate::json_read::{self, Json};
use crate::keywords;
use crate::parameters::{ValueKind, value_kind};
use crate::registry::ToolRegistry;

/// How a model writes a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WireFormat {
    /// `{"name": "get_weather", "arguments": {"city": "Paris"}}` (OpenAI's shape, as most
    /// JSON-trained models write it). Several calls: a JSON array of them.
    #[default]
    OpenAi,
    /// `{"tool": "get_weather", "args": {…}}`. Several calls: a JSON array.
    ToolArgs,
    /// Hermes and Qwen 2.5–3: `<tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>`.
    /// Several calls: one block each, separated by a newline.
    Hermes,
    /// Llama 3.1–3.3 as their templates teach custom tools: `{"name": …, "parameters":
    /// {…}}`. Several calls: a JSON array.
    Llama3,
    /// Llama 3.1–3.3 after the `<|python_tag|>` token: `<|python_tag|>{"name": …,
    /// "parameters": {…}}`; several calls separated by `; `.
    Llama3PythonTag,
    /// Mistral before v11: `[TOOL_CALLS][{"name": …, "arguments": {…}}]` (always a list).
    Mistral,
    /// Mistral v11 and later (Mistral Small 3.2, Magistral, Devstral):
    /// `[TOOL_CALLS]get_weather[ARGS]{…}`, the marker again before each further call; the
    /// v11 tokenizer's `[CALL_ID]` and a nine-character id may come before `[ARGS]`.
    MistralV11,
    /// DeepSeek V3 and R1: `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME`,
    /// the arguments in a fenced JSON block, `<｜tool▁call▁end｜>` after each call (a
    /// newline between calls) and `<｜tool▁calls▁end｜>` after the last.
    DeepSeek,
    /// DeepSeek V3.1: `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{…}<｜tool▁call▁end｜>`,
    /// calls one after another, `<｜tool▁calls▁end｜>` after the last.
    DeepSeekV31,
    /// Kimi K2: `<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:INDEX
    /// <|tool_call_argument_begin|>{…}<|tool_call_end|>` (no space before the argument
    /// token), `<|tool_calls_section_end|>` after the last.
    KimiK2,
    /// IBM Granite 3: `<|tool_call|>[{"name": …, "arguments": {…}}]` (always a list).
    Granite,
    /// Qwen3-Coder's XML parameters: `<tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE
    /// \n</parameter>\n…</function>\n</tool_call>`, a string argument written as it is,
    /// any other as JSON; several calls separated by a newline.
    Qwen3Xml,
    /// GLM 4.5 and later: `<tool_call>NAME\n<arg_key>KEY</arg_key>\n<arg_value>VALUE
    /// </arg_value>\n…</tool_call>`, values as in [`WireFormat::Qwen3Xml`].
    Glm,
    /// Llama 3.2 and 4's pythonic calls: `[get_weather(city="Paris"), add(a=1, b=2)]`
    /// (always a list), each argument a keyword with a Python literal (`True`, `False`,
    /// `None`; strings in either quote are read).
    Pythonic,
    /// Gemma 3, as vLLM's Gemma 3 template teaches it: the pythonic list,
    /// `[get_weather(city="Paris")]`, each argument's value written as JSON.
    Gemma3,
    /// gpt-oss's harmony channels, after the generation prompt's `<|start|>assistant`:
    /// a call as `<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{…}
    /// <|call|>` (one per turn: generation stops at `<|call|>`), text as
    /// `<|channel|>final<|message|>…`, the reasoning block as the analysis channel,
    /// `<|channel|>analysis<|message|>…<|end|><|start|>assistant`.
    Harmony,
}

/// The texts around a reasoning block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReasoningMarkers {
    /// What opens the block.
    pub open: &'static str,
    /// What closes it.
    pub close: &'static str,
}

/// `<think>` … `</think>`, the reasoning block of most families.
pub const THINK_MARKERS: ReasoningMarkers = ReasoningMarkers {
    open: "<think>",
    close: "</think>",
};

/// Harmony's analysis channel, closed where the next message starts.
const HARMONY_ANALYSIS: ReasoningMarkers = ReasoningMarkers {
    open: "<|channel|>analysis<|message|>",
    close: "<|end|><|start|>assistant",
};

/// The layout of a marked wire format (see the module doc): `open`, then the calls
/// separated by `separator`, then `close`; each call is `before`, the call, `after`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Marked {
    /// What starts the calls in an answer: an `auto` answer's text never contains it,
    /// and a lazy grammar waits for it. The start of `open`, or of `before` when `open`
    /// is empty.
    pub trigger: &'static str,
    /// Before the first call (once).
    pub open: &'static str,
    /// Between two calls.
    pub separator: &'static str,
    /// After the last call.
    pub close: &'static str,
    /// Before each call.
    pub before: &'static str,
    /// Where the tool's name is written.
    pub name: NamePlace,
    /// After each call.
    pub after: &'static str,
    /// The markers a model's tokenizer holds as special tokens (kept as text by
    /// llama-server's `preserved_tokens`).
    pub special_tokens: &'static [&'static str],
    /// Where the format frames free text (harmony's final channel): under `auto`, text
    /// is this, then anything; `None`: text is bare and never contains `trigger`.
    pub text_open: Option<&'static str>,
    /// The most calls one answer can hold (harmony: one; generation stops after it).
    pub most_calls: Option<u32>,
}

/// Where a marked call writes its tool's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NamePlace {
    /// Inside a JSON object, under the wire's name key, beside its arguments key.
    InObject,
    /// Before the arguments, outside the JSON: the name, its tag, `middle`, then the
    /// arguments' JSON.
    Outside {
        /// After the name (and its tag).
        middle: &'static str,
        /// What follows the name before `middle`.
        tag: CallTag,
    },
    /// Before the arguments, outside the JSON, each argument apart (see
    /// [`ParameterTags`]).
    Parameters(ParameterTags),
    /// A Python call: the name, then `(key=value, key=value)`, values in these literals
    /// (see `keywords.rs`).
    Keywords(Literals),
}

/// How a format writes each argument apart (Qwen3-Coder's and GLM's tags): `key_open`,
/// the argument's name, `key_close`, the value, `value_close`, then `trailer`. A value
/// whose schema is a string (`"type": "string"`, or an enum or const of strings) is
/// written as it is, up to `value_close`; any other as JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ParameterTags {
    /// After the tool's name, before the first argument.
    pub after_name: &'static str,
    /// Before an argument's name.
    pub key_open: &'static str,
    /// Between an argument's name and its value.
    pub key_close: &'static str,
    /// After a value: a string value never contains it.
    pub value_close: &'static str,
    /// After `value_close`.
    pub trailer: &'static str,
}

/// What a format writes between a tool's name and its arguments' marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallTag {
    /// Nothing.
    None,
    /// `:` and the call's decimal index, up to [`MAX_INDEX_DIGITS`] digits (Kimi K2's
    /// `functions.NAME:0`).
    Index,
    /// Perhaps [`CALL_ID_MARKER`] and an id of [`CALL_ID_LEN`] letters and digits
    /// (Mistral's v11 tokenizer).
    OptionalId,
}

/// The most digits of a call index in Kimi K2's `functions.NAME:INDEX`.
pub(crate) const MAX_INDEX_DIGITS: usize = 4;
/// Mistral v11's marker of a call's id.
pub(crate) const CALL_ID_MARKER: &str = "[CALL_ID]";
/// The length of a Mistral call id (letters and digits).
pub(crate) const CALL_ID_LEN: usize = 9;

/// Hermes' opening tag.
pub(crate) const HERMES_OPEN: &str = "<tool_call>";
/// Hermes' closing tag.
pub(crate) const HERMES_CLOSE: &str = "</tool_call>";
/// Mistral's marker before the calls.
pub(crate) const MISTRAL_OPEN: &str = "[TOOL_CALLS]";

const HERMES: Marked = Marked {
    trigger: HERMES_OPEN,
    open: "",
    separator: "\n",
    close: "",
    before: "<tool_call>\n",
    name: NamePlace::InObject,
    after: "\n</tool_call>",
    special_tokens: &[HERMES_OPEN, HERMES_CLOSE],
    text_open: None,
    most_calls: None,
};

const LLAMA3_PYTHON_TAG: Marked = Marked {
    trigger: "<|python_tag|>",
    open: "<|python_tag|>",
    separator: "; ",
    close: "",
    before: "",
    name: NamePlace::InObject,
    after: "",
    special_tokens: &["<|python_tag|>"],
    text_open: None,
    most_calls: None,
};

const MISTRAL: Marked = Marked {
    trigger: MISTRAL_OPEN,
    open: "[TOOL_CALLS][",
    separator: ", ",
    close: "]",
    before: "",
    name: NamePlace::InObject,
    after: "",
    special_tokens: &[MISTRAL_OPEN],
    text_open: None,
    most_calls: None,
};

const MISTRAL_V11: Marked = Marked {
    trigger: MISTRAL_OPEN,
    open: "",
    separator: "",
    close: "",
    before: MISTRAL_OPEN,
    name: NamePlace::Outside {
        middle: "[ARGS]",
        tag: CallTag::OptionalId,
    },
    after: "",
    special_tokens: &[MISTRAL_OPEN, CALL_ID_MARKER, "[ARGS]"],
    text_open: None,
    most_calls: None,
};

const DEEPSEEK: Marked = Marked {
    trigger: "<｜tool▁calls▁begin｜>",
    open: "<｜tool▁calls▁begin｜>",
    separator: "\n",
    close: "<｜tool▁calls▁end｜>",
    before: "<｜tool▁call▁begin｜>function<｜tool▁sep｜>",
    name: NamePlace::Outside {
        middle: "\n```json\n",
        tag: CallTag::None,
    },
    after: "\n```<｜tool▁call▁end｜>",
    special_tokens: &[
        "<｜tool▁calls▁begin｜>",
        "<｜tool▁calls▁end｜>",
        "<｜tool▁call▁begin｜>",
        "<｜tool▁call▁end｜>",
        "<｜tool▁sep｜>",
    ],
    text_open: None,
    most_calls: None,
};

const DEEPSEEK_V31: Marked = Marked {
    trigger: "<｜tool▁calls▁begin｜>",
    open: "<｜tool▁calls▁begin｜>",
    separator: "",
    close: "<｜tool▁calls▁end｜>",
    before: "<｜tool▁call▁begin｜>",
    name: NamePlace::Outside {
        middle: "<｜tool▁sep｜>",
        tag: CallTag::None,
    },
    after: "<｜tool▁call▁end｜>",
    special_tokens: DEEPSEEK.special_tokens,
    text_open: None,
    most_calls: None,
};

const KIMI_K2: Marked = Marked {
    trigger: "<|tool_calls_section_begin|>",
    open: "<|tool_calls_section_begin|>",
    separator: "",
    close: "<|tool_calls_section_end|>",
    before: "<|tool_call_begin|>functions.",
    name: NamePlace::Outside {
        middle: "<|tool_call_argument_begin|>",
        tag: CallTag::Index,
    },
    after: "<|tool_call_end|>",
    special_tokens: &[
        "<|tool_calls_section_begin|>",
        "<|tool_calls_section_end|>",
        "<|tool_call_begin|>",
        "<|tool_call_argument_begin|>",
        "<|tool_call_end|>",
    ],
    text_open: None,
    most_calls: None,
};

const GRANITE: Marked = Marked {
    trigger: "<|tool_call|>",
    open: "<|tool_call|>[",
    separator: ", ",
    close: "]",
    before: "",
    name: NamePlace::InObject,
    after: "",
    special_tokens: &["<|tool_call|>"],
    text_open: None,
    most_calls: None,
};

const QWEN3_XML: Marked = Marked {
    trigger: HERMES_OPEN,
    open: "",
    separator: "\n",
    close: "",
    before: "<tool_call>\n<function=",
    name: NamePlace::Parameters(ParameterTags {
        after_name: ">\n",
        key_open: "<parameter=",
        key_close: ">\n",
        value_close: "\n</parameter>",
        trailer: "\n",
    }),
    after: "</function>\n</tool_call>",
    special_tokens: &[HERMES_OPEN, HERMES_CLOSE],
    text_open: None,
    most_calls: None,
};

const GLM: Marked = Marked {
    trigger: HERMES_OPEN,
    open: "",
    separator: "\n",
    close: "",
    before: HERMES_OPEN,
    name: NamePlace::Parameters(ParameterTags {
        after_name: "\n",
        key_open: "<arg_key>",
        key_close: "</arg_key>\n<arg_value>",
        value_close: "</arg_value>",
        trailer: "\n",
    }),
    after: HERMES_CLOSE,
    special_tokens: &[
        HERMES_OPEN,
        HERMES_CLOSE,
        "<arg_key>",
        "</arg_key>",
        "<arg_value>",
        "</arg_value>",
    ],
    text_open: None,
    most_calls: None,
};

const PYTHONIC: Marked = Marked {
    trigger: "[",
    open: "[",
    separator: ", ",
    close: "]",
    before: "",
    name: NamePlace::Keywords(Literals::Python),
    after: "",
    special_tokens: &[],
    text_open: None,
    most_calls: None,
};

const GEMMA3: Marked = Marked {
    name: NamePlace::Keywords(Literals::Json),
    ..PYTHONIC
};

const HARMONY: Marked = Marked {
    trigger: "<|channel|>commentary",
    open: "",
    separator: "",
    close: "",
    before: "<|channel|>commentary to=functions.",
    name: NamePlace::Outside {
        middle: " <|constrain|>json<|message|>",
        tag: CallTag::None,
    },
    after: "<|call|>",
    special_tokens: &[
        "<|channel|>",
        "<|constrain|>",
        "<|message|>",
        "<|call|>",
        "<|end|>",
        "<|start|>",
    ],
    text_open: Some("<|channel|>final<|message|>"),
    most_calls: Some(1),
};

impl WireFormat {
    /// Every format, in the order of their labels.
    pub const ALL: [WireFormat; 16] = [
        WireFormat::OpenAi,
        WireFormat::ToolArgs,
        WireFormat::Hermes,
        WireFormat::Llama3,
        WireFormat::Llama3PythonTag,
        WireFormat::Mistral,
        WireFormat::MistralV11,
        WireFormat::DeepSeek,
        WireFormat::DeepSeekV31,
        WireFormat::KimiK2,
        WireFormat::Granite,
        WireFormat::Qwen3Xml,
        WireFormat::Glm,
        WireFormat::Pythonic,
        WireFormat::Gemma3,
        WireFormat::Harmony,
    ];

    /// The format's label (`openai`, `tool-args`, `hermes`, `llama3`,
    /// `llama3-python-tag`, `mistral`, `mistral-v11`, `deepseek`, `deepseek-v3.1`,
    /// `kimi-k2`, `granite`, `qwen3-xml`, `glm`, `pythonic`, `gemma3`, `harmony`).
    pub fn label(self) -> &'static str {
        match self {
            WireFormat::OpenAi => "openai",
            WireFormat::ToolArgs => "tool-args",
            WireFormat::Hermes => "hermes",
            WireFormat::Llama3 => "llama3",
            WireFormat::Llama3PythonTag => "llama3-python-tag",
            WireFormat::Mistral => "mistral",
            WireFormat::MistralV11 => "mistral-v11",
            WireFormat::DeepSeek => "deepseek",
            WireFormat::DeepSeekV31 => "deepseek-v3.1",
            WireFormat::KimiK2 => "kimi-k2",
            WireFormat::Granite => "granite",
            WireFormat::Qwen3Xml => "qwen3-xml",
            WireFormat::Glm => "glm",
            WireFormat::Pythonic => "pythonic",
            WireFormat::Gemma3 => "gemma3",
            WireFormat::Harmony => "harmony",
        }
    }

    /// The format a model's chat template teaches, from the markers its tool section
    /// writes (see docs/tool-calling.md's table): harmony's channels, Kimi K2's and
    /// DeepSeek's call tokens
    /// (V3 and R1 fence the arguments in a JSON block, V3.1 does not), Granite's
    /// `<|tool_call|>`, Mistral's `[TOOL_CALLS]` (with `[ARGS]` from v11 on), GLM's
    /// `<arg_key>`, Qwen3-Coder's `<function=` and `<parameter=`, Hermes' and Qwen's
    /// `<tool_call>`, the pythonic list's instruction `[func_name1(` (Gemma 3's with its
    /// `<start_of_turn>`, Llama 3.2/4's otherwise), and Llama 3.1–3.3's `ipython` role (their templates write
    /// custom calls as bare JSON; `llama3-python-tag` is chosen by name). None when the
    /// template shows none of them (SmolLM2's, or a family Grail does not know yet).
    pub fn detect_from_template(template: &str) -> Option<WireFormat> {
        let has = |marker: &str| template.contains(marker);
        // The instruction of the pythonic templates (Llama 3.2/4's, Gemma 3's).
        let pythonic = has("[func_name1(");
        if has("<|channel|>") && has("<|call|>") {
            Some(WireFormat::Harmony)
        } else if has("<|tool_calls_section_begin|>") {
            Some(WireFormat::KimiK2)
        } else if has("tool▁calls▁begin") {
            match has("```json") {
                true => Some(WireFormat::DeepSeek),
                false => Some(WireFormat::DeepSeekV31),
            }
        } else if has("<|tool_call|>") {
            Some(WireFormat::Granite)
        } else if has("[TOOL_CALLS]") && has("[ARGS]") {
            Some(WireFormat::MistralV11)
        } else if has("[TOOL_CALLS]") {
            Some(WireFormat::Mistral)
        } else if has("<arg_key>") && has("<arg_value>") {
            Some(WireFormat::Glm)
        } else if has("<tool_call>") && has("<function=") && has("<parameter=") {
            Some(WireFormat::Qwen3Xml)
        } else if has("<tool_call>") {
            Some(WireFormat::Hermes)
        } else if pythonic && has("<start_of_turn>") {
            Some(WireFormat::Gemma3)
        } else if pythonic {
            Some(WireFormat::Pythonic)
        } else if has("<|start_header_id|>") && has("ipython") {
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

    /// The key of the tool's name in a call object (in the formats that write the name
    /// outside the JSON, the key of the call objects the validator reads them into).
    pub fn name_key(self) -> &'static str {
        match self {
            WireFormat::ToolArgs => "tool",
            _ => "name",
        }
    }

    /// The key of the arguments in a call object (see [`WireFormat::name_key`]).
    pub fn arguments_key(self) -> &'static str {
        match self {
            WireFormat::ToolArgs => "args",
            WireFormat::Llama3 | WireFormat::Llama3PythonTag => "parameters",
            _ => "arguments",
        }
    }

    /// The text that opens the calls (what a lazy grammar waits for), when the format
    /// has one.
    pub fn opening(self) -> Option<&'static str> {
        self.marked().map(|marked| marked.trigger)
    }

    /// The most calls one answer can hold in this format (harmony: one), if it bounds
    /// them.
    pub fn most_calls(self) -> Option<u32> {
        self.marked().and_then(|marked| marked.most_calls)
    }

    /// Whether an `auto` answer may go on with text after a block of calls (see
    /// `answer.rs`): where the block's end is plain, because the format closes it, or
    /// because a next call in it starts with the trigger, which text never contains.
    /// Not in `llama3-python-tag` (text after `{…}` could be `; ` and another call) nor
    /// where text is framed.
    pub fn text_after_calls(self) -> bool {
        match self.marked() {
            None => true,
            Some(marked) => {
                marked.text_open.is_none()
                    && (!marked.close.is_empty()
                        || format!("{}{}", marked.separator, marked.before)
                            .contains(marked.trigger))
            }
        }
    }

    /// What opens free text in a format that frames it (harmony's
    /// `<|channel|>final<|message|>`), `None` in the others.
    pub fn text_frame(self) -> Option<&'static str> {
        self.marked().and_then(|marked| marked.text_open)
    }

    /// Whether the format frames free text (harmony's final channel), so that an answer
    /// is either text or calls, never both.
    pub fn frames_text(self) -> bool {
        self.text_frame().is_some()
    }

    /// The texts around the format's reasoning block: harmony's analysis channel,
    /// `<think>` … `</think>` for the others.
    pub fn reasoning(self) -> ReasoningMarkers {
        match self {
            WireFormat::Harmony => HARMONY_ANALYSIS,
            _ => THINK_MARKERS,
        }
    }

    /// The format's markers that models hold as special tokens (empty for the JSON
    /// wires).
    pub fn special_tokens(self) -> &'static [&'static str] {
        self.marked().map_or(&[], |marked| marked.special_tokens)
    }

    /// The texts among the format's markers and its reasoning block's that a model may
    /// hold as special tokens, each with its id where `special_id` finds one (the id of
    /// the model's special token of exactly that text): what
    /// [`crate::CallOptions::special_tokens`] takes.
    pub fn marker_tokens(self, special_id: impl Fn(&str) -> Option<u32>) -> Vec<(String, u32)> {
        let reasoning = self.reasoning();
        let mut texts: Vec<&str> = self.special_tokens().to_vec();
        texts.extend([reasoning.open, reasoning.close]);
        texts.sort_unstable();
        texts.dedup();
        texts
            .into_iter()
            .filter_map(|text| special_id(text).map(|id| (text.to_string(), id)))
            .collect()
    }

    /// The layout of a marked format; `None` for the JSON wires.
    pub(crate) fn marked(self) -> Option<&'static Marked> {
        match self {
            WireFormat::OpenAi | WireFormat::ToolArgs | WireFormat::Llama3 => None,
            WireFormat::Hermes => Some(&HERMES),
            WireFormat::Llama3PythonTag => Some(&LLAMA3_PYTHON_TAG),
            WireFormat::Mistral => Some(&MISTRAL),
            WireFormat::MistralV11 => Some(&MISTRAL_V11),
            WireFormat::DeepSeek => Some(&DEEPSEEK),
            WireFormat::DeepSeekV31 => Some(&DEEPSEEK_V31),
            WireFormat::KimiK2 => Some(&KIMI_K2),
            WireFormat::Granite => Some(&GRANITE),
            WireFormat::Qwen3Xml => Some(&QWEN3_XML),
            WireFormat::Glm => Some(&GLM),
            WireFormat::Pythonic => Some(&PYTHONIC),
            WireFormat::Gemma3 => Some(&GEMMA3),
            WireFormat::Harmony => Some(&HARMONY),
        }
    }

    /// True when the tool's name is written outside the JSON of its arguments.
    pub(crate) fn name_outside(self) -> bool {
        matches!(
            self.marked().map(|marked| marked.name),
            Some(NamePlace::Outside { .. } | NamePlace::Parameters(_) | NamePlace::Keywords(_))
        )
    }

    /// How the format spells argument values: Python literals in `pythonic`, JSON in
    /// every other.
    pub fn literals(self) -> Literals {
        match self.marked().map(|marked| marked.name) {
            Some(NamePlace::Keywords(literals)) => literals,
            _ => Literals::Json,
        }
    }

    /// `calls` (each a tool's name and its arguments as JSON text) as this format writes
    /// them, as Grail's grammar would have them written: a list on the JSON wires when
    /// `list` (or there are several), the markers of the others. For prompts that show
    /// earlier calls, and for examples in messages. Formats that write each argument
    /// apart write string arguments as they are and others as JSON; with the tools at
    /// hand, [`WireFormat::write_calls_for`] decides by each argument's schema instead.
    pub fn write_calls(self, calls: &[(&str, &str)], list: bool) -> String {
        self.write_calls_for(&ToolRegistry::default(), calls, list)
    }

    /// [`WireFormat::write_calls`], each argument written as its schema in `registry`
    /// says where the format writes arguments apart (a string argument as it is, any
    /// other as JSON).
    pub fn write_calls_for(
        self,
        registry: &ToolRegistry,
        calls: &[(&str, &str)],
        list: bool,
    ) -> String {
        let object = |name: &str, arguments: &str| {
            format!(
                "{{\"{}\": {}, \"{}\": {arguments}}}",
                self.name_key(),
                serde_json::Value::String(name.to_string()),
                self.arguments_key()
            )
        };
        let Some(marked) = self.marked() else {
            let objects: Vec<String> = calls
                .iter()
                .map(|(name, arguments)| object(name, arguments))
                .collect();
            return match (list || objects.len() > 1, objects.as_slice()) {
                (false, [one]) => one.clone(),
                _ => format!("[{}]", objects.join(", ")),
            };
        };
        let written: Vec<String> = calls
            .iter()
            .enumerate()
            .map(|(index, (name, arguments))| {
                let call = match marked.name {
                    NamePlace::InObject => object(name, arguments),
                    NamePlace::Outside { middle, tag } => {
                        let tag = match tag {
                            CallTag::Index => format!(":{index}"),
                            CallTag::None | CallTag::OptionalId => String::new(),
                        };
                        format!("{name}{tag}{middle}{arguments}")
                    }
                    NamePlace::Parameters(tags) => {
                        let schema = registry.get(name).map(|tool| &tool.parameters);
                        format!("{name}{}{}", tags.after_name, tags.write(arguments, schema))
                    }
                    NamePlace::Keywords(literals) => {
                        format!("{name}({})", keywords::write(literals, arguments))
                    }
                };
                format!("{}{call}{}", marked.before, marked.after)
            })
            .collect();
        format!(
            "{}{}{}",
            marked.open,
            written.join(marked.separator),
            marked.close
        )
    }
}

impl ParameterTags {
    /// `arguments` (a JSON object's text) as these tags write them, strings as they are
    /// where `schema` (the tool's arguments' schema, when known) makes them text (see
    /// `parameters.rs`); arguments that are no object (an example's `{…}`) as one
    /// placeholder argument.
    fn write(&self, arguments: &str, schema: Option<&serde_json::Value>) -> String {
        let argument = |key: &str, value: &str| {
            format!(
                "{}{key}{}{value}{}{}",
                self.key_open, self.key_close, self.value_close, self.trailer
            )
        };
        // Read as written (numbers keep their digits), not through `serde_json::Value`.
        match json_read::read(arguments) {
            Ok(Json::Object(members)) => members
                .iter()
                .map(|(key, value)| {
                    let property = schema.and_then(|schema| {
                        schema.pointer(&format!("/properties/{}", escape_pointer_token(key)))
                    });
                    let as_text = match property.map(value_kind) {
                        Some(kind) => matches!(kind, ValueKind::Text(_)),
                        None => matches!(value, Json::String(_)),
                    };
                    match (value, as_text) {
                        (Json::String(text), true) => argument(key, text),
                        (other, _) => {
                            let mut written = String::new();
                            other.write_compact(&mut written);
                            argument(key, &written)
                        }
                    }
                })
                .collect(),
            _ => argument("ARGUMENT", "VALUE"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_name_one_format_each() {
        for format in WireFormat::ALL {
            assert_eq!(WireFormat::from_label(format.label()), Some(format));
        }
        assert_eq!(WireFormat::from_label("auto"), None);
    }

    #[test]
    fn each_marked_format_starts_with_its_trigger() {
        for format in WireFormat::ALL {
            let Some(marked) = format.marked() else {
                continue;
            };
            let start = match marked.open {
                "" => marked.before,
                open => open,
            };
            assert!(start.starts_with(marked.trigger), "{format:?}");
            // The call start's automaton needs a first character found nowhere else in
            // the trigger (see `answer.rs`).
            let first = marked.trigger.chars().next().unwrap();
            assert_eq!(marked.trigger.matches(first).count(), 1, "{format:?}");
            let written = format.write_calls(&[("f", "{}")], false);
            assert!(written.starts_with(marked.trigger), "{written}");
        }
    }

    #[test]
    fn calls_are_written_as_each_format_writes_them() {
        let calls = [("a", r#"{"x": 1}"#), ("b", "{}")];
        let cases = [
            (
                WireFormat::OpenAi,
                r#"[{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {}}]"#,
            ),
            (
                WireFormat::Hermes,
                "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>",
            ),
            (
                WireFormat::Llama3PythonTag,
                r#"<|python_tag|>{"name": "a", "parameters": {"x": 1}}; {"name": "b", "parameters": {}}"#,
            ),
            (
                WireFormat::MistralV11,
                r#"[TOOL_CALLS]a[ARGS]{"x": 1}[TOOL_CALLS]b[ARGS]{}"#,
            ),
            (
                WireFormat::DeepSeek,
                "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>a\n```json\n{\"x\": 1}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>b\n```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            ),
            (
                WireFormat::KimiK2,
                r#"<|tool_calls_section_begin|><|tool_call_begin|>functions.a:0<|tool_call_argument_begin|>{"x": 1}<|tool_call_end|><|tool_call_begin|>functions.b:1<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>"#,
            ),
            (
                WireFormat::Granite,
                r#"<|tool_call|>[{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {}}]"#,
            ),
        ];
        for (format, expected) in cases {
            assert_eq!(format.write_calls(&calls, true), expected, "{format:?}");
        }
        assert_eq!(
            WireFormat::Llama3.write_calls(&calls[..1], false),
            r#"{"name": "a", "parameters": {"x": 1}}"#
        );
    }
}
