//! Limits that keep checking untrusted grammars bounded in time and memory.

use grail_syntax::ParseLimits;

/// Every limit the grammar front end enforces, with documented defaults. Exceeding one is
/// an error that names the limit, never a hang, a crash or a silent change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Parser limits: source size, nesting depth, error count.
    pub parse: ParseLimits,
    /// Largest repetition count in `{m,n}`. Default: 100,000.
    pub max_repetition_count: u64,
    /// Most rules in one grammar. Default: 100,000.
    pub max_rules: usize,
    /// Most diagnostics reported; the rest are counted in a final note. Default: 200.
    pub max_diagnostics: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            parse: ParseLimits::default(),
            max_repetition_count: 100_000,
            max_rules: 100_000,
            max_diagnostics: 200,
        }
    }
}
