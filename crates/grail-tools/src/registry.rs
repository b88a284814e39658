//! Tool registries: the OpenAI `tools` array, a bare list of functions, or an MCP
//! `tools/list` result, read into one list of tools with validated, distinct names.

use serde_json::{Map, Value};

use crate::error::ToolsError;

/// Longest tool name accepted (MCP's recommendation; OpenAI allows 64).
pub const MAX_NAME_LEN: usize = 128;

/// One tool: its name, description and the JSON Schema of its arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    /// The name the model writes (`[A-Za-z0-9_.-]`, 1 to [`MAX_NAME_LEN`] characters).
    pub name: String,
    /// What the tool does (empty when not given).
    pub description: String,
    /// The JSON Schema of the arguments (an object schema; `{"type": "object",
    /// "properties": {}, "additionalProperties": false}` when the registry gives none:
    /// a tool without parameters takes `{}`).
    pub parameters: Value,
    /// `x-grail-markers`: words or phrases of the user's query that let this tool into
    /// the pool (see [`crate::filter`]); empty: always in.
    pub markers: Vec<String>,
    /// `x-grail-fallback`: a tool offered only when few canonical tools are (see
    /// [`crate::filter`]).
    pub fallback: bool,
}

impl Tool {
    /// The tool as an entry of OpenAI's `tools` (`{"type": "function", "function":
    /// {"name", "description", "parameters"}}`), as chat templates with a tool section
    /// read it (Grail's own `x-grail-…` keys left out).
    pub fn to_openai(&self) -> Value {
        serde_json::json!({
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        })
    }
}

/// The tools of a registry, in the order given.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolRegistry {
    /// The tools, names distinct.
    pub tools: Vec<Tool>,
}

impl ToolRegistry {
    /// Reads a registry from JSON text (see [`ToolRegistry::from_value`]).
    pub fn from_json_text(text: &str) -> Result<ToolRegistry, ToolsError> {
        let value: Value = serde_json::from_str(text).map_err(|error| ToolsError::Json {
            message: error.to_string(),
            line: error.line(),
            column: error.column(),
        })?;
        ToolRegistry::from_value(&value)
    }

    /// Reads a registry: an array of OpenAI tools (`{"type": "function", "function":
    /// {name, description, parameters}}`), of bare functions (`{name, description,
    /// parameters}`) or of MCP tools (`{name, description, inputSchema}`), in any mix;
    /// or an object holding such an array under `tools` (an MCP `tools/list` result, or
    /// an OpenAI request body).
    pub fn from_value(value: &Value) -> Result<ToolRegistry, ToolsError> {
        let list = match value {
            Value::Array(list) => list,
            Value::Object(object) => match object.get("tools") {
                Some(Value::Array(list)) => list,
                _ => {
                    return Err(ToolsError::Registry {
                        pointer: String::new(),
                        message: "an object registry needs a `tools` array (an MCP `tools/list` result or an OpenAI request)".into(),
                    });
                }
            },
            _ => {
                return Err(ToolsError::Registry {
                    pointer: String::new(),
                    message:
                        "a tool registry is an array of tools, or an object with a `tools` array"
                            .into(),
                });
            }
        };
        let pointer_base = if value.is_object() { "/tools" } else { "" };
        let mut tools: Vec<Tool> = Vec::with_capacity(list.len());
        for (index, entry) in list.iter().enumerate() {
            let pointer = format!("{pointer_base}/{index}");
            let tool = read_tool(entry, &pointer)?;
            if let Some(first) = tools.iter().position(|known| known.name == tool.name) {
                return Err(ToolsError::Registry {
                    pointer,
                    message: format!(
                        "the tool name `{}` is used twice (also by tool {first}); a model could not tell them apart",
                        tool.name
                    ),
                });
            }
            tools.push(tool);
        }
        if tools.is_empty() {
            return Err(ToolsError::Registry {
                pointer: pointer_base.to_string(),
                message: "the registry has no tools".into(),
            });
        }
        Ok(ToolRegistry { tools })
    }

    /// The tools `choice` offers the model: none for `none`, the named one alone (none
    /// when it is not here), all of them otherwise.
    pub fn offered(&self, choice: &crate::ToolChoice) -> Vec<&Tool> {
        match choice {
            crate::ToolChoice::None => Vec::new(),
            crate::ToolChoice::Named(name) => self.get(name).into_iter().collect(),
            crate::ToolChoice::Auto | crate::ToolChoice::Required => self.tools.iter().collect(),
        }
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|tool| tool.name == name)
    }
}

/// One entry of a registry, in any of the three shapes.
fn read_tool(entry: &Value, pointer: &str) -> Result<Tool, ToolsError> {
    let fail = |message: String| ToolsError::Registry {
        pointer: pointer.to_string(),
        message,
    };
    let Value::Object(object) = entry else {
        return Err(fail("a tool is a JSON object".into()));
    };
    // OpenAI: the function sits under `function`.
    let (function, pointer) = match object.get("function") {
        Some(Value::Object(function)) => {
            if let Some(kind) = object.get("type")
                && kind != "function"
            {
                return Err(fail(format!(
                    "tool type {kind} is not supported (only \"function\")"
                )));
            }
            (function, format!("{pointer}/function"))
        }
        Some(_) => return Err(fail("`function` must be an object".into())),
        None => (object, pointer.to_string()),
    };
    let fail = |message: String| ToolsError::Registry {
        pointer: pointer.clone(),
        message,
    };
    let name = match function.get("name") {
        Some(Value::String(name)) => name.clone(),
        Some(_) => return Err(fail("`name` must be a string".into())),
        None => return Err(fail("a tool needs a `name`".into())),
    };
    check_name(&name).map_err(|message| fail(format!("tool name `{name}`: {message}")))?;
    let description = match function.get("description") {
        Some(Value::String(text)) => text.clone(),
        None | Some(Value::Null) => String::new(),
        Some(_) => return Err(fail("`description` must be a string".into())),
    };
    let parameters = match (function.get("parameters"), function.get("inputSchema")) {
        (Some(_), Some(_)) => {
            return Err(fail(
                "a tool has `parameters` (OpenAI) or `inputSchema` (MCP), not both".into(),
            ));
        }
        (Some(schema), None) | (None, Some(schema)) => match schema {
            Value::Object(_) | Value::Bool(_) => schema.clone(),
            Value::Null => no_parameters(),
            _ => return Err(fail("the arguments' schema must be a JSON object".into())),
        },
        (None, None) => no_parameters(),
    };
    let markers = read_markers(function, object, &pointer)?;
    let fallback = match function
        .get("x-grail-fallback")
        .or(object.get("x-grail-fallback"))
    {
        None => false,
        Some(Value::Bool(fallback)) => *fallback,
        Some(_) => return Err(fail("`x-grail-fallback` must be true or false".into())),
    };
    Ok(Tool {
        name,
        description,
        parameters,
        markers,
        fallback,
    })
}

/// `x-grail-markers` on the function or on the tool entry.
fn read_markers(
    function: &Map<String, Value>,
    entry: &Map<String, Value>,
    pointer: &str,
) -> Result<Vec<String>, ToolsError> {
    let Some(markers) = function
        .get("x-grail-markers")
        .or(entry.get("x-grail-markers"))
    else {
        return Ok(Vec::new());
    };
    let fail = || ToolsError::Registry {
        pointer: format!("{pointer}/x-grail-markers"),
        message: "`x-grail-markers` must be an array of non-empty strings".into(),
    };
    let Value::Array(list) = markers else {
        return Err(fail());
    };
    list.iter()
        .map(|marker| match marker {
            Value::String(text) if !text.trim().is_empty() => Ok(text.clone()),
            _ => Err(fail()),
        })
        .collect()
}

/// The schema of a tool that takes no arguments: the empty object only.
fn no_parameters() -> Value {
    serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false})
}

/// Why `name` cannot be a tool name, if it cannot.
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a tool name cannot be empty".into());
    }
    if name.chars().count() > MAX_NAME_LEN {
        return Err(format!("longer than {MAX_NAME_LEN} characters"));
    }
    if let Some(bad) = name
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Err(format!(
            "`{}` is not allowed (letters, digits, `_`, `-` and `.` only)",
            bad.escape_debug()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_the_three_registry_shapes() {
        let openai = json!([{"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]);
        let bare = json!([{"name": "get_weather", "description": "Weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]);
        let mcp = json!({"tools": [{"name": "get_weather", "description": "Weather", "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}]});
        let expected = ToolRegistry::from_value(&openai).unwrap();
        assert_eq!(expected.tools[0].name, "get_weather");
        assert_eq!(
            expected.tools[0].parameters["properties"]["city"]["type"],
            "string"
        );
        assert_eq!(ToolRegistry::from_value(&bare).unwrap(), expected);
        assert_eq!(ToolRegistry::from_value(&mcp).unwrap(), expected);
    }

    #[test]
    fn a_tool_without_parameters_takes_the_empty_object() {
        let registry = ToolRegistry::from_value(&json!([{"name": "get_now"}])).unwrap();
        assert_eq!(registry.tools[0].parameters, no_parameters());
    }

    #[test]
    fn refuses_bad_and_duplicate_names_with_where() {
        let error = ToolRegistry::from_value(&json!([{"name": "a b"}])).unwrap_err();
        assert_eq!(
            error.to_string(),
            "tool registry at /0: tool name `a b`: ` ` is not allowed (letters, digits, `_`, `-` and `.` only)"
        );
        let error = ToolRegistry::from_value(&json!({"tools": [{"name": "x"}, {"name": "x"}]}))
            .unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("tool registry at /tools/1: the tool name `x` is used twice"),
            "{error}"
        );
        assert!(ToolRegistry::from_value(&json!([])).is_err());
        assert!(
            ToolRegistry::from_value(
                &json!([{"type": "code_interpreter", "function": {"name": "x"}}])
            )
            .is_err()
        );
        assert!(
            ToolRegistry::from_value(&json!([{"name": "x", "parameters": {}, "inputSchema": {}}]))
                .is_err()
        );
    }

    #[test]
    fn reads_markers_and_fallbacks() {
        let registry = ToolRegistry::from_value(&json!([
            {"name": "request_location_from_user", "x-grail-markers": ["near me", "nearby"]},
            {"type": "function", "function": {"name": "request_new_executor"}, "x-grail-fallback": true}
        ]))
        .unwrap();
        assert_eq!(registry.tools[0].markers, ["near me", "nearby"]);
        assert!(registry.tools[1].fallback);
        assert!(
            ToolRegistry::from_value(&json!([{"name": "x", "x-grail-markers": "near"}])).is_err()
        );
    }
}
