//! Lazy grammars for llama-server's `auto` tool choice: the model writes freely until it
//! starts a call (a trigger), and only then is held to the grammar. llama-server takes
//! `grammar` (here: the calls alone), `grammar_lazy: true`, `grammar_triggers` (objects
//! `{"type", "value"}`, the type numbered as llama.cpp's `common_grammar_trigger_type`:
//! 1 a word, 2 a regular expression searched in the output) and `preserved_tokens`
//! (special tokens to keep as text; a trigger word that is one token must be among them,
//! or llama-server refuses the request).

use serde_json::{Value, json};

use crate::error::ToolsError;
use crate::grammar::{CallOptions, Think, ToolChoice, ToolGrammar, tool_call_grammar};
use crate::registry::ToolRegistry;
use crate::wire::NamePlace;

/// What starts the grammar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trigger {
    /// This text, where it first appears (the grammar applies from its first byte).
    Word(String),
    /// A regular expression (ECMAScript, as `std::regex` reads it), searched in the
    /// output; the grammar applies from where it matches.
    Pattern(String),
}

impl Trigger {
    /// As llama-server reads a `grammar_triggers` entry.
    pub fn to_llama_server(&self) -> Value {
        match self {
            Trigger::Word(word) => json!({"type": 1, "value": word}),
            Trigger::Pattern(pattern) => json!({"type": 2, "value": pattern}),
        }
    }
}

/// A lazy tool-call grammar: the calls' grammar, what triggers it and the tokens to keep.
#[derive(Debug, Clone)]
pub struct LazyGrammar {
    /// The grammar of the calls alone (no free text, no reasoning block: both come before
    /// the trigger).
    pub grammar: ToolGrammar,
    /// What starts the calls.
    pub triggers: Vec<Trigger>,
    /// Tags to keep as text (`<tool_call>`, `[TOOL_CALLS]`, `<think>`, …).
    pub preserved_tokens: Vec<String>,
}

impl LazyGrammar {
    /// The fields of a llama-server request: `grammar`, `grammar_lazy`,
    /// `grammar_triggers`, `preserved_tokens`.
    pub fn llama_server_fields(&self) -> Value {
        json!({
            "grammar": self.grammar.gbnf(),
            "grammar_lazy": true,
            "grammar_triggers": self.triggers.iter().map(Trigger::to_llama_server).collect::<Vec<_>>(),
            "preserved_tokens": self.preserved_tokens,
        })
    }
}

/// The lazy form of the `auto` tool choice (see the module doc). Only for
/// `ToolChoice::Auto`: a call that is required, named or ruled out needs no trigger.
pub fn lazy_tool_call_grammar(
    registry: &ToolRegistry,
    options: &CallOptions,
) -> Result<LazyGrammar, ToolsError> {
    if options.choice != ToolChoice::Auto {
        return Err(ToolsError::Options(
            "a lazy grammar (triggers) is for tool_choice auto; a required or named call takes the grammar as it is".into(),
        ));
    }
    let calls_only = CallOptions {
        choice: ToolChoice::Required,
        think: Think::Off,
        ..options.clone()
    };
    let grammar = tool_call_grammar(registry, &calls_only)?;
    let mut preserved: Vec<String> = Vec::new();
    let triggers = match options.wire.marked() {
        // A list of pythonic calls: `[` and a name's characters, then `(`, as `answer.rs`
        // reads a call's start.
        Some(marked) if matches!(marked.name, NamePlace::Keywords(_)) => {
            vec![Trigger::Pattern(r"\[[A-Za-z0-9_.-]+\(".to_string())]
        }
        Some(marked) => {
            preserved.extend(marked.special_tokens.iter().map(|token| token.to_string()));
            vec![Trigger::Word(marked.trigger.to_string())]
        }
        None => {
            // JSON whitespace, as `answer.rs` reads a call's start.
            let space = r"[ \t\n\r]*";
            let object = format!(r#"\{{{space}"{}"{space}:"#, options.wire.name_key());
            let start = if options.parallel() {
                format!(r"\[{space}{object}")
            } else {
                object
            };
            vec![Trigger::Pattern(start)]
        }
    };
    if options.think != Think::Off {
        let markers = options.wire.reasoning();
        preserved.extend([markers.open.to_string(), markers.close.to_string()]);
    }
    Ok(LazyGrammar {
        grammar,
        triggers,
        preserved_tokens: preserved,
    })
}
