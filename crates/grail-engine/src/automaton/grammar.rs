//! A compiled grammar as users hold it: the immutable graph (`graph/`) and beside it the
//! store of what its matchers learn (`learned.rs`), both shared by every clone.

use std::sync::Arc;

use grail_grammar::Grammar;

use crate::automaton::learned::LearnedStore;
use crate::compile::prepare::{Prepared, prepare};
use crate::compile::{CompileOptions, compile_graph};
use crate::error::CompileError;
use crate::graph::GrammarGraph;

/// A grammar compiled for matching, cheap to clone (shared), `Send + Sync`: its graph
/// never changes; beside it, the learned store (parse states, transitions, walks, masks)
/// that every matcher of the grammar, on any thread, adds to and reads from.
#[derive(Debug, Clone)]
pub struct CompiledGrammar {
    pub(crate) inner: Arc<GrammarGraph>,
    pub(crate) learned: Arc<LearnedStore>,
}

impl CompiledGrammar {
    /// Compiles a checked grammar IR.
    pub fn compile(
        grammar: &Grammar,
        options: &CompileOptions<'_>,
    ) -> Result<CompiledGrammar, CompileError> {
        CompiledGrammar::compile_prepared(&prepare(grammar), options)
    }

    /// Compiles a grammar the way [`prepare`] left it.
    pub(crate) fn compile_prepared(
        prepared: &Prepared<'_>,
        options: &CompileOptions<'_>,
    ) -> Result<CompiledGrammar, CompileError> {
        Ok(CompiledGrammar {
            inner: Arc::new(compile_graph(prepared, options)?),
            learned: Arc::default(),
        })
    }

    /// Loads ([`grail_grammar::load`]) and compiles GBNF text with default options, rooted
    /// at `root`; a grammar with errors gives [`CompileError::Invalid`] with every error
    /// located (warnings do not stop it).
    pub fn from_gbnf(source: &str) -> Result<CompiledGrammar, CompileError> {
        let loaded = grail_grammar::load(source, &grail_grammar::CheckOptions::default())?;
        CompiledGrammar::compile(&loaded.grammar, &CompileOptions::default())
    }

    /// How many nodes the compiled graph has (a size measure).
    pub fn node_count(&self) -> usize {
        self.inner.nodes.len()
    }

    /// The name of the start rule.
    pub fn root_name(&self) -> &str {
        &self.inner.rules[self.inner.root as usize].name
    }

    /// True when the grammar matches at least one string.
    pub fn has_matches(&self) -> bool {
        let graph = &self.inner;
        graph.productive[graph.rules[graph.root as usize].start as usize]
    }
}
