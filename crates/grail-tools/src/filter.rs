//! The tool-pool filter (seed 001): escape-hatch tools take part only when the user's
//! query asks for them, and fallback tools only when few canonical tools are offered.
//! Even with a perfect grammar, a model offered `request_location_from_user` for "create
//! folder /tmp/x" may pick it; taking such tools out of the pool is what took one agent's
//! benchmark from 80% to 100%.
//!
//! Per tool, in the registry: `x-grail-markers` (words or phrases; the tool stays only
//! when the query contains one of them as whole words, case-insensitively: "qua" is not
//! found in "qualcosa") and `x-grail-fallback: true` (the tool stays only when fewer than
//! [`PoolFilter::fallback_below`] canonical tools, those with neither, are in the pool).
//! A pure function of the registry and the query.

use crate::registry::{Tool, ToolRegistry};

/// When fallback tools stay (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolFilter {
    /// Fallback tools stay only when fewer canonical tools than this are in the pool
    /// (seed 001 drops `request_new_executor` from three canonical tools on).
    pub fallback_below: usize,
}

impl Default for PoolFilter {
    fn default() -> PoolFilter {
        PoolFilter { fallback_below: 3 }
    }
}

/// What the filter kept and why it dropped the rest.
#[derive(Debug, Clone, PartialEq)]
pub struct FilteredPool {
    /// The tools kept, in registry order.
    pub kept: ToolRegistry,
    /// The tools dropped, each with the reason.
    pub dropped: Vec<(String, String)>,
}

impl PoolFilter {
    /// Filters `registry` for a user's `query`.
    pub fn apply(&self, registry: &ToolRegistry, query: &str) -> FilteredPool {
        let query = query.to_lowercase();
        let canonical = registry
            .tools
            .iter()
            .filter(|tool| is_canonical(tool))
            .count();
        let mut kept = Vec::new();
        let mut dropped = Vec::new();
        for tool in &registry.tools {
            if !tool.markers.is_empty()
                && !tool
                    .markers
                    .iter()
                    .any(|marker| contains_words(&query, &marker.to_lowercase()))
            {
                dropped.push((
                    tool.name.clone(),
                    format!(
                        "the query has none of its markers ({})",
                        tool.markers.join(", ")
                    ),
                ));
                continue;
            }
            if tool.fallback && canonical >= self.fallback_below {
                dropped.push((
                    tool.name.clone(),
                    format!(
                        "a fallback, and {canonical} canonical tools are offered (it stays below {})",
                        self.fallback_below
                    ),
                ));
                continue;
            }
            kept.push(tool.clone());
        }
        FilteredPool {
            kept: ToolRegistry { tools: kept },
            dropped,
        }
    }
}

/// A tool with neither markers nor the fallback flag.
fn is_canonical(tool: &Tool) -> bool {
    tool.markers.is_empty() && !tool.fallback
}

/// True when `words` occurs in `text` with no letter or digit right before or after it.
fn contains_words(text: &str, words: &str) -> bool {
    let words = words.trim();
    if words.is_empty() {
        return false;
    }
    text.match_indices(words).any(|(start, found)| {
        let before = text[..start].chars().next_back();
        let after = text[start + found.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn registry() -> ToolRegistry {
        ToolRegistry::from_value(&json!([
            {"name": "navigate"},
            {"name": "search"},
            {"name": "file"},
            {"name": "request_new_executor", "x-grail-fallback": true},
            {"name": "request_location_from_user", "x-grail-markers": ["near me", "nearby", "here", "qua", "vicino"]},
            {"name": "undo_last_turn", "x-grail-markers": ["annulla", "rollback", "undo"]}
        ]))
        .unwrap()
    }

    fn kept(query: &str, filter: PoolFilter) -> Vec<String> {
        filter
            .apply(&registry(), query)
            .kept
            .tools
            .into_iter()
            .map(|tool| tool.name)
            .collect()
    }

    #[test]
    fn marker_tools_stay_only_when_the_query_names_a_marker() {
        assert_eq!(
            kept("create folder /tmp/x", PoolFilter::default()),
            ["navigate", "search", "file"]
        );
        assert_eq!(
            kept("find a pharmacy near me", PoolFilter::default()),
            ["navigate", "search", "file", "request_location_from_user"]
        );
        assert!(
            kept("please UNDO that", PoolFilter::default()).contains(&"undo_last_turn".to_string())
        );
    }

    #[test]
    fn markers_match_whole_words_only() {
        // "qua" is not in "qualcosa", "here" is not in "where" or "there".
        assert!(
            !kept("fammi qualcosa", PoolFilter::default())
                .contains(&"request_location_from_user".to_string())
        );
        assert!(
            !kept("where is the file? there", PoolFilter::default())
                .contains(&"request_location_from_user".to_string())
        );
        assert!(
            kept("cosa c'è qua?", PoolFilter::default())
                .contains(&"request_location_from_user".to_string())
        );
        assert!(
            kept("is it nearby.", PoolFilter::default())
                .contains(&"request_location_from_user".to_string())
        );
        assert!(
            !kept("nearbyness", PoolFilter::default())
                .contains(&"request_location_from_user".to_string())
        );
        // A phrase must appear as written, across its space.
        assert!(
            !kept("near to me", PoolFilter::default())
                .contains(&"request_location_from_user".to_string())
        );
    }

    #[test]
    fn fallbacks_stay_only_below_the_canonical_count() {
        assert!(
            !kept("anything", PoolFilter::default()).contains(&"request_new_executor".to_string())
        );
        assert!(
            kept("anything", PoolFilter { fallback_below: 4 })
                .contains(&"request_new_executor".to_string())
        );
        let few = ToolRegistry::from_value(&json!([
            {"name": "navigate"},
            {"name": "request_new_executor", "x-grail-fallback": true}
        ]))
        .unwrap();
        let pool = PoolFilter::default().apply(&few, "anything");
        assert_eq!(pool.kept.tools.len(), 2);
    }

    #[test]
    fn every_dropped_tool_says_why() {
        let pool = PoolFilter::default().apply(&registry(), "create folder /tmp/x");
        let dropped: Vec<&str> = pool.dropped.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(
            dropped,
            [
                "request_new_executor",
                "request_location_from_user",
                "undo_last_turn"
            ]
        );
        assert!(pool.dropped[0].1.contains("3 canonical tools"));
        assert!(pool.dropped[1].1.contains("near me"));
    }

    #[test]
    fn the_filter_is_a_pure_function() {
        let first = PoolFilter::default().apply(&registry(), "near me");
        let second = PoolFilter::default().apply(&registry(), "near me");
        assert_eq!(first, second);
    }
}
