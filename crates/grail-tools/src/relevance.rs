//! Ranking a registry's tools against the user's query, to offer a model only the few
//! that fit when the registry is large: BM25 (Robertson and Zaragoza's ranking function,
//! `k1` = 1.2, `b` = 0.75, the non-negative IDF `ln(1 + (N - n + 0.5) / (n + 0.5))`) over
//! one document per tool: its name split into words (`get_weather`, `getWeather` →
//! `get weather`), its description, and its parameters' names, descriptions and string
//! enum values. Words are lowercased runs of letters and digits, a plural `s` taken off
//! words longer than three letters, and a few English function words left out.
//!
//! A small scorer written here rather than a search crate: a registry is tens of short
//! documents, scored once per request, and the crates of the field bring tokenizers,
//! stemmers and indexes this does not need.

use std::collections::HashMap;

use serde_json::Value;

use crate::registry::{Tool, ToolRegistry};

/// BM25's term-frequency saturation.
const K1: f64 = 1.2;
/// BM25's length normalisation.
const B: f64 = 0.75;

/// Words too common to tell tools apart.
const STOP_WORDS: [&str; 24] = [
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "is", "it", "me", "my",
    "of", "on", "or", "the", "this", "to", "what", "with", "you",
];

/// A tool's score for a query.
#[derive(Debug, Clone, PartialEq)]
pub struct RankedTool {
    /// The tool.
    pub name: String,
    /// Its BM25 score (0 when it shares no word with the query).
    pub score: f64,
}

/// The registry's tools ranked for `query`, best first (ties in registry order).
pub fn rank_tools(registry: &ToolRegistry, query: &str) -> Vec<RankedTool> {
    let documents: Vec<Vec<String>> = registry.tools.iter().map(tool_words).collect();
    let count = documents.len() as f64;
    let average = documents.iter().map(Vec::len).sum::<usize>() as f64 / count.max(1.0);
    let mut query_words = words(query);
    query_words.sort_unstable();
    query_words.dedup();
    // Each query word's IDF, from the documents that hold it, once.
    let idf: HashMap<&str, f64> = query_words
        .iter()
        .map(|word| {
            let holding = documents
                .iter()
                .filter(|document| document.contains(word))
                .count() as f64;
            let idf = (1.0 + (count - holding + 0.5) / (holding + 0.5)).ln();
            (word.as_str(), idf)
        })
        .collect();
    let mut ranked: Vec<RankedTool> = registry
        .tools
        .iter()
        .zip(&documents)
        .map(|(tool, document)| {
            let mut frequency: HashMap<&str, f64> = HashMap::new();
            for word in document {
                *frequency.entry(word.as_str()).or_default() += 1.0;
            }
            let length = document.len() as f64;
            let score = query_words
                .iter()
                .filter_map(|word| frequency.get(word.as_str()).map(|&found| (word, found)))
                .map(|(word, found)| {
                    let norm = K1 * (1.0 - B + B * length / average.max(1.0));
                    idf[word.as_str()] * found * (K1 + 1.0) / (found + norm)
                })
                .fold(0.0, |total, part| total + part);
            RankedTool {
                name: tool.name.clone(),
                score,
            }
        })
        .collect();
    // A stable sort keeps the registry's order among equal scores.
    ranked.sort_by(|first, second| second.score.total_cmp(&first.score));
    ranked
}

/// The `k` tools that fit `query` best (see [`rank_tools`]), kept in registry order, and
/// the whole ranking; the registry as it is when it holds `k` tools or fewer.
pub fn top_tools(
    registry: &ToolRegistry,
    query: &str,
    k: usize,
) -> (ToolRegistry, Vec<RankedTool>) {
    let ranking = rank_tools(registry, query);
    if registry.tools.len() <= k {
        return (registry.clone(), ranking);
    }
    let best: Vec<&str> = ranking
        .iter()
        .take(k)
        .map(|ranked| ranked.name.as_str())
        .collect();
    let kept = ToolRegistry {
        tools: registry
            .tools
            .iter()
            .filter(|tool| best.contains(&tool.name.as_str()))
            .cloned()
            .collect(),
    };
    (kept, ranking)
}

/// The words of a tool's document (see the module doc).
fn tool_words(tool: &Tool) -> Vec<String> {
    let mut text = split_name(&tool.name);
    text.push(' ');
    text.push_str(&tool.description);
    if let Some(Value::Object(properties)) = tool.parameters.get("properties") {
        for (name, property) in properties {
            text.push(' ');
            text.push_str(&split_name(name));
            if let Some(Value::String(description)) = property.get("description") {
                text.push(' ');
                text.push_str(description);
            }
            if let Some(Value::Array(values)) = property.get("enum") {
                for value in values.iter().filter_map(Value::as_str) {
                    text.push(' ');
                    text.push_str(&split_name(value));
                }
            }
        }
    }
    words(&text)
}

/// `name` with its parts apart: `_`, `-`, `.` as spaces, a space before each capital
/// that follows a lowercase letter.
fn split_name(name: &str) -> String {
    let mut split = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if c.is_uppercase() && previous_lower {
            split.push(' ');
        }
        previous_lower = c.is_lowercase();
        split.push(if matches!(c, '_' | '-' | '.') { ' ' } else { c });
    }
    split
}

/// The words of `text` (see the module doc).
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .filter(|word| !STOP_WORDS.contains(&word.as_str()))
        .map(
            |word| match word.len() > 3 && word.ends_with('s') && !word.ends_with("ss") {
                true => word[..word.len() - 1].to_string(),
                false => word,
            },
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry() -> ToolRegistry {
        ToolRegistry::from_json_text(
            r#"[
            {"name": "get_weather", "description": "Current weather and forecast for a city",
             "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
            {"name": "sendEmail", "description": "Send an email to a contact",
             "parameters": {"type": "object", "properties": {"to": {"type": "string"},
                "body": {"type": "string", "description": "The message"}}}},
            {"name": "read_file", "description": "Read a file from disk",
             "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}},
            {"name": "list_files", "description": "List the files of a directory",
             "parameters": {"type": "object", "properties": {"directory": {"type": "string"}}}}
        ]"#,
        )
        .unwrap()
    }

    #[test]
    fn the_tool_whose_words_the_query_uses_ranks_first() {
        let registry = registry();
        let best = |query: &str| rank_tools(&registry, query)[0].name.clone();
        assert_eq!(best("What's the weather in Oslo?"), "get_weather");
        assert_eq!(best("Email Anna that I am late"), "sendEmail");
        assert_eq!(best("List the files in src"), "list_files");
        assert_eq!(best("read README.md"), "read_file");
        // No shared word: every score 0, the registry's order.
        let none = rank_tools(&registry, "hello");
        assert!(none.iter().all(|ranked| ranked.score == 0.0));
        assert_eq!(none[0].name, "get_weather");
    }

    #[test]
    fn the_top_k_keep_registry_order() {
        let registry = registry();
        let (kept, ranking) = top_tools(&registry, "read the files of the directory", 2);
        let names: Vec<&str> = kept.tools.iter().map(|tool| tool.name.as_str()).collect();
        assert_eq!(names, ["read_file", "list_files"]);
        assert_eq!(ranking.len(), 4);
        let (all, _) = top_tools(&registry, "anything", 10);
        assert_eq!(all.tools.len(), 4);
    }

    #[test]
    fn names_and_words_are_split_as_documented() {
        assert_eq!(split_name("getWeather_now.v2"), "get Weather now v2");
        assert_eq!(
            words("The Files, cities; class"),
            ["file", "citie", "class"]
        );
    }
}
