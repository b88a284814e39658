//! The system prompt that tells a model about its tools, for chat templates without a
//! tool section (SmolLM2's has none). The format, documented in docs/generation.md:
//!
//! ```text
//! You can call these tools:
//! - navigate: Move around the file tree. Arguments (JSON Schema): {"type":"object",...}
//! - search: ...
//!
//! Answer with a tool call and nothing else, written like this:
//! {"name": "navigate", "arguments": {"action": "get_tree"}}
//! ```
//!
//! The example is the first offered tool with its required arguments filled from the
//! schema (an enum's first value, a string's `"..."`, a number's minimum or 0): small
//! models copy the shape of an example far better than they follow a description
//! (seed 001).

use grail_tools::{CallOptions, Tool, ToolChoice, ToolRegistry, WireFormat};
use serde_json::{Map, Value, json};

/// How deep the example's arguments are filled in.
const EXAMPLE_DEPTH: usize = 6;

/// The system prompt describing the tools `options` offers (see the module doc); `None`
/// when no tool may be called.
pub fn tools_system_prompt(registry: &ToolRegistry, options: &CallOptions) -> Option<String> {
    let offered = registry.offered(&options.choice);
    if offered.is_empty() {
        return None;
    }
    let mut prompt = String::from("You can call these tools:\n");
    for tool in &offered {
        let description = tool.description.trim().trim_end_matches('.');
        let description = if description.is_empty() {
            String::new()
        } else {
            format!(" {description}.")
        };
        prompt.push_str(&format!(
            "- {}:{description}\n  Arguments (JSON Schema): {}\n  Example: {}\n",
            tool.name,
            tool.parameters,
            example_call(tool, options.wire)
        ));
    }
    let instruction = match options.choice {
        ToolChoice::Auto => "When a tool helps, answer with one tool call and nothing else",
        _ => "Answer with one tool call and nothing else",
    };
    prompt.push_str(&format!(
        "\n{instruction}, written like the examples: pick the tool that fits the request and fill in its arguments."
    ));
    Some(prompt)
}

/// A call of `tool` in `wire` format with its required arguments filled in.
pub fn example_call(tool: &Tool, wire: WireFormat) -> String {
    let arguments = json_with_spaces(&example_value(&tool.parameters, EXAMPLE_DEPTH));
    wire.write_calls(&[(&tool.name, &arguments)], false)
}

/// A value `schema` accepts, as simple as it allows (required properties only).
fn example_value(schema: &Value, depth: usize) -> Value {
    let Some(schema) = schema.as_object() else {
        return json!({});
    };
    if let Some(value) = schema.get("const") {
        return value.clone();
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|values| values.first())
    {
        return first.clone();
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(first) = schema
            .get(key)
            .and_then(Value::as_array)
            .and_then(|b| b.first())
        {
            return example_value(first, depth);
        }
    }
    let kind = match schema.get("type") {
        Some(Value::String(kind)) => kind.as_str(),
        Some(Value::Array(kinds)) => kinds.first().and_then(Value::as_str).unwrap_or("null"),
        None if schema.contains_key("properties") => "object",
        None => "string",
        Some(_) => "string",
    };
    match kind {
        "object" => {
            let mut object = Map::new();
            if depth > 0 {
                let properties = schema.get("properties").and_then(Value::as_object);
                for name in schema
                    .get("required")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    let property = properties.and_then(|p| p.get(name)).unwrap_or(&Value::Null);
                    object.insert(name.into(), example_value(property, depth - 1));
                }
            }
            Value::Object(object)
        }
        "array" => {
            let least = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let items = schema.get("items").unwrap_or(&Value::Null);
            Value::Array(
                (0..least.min(1))
                    .filter(|_| depth > 0)
                    .map(|_| example_value(items, depth - 1))
                    .collect(),
            )
        }
        "integer" | "number" => schema.get("minimum").cloned().unwrap_or_else(|| json!(0)),
        "boolean" => json!(true),
        "null" => Value::Null,
        _ => json!("..."),
    }
}

/// JSON with `", "` and `": "` between items, as models are used to reading it.
fn json_with_spaces(value: &Value) -> String {
    match value {
        Value::Object(object) => {
            let items: Vec<String> = object
                .iter()
                .map(|(key, value)| {
                    format!(
                        "{}: {}",
                        Value::String(key.clone()),
                        json_with_spaces(value)
                    )
                })
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(json_with_spaces).collect();
            format!("[{}]", items.join(", "))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry() -> ToolRegistry {
        ToolRegistry::from_json_text(
            r#"[{"type": "function", "function": {"name": "navigate",
                "description": "Move around the file tree",
                "parameters": {"type": "object", "properties": {
                    "action": {"type": "string", "enum": ["get_tree", "open"]},
                    "depth": {"type": "integer", "minimum": 1},
                    "path": {"type": "string"}},
                  "required": ["action", "depth"]}}},
               {"type": "function", "function": {"name": "search", "parameters":
                {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}]"#,
        )
        .unwrap()
    }

    #[test]
    fn the_example_fills_required_arguments_in_the_wire_format() {
        let registry = registry();
        let tool = &registry.tools[0];
        assert_eq!(
            example_call(tool, WireFormat::OpenAi),
            r#"{"name": "navigate", "arguments": {"action": "get_tree", "depth": 1}}"#
        );
        assert_eq!(
            example_call(&registry.tools[1], WireFormat::Hermes),
            "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"...\"}}\n</tool_call>"
        );
        assert!(
            example_call(tool, WireFormat::ToolArgs)
                .starts_with(r#"{"tool": "navigate", "args": {"#)
        );
    }

    #[test]
    fn the_prompt_lists_the_offered_tools() {
        let registry = registry();
        let prompt = tools_system_prompt(&registry, &CallOptions::default()).unwrap();
        assert!(
            prompt.contains("- navigate: Move around the file tree.\n  Arguments (JSON Schema): {")
        );
        assert!(prompt.contains(
            "  Example: {\"name\": \"navigate\", \"arguments\": {\"action\": \"get_tree\", \"depth\": 1}}\n"
        ));
        assert!(prompt.contains("- search:\n  Arguments"));
        let named = CallOptions {
            choice: ToolChoice::Named("search".into()),
            ..CallOptions::default()
        };
        let prompt = tools_system_prompt(&registry, &named).unwrap();
        assert!(!prompt.contains("navigate"));
        let none = CallOptions {
            choice: ToolChoice::None,
            ..CallOptions::default()
        };
        assert_eq!(tools_system_prompt(&registry, &none), None);
    }
}
