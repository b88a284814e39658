//! Reading `tool_choice` and `think` as users write them: one reading for the command
//! line, the server and the Python and Node packages.

use std::str::FromStr;

use serde_json::Value;

use crate::error::ToolsError;
use crate::grammar::{Think, ToolChoice};
use crate::registry::ToolRegistry;

impl FromStr for ToolChoice {
    type Err = ToolsError;

    /// `auto`, `required`, `none`, or the name of the one tool to call.
    fn from_str(text: &str) -> Result<ToolChoice, ToolsError> {
        match text {
            "auto" => Ok(ToolChoice::Auto),
            "required" => Ok(ToolChoice::Required),
            "none" => Ok(ToolChoice::None),
            "" => Err(ToolsError::Options(
                "tool_choice is empty; use auto, required, none or a tool's name".into(),
            )),
            name => Ok(ToolChoice::Named(name.to_string())),
        }
    }
}

impl ToolChoice {
    /// OpenAI's `tool_choice` field: absent or `null` (auto), `"auto"`, `"required"`,
    /// `"none"`, or `{"type": "function", "function": {"name": …}}`. A bare string other
    /// than the three is refused here (OpenAI names a tool only in the object form).
    pub fn from_openai(value: Option<&Value>) -> Result<ToolChoice, ToolsError> {
        match value {
            None | Some(Value::Null) => Ok(ToolChoice::Auto),
            Some(Value::String(text)) => match text.as_str() {
                "auto" | "required" | "none" => text.parse(),
                other => Err(ToolsError::Options(format!(
                    "tool_choice `{other}` is unknown; use auto, required, none or \
                     {{\"type\": \"function\", \"function\": {{\"name\": …}}}}"
                ))),
            },
            Some(object) => match object.pointer("/function/name").and_then(Value::as_str) {
                Some(name) if !name.is_empty() => Ok(ToolChoice::Named(name.to_string())),
                _ => Err(ToolsError::Options(
                    "tool_choice as an object must be {\"type\": \"function\", \"function\": \
                     {\"name\": …}}"
                        .into(),
                )),
            },
        }
    }

    /// Whether this choice can be met with these tools: a call needs tools, and a named
    /// tool must be one of them.
    pub fn check_against(&self, tools: Option<&ToolRegistry>) -> Result<(), ToolsError> {
        match (self, tools) {
            (ToolChoice::Required | ToolChoice::Named(_), None) => Err(ToolsError::Options(
                "tool_choice asks for a call, but there are no tools".into(),
            )),
            (ToolChoice::Named(name), Some(tools)) if tools.get(name).is_none() => {
                Err(ToolsError::Options(format!(
                    "tool_choice names `{name}`, which is not among the tools ({})",
                    tools
                        .tools
                        .iter()
                        .map(|tool| tool.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )))
            }
            _ => Ok(()),
        }
    }
}

impl FromStr for Think {
    type Err = ToolsError;

    /// `off`, `optional`, `required` or `forced`.
    fn from_str(text: &str) -> Result<Think, ToolsError> {
        match text {
            "off" => Ok(Think::Off),
            "optional" => Ok(Think::Optional),
            "required" => Ok(Think::Required),
            "forced" => Ok(Think::Forced),
            other => Err(ToolsError::Options(format!(
                "think must be \"off\", \"optional\", \"required\" or \"forced\", not {other:?}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn tool_choice_reads_the_three_words_and_names() {
        assert_eq!("auto".parse::<ToolChoice>().unwrap(), ToolChoice::Auto);
        assert_eq!(
            "required".parse::<ToolChoice>().unwrap(),
            ToolChoice::Required
        );
        assert_eq!("none".parse::<ToolChoice>().unwrap(), ToolChoice::None);
        assert_eq!(
            "search".parse::<ToolChoice>().unwrap(),
            ToolChoice::Named("search".into())
        );
        assert!("".parse::<ToolChoice>().is_err());
    }

    #[test]
    fn openai_tool_choice_reads_strings_and_the_object_form() {
        let read = |value: Value| ToolChoice::from_openai(Some(&value));
        assert_eq!(ToolChoice::from_openai(None).unwrap(), ToolChoice::Auto);
        assert_eq!(read(Value::Null).unwrap(), ToolChoice::Auto);
        assert_eq!(read(json!("required")).unwrap(), ToolChoice::Required);
        assert_eq!(
            read(json!({"type": "function", "function": {"name": "f"}})).unwrap(),
            ToolChoice::Named("f".into())
        );
        assert!(
            read(json!("f"))
                .unwrap_err()
                .to_string()
                .contains("`f` is unknown")
        );
        assert!(read(json!({"type": "function"})).is_err());
        assert!(read(json!(3)).is_err());
    }

    #[test]
    fn a_choice_is_checked_against_the_tools() {
        let tools = ToolRegistry::from_value(&json!([{"name": "f", "parameters": {}}])).unwrap();
        assert!(ToolChoice::Required.check_against(None).is_err());
        assert!(ToolChoice::Auto.check_against(None).is_ok());
        assert!(
            ToolChoice::Named("f".into())
                .check_against(Some(&tools))
                .is_ok()
        );
        let error = ToolChoice::Named("g".into())
            .check_against(Some(&tools))
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "tool_choice names `g`, which is not among the tools (f)"
        );
    }

    #[test]
    fn think_reads_its_four_words() {
        assert_eq!("off".parse::<Think>().unwrap(), Think::Off);
        assert_eq!("optional".parse::<Think>().unwrap(), Think::Optional);
        assert_eq!("required".parse::<Think>().unwrap(), Think::Required);
        assert_eq!("forced".parse::<Think>().unwrap(), Think::Forced);
        assert!(
            "maybe"
                .parse::<Think>()
                .unwrap_err()
                .to_string()
                .contains("not \"maybe\"")
        );
    }
}
