//! Limits that keep compiling and matching untrusted grammars bounded.

/// The engine's limits, with documented defaults. Exceeding one is an error
/// ([`crate::CompileError::TooLarge`], [`crate::LimitExceeded`]), never a hang.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineLimits {
    /// Most nodes in a compiled grammar (each literal character, class, call and
    /// repetition copy is one or two). Default: 4,000,000 (about 64 MB).
    pub max_nodes: usize,
    /// Most parser items one input step may create. Unambiguous grammars need a handful;
    /// ambiguous ones need at most a few per earlier position. Default: 1,000,000.
    pub max_items_per_step: usize,
    /// Most items, frames and links the matcher may hold (its rollback history
    /// included). Default: 32,000,000 (about 400 MB).
    pub max_state_items: usize,
    /// Most bytes of token masks a matcher (and its forks) remembers by parse state.
    /// Default: 64 MiB (about 4,000 masks over a 128k vocabulary).
    pub max_mask_cache_bytes: usize,
}

impl Default for EngineLimits {
    fn default() -> EngineLimits {
        EngineLimits {
            max_nodes: 4_000_000,
            max_items_per_step: 1_000_000,
            max_state_items: 32_000_000,
            max_mask_cache_bytes: 64 << 20,
        }
    }
}
