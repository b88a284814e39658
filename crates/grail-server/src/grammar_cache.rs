//! Request grammars kept across requests.
//!
//! An agent sends the same tools (and the same `response_format`) on every turn. Building
//! their grammar and compiling it costs about half a millisecond for eight tools, and a
//! compiled grammar's matchers learn its parse states as they go (see grail-engine's
//! `learned.rs`): a request that finds its grammar here skips the build and the compile,
//! and its masks start from what earlier requests learned instead of cold.
//!
//! Entries are keyed by the request fields that make the grammar (`tools`, `tool_choice`,
//! `parallel_tool_calls`, `response_format`, `grammar`, as JSON text; the server's
//! settings are fixed for its life), and the least recently used entry makes room when
//! the cache is full. Only grammars that compiled are kept (a refused request is planned
//! again, and refused again, each time).
//!
//! Memory: the cache keeps at most a number of entries and a number of compiled nodes
//! over all of them (a grammar larger than the whole budget is used, not kept). An
//! entry holds its grammar, the compiled graph and what its matchers learned
//! for the model's vocabulary — a step cache of at most 1,024 states (about 1 MB, and at
//! most 8 MB of remembered walks) and a mask cache bounded by the engine's
//! `max_mask_cache_bytes` (64 MB by default, reached only by grammars with thousands of
//! distinct parse states).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::json;

use crate::api::ChatRequest;
use crate::backend::RequestGrammar;
use crate::plan::TextCheck;

/// Entries kept by default (`grail serve --grammar-cache`).
pub const DEFAULT_GRAMMAR_CACHE_ENTRIES: usize = 32;

/// Compiled nodes kept by default, over all entries (`grail serve
/// --grammar-cache-nodes`): a kept grammar costs about 100-200 bytes a node (its
/// grammar, graph and what its matchers learned), so about 100-200 MB in all. A
/// 240 KB GBNF grammar of 5,500 rules compiles to about 100,000 nodes; a tool's
/// grammar, a few hundred.
pub const DEFAULT_GRAMMAR_CACHE_NODES: usize = 1_000_000;

/// What a request's constraints became: the grammar of its whole answer (none when
/// unconstrained), what its text must meet beyond it, and the warnings of building it.
#[derive(Debug, Clone)]
pub struct Constraint {
    /// The grammar of the whole answer.
    pub grammar: Option<RequestGrammar>,
    /// What text (not a call) must meet beyond the grammar.
    pub text_check: TextCheck,
    /// Warnings from building it (a lenient schema's weakened keywords).
    pub warnings: Vec<String>,
}

/// The request fields a grammar is made from, as one JSON text.
pub fn constraint_key(request: &ChatRequest) -> String {
    json!({
        "tools": request.tools,
        "tool_choice": request.tool_choice,
        "parallel_tool_calls": request.parallel_tool_calls,
        "response_format": request.response_format,
        "grammar": request.grammar,
    })
    .to_string()
}

/// A bounded map from [`constraint_key`] to [`Constraint`], least recently used out
/// first; shared by the server's requests.
#[derive(Debug)]
pub struct GrammarCache {
    capacity: usize,
    max_nodes: usize,
    inner: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    /// Each key's constraint and when it was last used.
    by_key: HashMap<String, (Arc<Constraint>, u64)>,
    /// Compiled nodes over all entries.
    nodes: usize,
    clock: u64,
    hits: u64,
    misses: u64,
}

impl GrammarCache {
    /// A cache of at most `capacity` grammars (0: keeps none) of at most
    /// [`DEFAULT_GRAMMAR_CACHE_NODES`] compiled nodes in all.
    pub fn new(capacity: usize) -> GrammarCache {
        GrammarCache::with_node_budget(capacity, DEFAULT_GRAMMAR_CACHE_NODES)
    }

    /// A cache of at most `capacity` grammars and `max_nodes` compiled nodes in all
    /// (least recently used out first; a grammar larger than that alone is not kept).
    pub fn with_node_budget(capacity: usize, max_nodes: usize) -> GrammarCache {
        GrammarCache {
            capacity,
            max_nodes,
            inner: Mutex::default(),
        }
    }

    /// The constraint kept for `key`, or the one `build` makes (kept when it succeeds).
    pub fn get_or_build<E>(
        &self,
        key: String,
        build: impl FnOnce() -> Result<Constraint, E>,
    ) -> Result<Arc<Constraint>, E> {
        if self.capacity == 0 {
            return build().map(Arc::new);
        }
        {
            let mut entries = self.lock();
            entries.clock += 1;
            let now = entries.clock;
            if let Some((constraint, used)) = entries.by_key.get_mut(&key) {
                *used = now;
                let constraint = constraint.clone();
                entries.hits += 1;
                return Ok(constraint);
            }
            entries.misses += 1;
        }
        // Built without the lock: a big schema takes milliseconds, and other requests
        // go on meanwhile (two requests with one new grammar may both build it).
        let constraint = Arc::new(build()?);
        let size = nodes(&constraint);
        if size > self.max_nodes {
            return Ok(constraint);
        }
        let mut entries = self.lock();
        if let Some((old, _)) = entries.by_key.remove(&key) {
            entries.nodes -= nodes(&old);
        }
        while !entries.by_key.is_empty()
            && (entries.by_key.len() >= self.capacity || entries.nodes + size > self.max_nodes)
        {
            let Some(oldest) = entries
                .by_key
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(key, _)| key.clone())
            else {
                break;
            };
            if let Some((old, _)) = entries.by_key.remove(&oldest) {
                entries.nodes -= nodes(&old);
            }
        }
        let now = entries.clock;
        entries.nodes += size;
        entries.by_key.insert(key, (constraint.clone(), now));
        Ok(constraint)
    }

    /// Whether a constraint is kept for `key` (without counting a use of it).
    pub fn contains(&self, key: &str) -> bool {
        self.capacity > 0 && self.lock().by_key.contains_key(key)
    }

    /// Compiled nodes kept, over all entries.
    pub fn nodes(&self) -> usize {
        self.lock().nodes
    }

    /// How many lookups found their grammar, and how many built it.
    pub fn hits_and_misses(&self) -> (u64, u64) {
        let entries = self.lock();
        (entries.hits, entries.misses)
    }

    /// How many grammars are kept.
    pub fn len(&self) -> usize {
        self.lock().by_key.len()
    }

    /// True when no grammar is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.inner
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}

/// The compiled nodes `constraint` holds.
fn nodes(constraint: &Constraint) -> usize {
    constraint
        .grammar
        .as_ref()
        .map_or(0, |grammar| grammar.compiled.node_count())
}

impl Default for GrammarCache {
    fn default() -> GrammarCache {
        GrammarCache::new(DEFAULT_GRAMMAR_CACHE_ENTRIES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn constraint(warning: &str) -> Constraint {
        Constraint {
            grammar: None,
            text_check: TextCheck::default(),
            warnings: vec![warning.to_string()],
        }
    }

    #[test]
    fn keeps_what_it_built_and_drops_the_least_recently_used() {
        let cache = GrammarCache::new(2);
        let build = |name: &str| {
            let name = name.to_string();
            move || Ok::<_, ()>(constraint(&name))
        };
        let a = cache.get_or_build("a".into(), build("a")).unwrap();
        cache.get_or_build("b".into(), build("b")).unwrap();
        // "a" again: the same entry, not a new build.
        let again = cache
            .get_or_build("a".into(), || Err::<Constraint, _>(()))
            .unwrap();
        assert!(Arc::ptr_eq(&a, &again));
        // "c" makes room by dropping "b", the least recently used.
        cache.get_or_build("c".into(), build("c")).unwrap();
        assert_eq!(cache.len(), 2);
        assert!(cache.get_or_build("b".into(), || Err(())).is_err());
        assert!(cache.get_or_build("a".into(), || Err(())).is_ok());
        assert_eq!(cache.hits_and_misses(), (2, 4));
    }

    #[test]
    fn the_node_budget_drops_old_grammars_and_never_keeps_one_larger_than_it() {
        let grammar = |repeat: usize| {
            let source = format!("root ::= [a-z]{{{repeat}}}");
            let grammar = grail_grammar::check(&source, &Default::default())
                .grammar
                .unwrap();
            let compiled =
                grail_engine::CompiledGrammar::compile(&grammar, &Default::default()).unwrap();
            Constraint {
                grammar: Some(RequestGrammar::new(grammar, compiled)),
                text_check: TextCheck::default(),
                warnings: Vec::new(),
            }
        };
        let size = nodes(&grammar(100));
        let cache = GrammarCache::with_node_budget(32, size * 2);
        for key in ["a", "b", "c"] {
            cache
                .get_or_build(key.into(), || Ok::<_, ()>(grammar(100)))
                .unwrap();
        }
        assert_eq!((cache.len(), cache.nodes()), (2, size * 2));
        // "a", the oldest, made room.
        assert!(cache.get_or_build("a".into(), || Err(())).is_err());
        // Larger than the whole budget: served, not kept.
        cache
            .get_or_build("big".into(), || Ok::<_, ()>(grammar(1000)))
            .unwrap();
        assert!(cache.get_or_build("big".into(), || Err(())).is_err());
    }

    #[test]
    fn failures_are_not_kept_and_capacity_zero_keeps_nothing() {
        let cache = GrammarCache::new(4);
        assert!(
            cache
                .get_or_build("x".into(), || Err::<Constraint, _>("no"))
                .is_err()
        );
        assert!(cache.is_empty());
        let none = GrammarCache::new(0);
        none.get_or_build("x".into(), || Ok::<_, ()>(constraint("x")))
            .unwrap();
        assert!(none.is_empty());
    }

    #[test]
    fn a_request_with_tools_seen_before_takes_their_compiled_grammar() {
        use crate::plan::{AnswerKind, PlanSettings, plan};
        let request = |tool: &str, question: &str| -> ChatRequest {
            serde_json::from_value(json!({
                "messages": [{"role": "user", "content": question}],
                "tools": [{"type": "function", "function": {
                    "name": tool,
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                                   "required": ["path"]}}}],
                "tool_choice": "required",
            }))
            .unwrap()
        };
        let cache = GrammarCache::default();
        let settings = PlanSettings::default();
        let first = plan(request("read_file", "Read a.txt"), &settings, &cache).unwrap();
        let second = plan(request("read_file", "Read b.txt"), &settings, &cache).unwrap();
        let other = plan(request("open_file", "Read a.txt"), &settings, &cache).unwrap();
        assert_eq!(cache.hits_and_misses(), (1, 2));
        let compiled = |plan: &crate::plan::Plan| plan.grammar.as_ref().unwrap().compiled.clone();
        assert!(Arc::ptr_eq(&compiled(&first), &compiled(&second)));
        assert!(!Arc::ptr_eq(&compiled(&first), &compiled(&other)));
        // The rest of the plan is the request's own.
        assert!(matches!(second.answer, AnswerKind::Tools { .. }));
        let last = |plan: &crate::plan::Plan| plan.messages.last().unwrap().content.clone();
        assert_eq!(last(&second), "Read b.txt");
        // The grammar taken from the cache is the one the tools make.
        let mut matcher = grail_engine::Matcher::new(&compiled(&second));
        assert!(
            matcher
                .accept_str(r#"{"name": "read_file", "arguments": {"path": "b.txt"}}"#)
                .is_ok()
        );
        assert!(matcher.is_accepting());
    }

    #[test]
    fn the_key_tells_apart_every_field_that_makes_the_grammar() {
        let base: ChatRequest =
            serde_json::from_value(json!({"messages": [{"role": "user", "content": "hi"}]}))
                .unwrap();
        let mut keys = vec![constraint_key(&base)];
        let mut with = |change: &dyn Fn(&mut ChatRequest)| {
            let mut request = base.clone();
            change(&mut request);
            keys.push(constraint_key(&request));
        };
        with(&|request| request.tools = Some(vec![json!({"name": "a"})]));
        with(&|request| request.tool_choice = Some(json!("required")));
        with(&|request| request.parallel_tool_calls = Some(true));
        with(&|request| request.response_format = Some(json!({"type": "json_object"})));
        with(&|request| request.grammar = Some("root ::= \"x\"".into()));
        let distinct: std::collections::HashSet<&String> = keys.iter().collect();
        assert_eq!(distinct.len(), keys.len(), "{keys:#?}");
        // The conversation is not part of the key.
        let mut other = base.clone();
        other.messages.clear();
        assert_eq!(constraint_key(&other), keys[0]);
    }
}
