//! Findings of the grammar checks, as data, and their severity for each target engine.

use grail_syntax::{Diagnostic, Severity, Span};

/// Which engine the grammar must work in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Target {
    /// Grail's own engine; llama.cpp portability problems are notes.
    #[default]
    Grail,
    /// llama.cpp (current master): the grammar is accepted exactly when llama.cpp's
    /// parser and `llama_grammar_init` accept it.
    LlamaCpp,
}

/// What llama.cpp does with a left-recursive cycle of the grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LlamaLeftRecursion {
    /// Its left-recursion check finds the cycle and refuses the grammar.
    Refused,
    /// Its check misses the cycle, and its matcher expands it and loops forever (memory
    /// grows until the process dies).
    Loops,
    /// Its check misses the cycle and its matcher handles it: every call on the cycle is
    /// the last element of its alternative, or the cycle is never expanded.
    Accepted,
}

/// What a check found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FindingKind {
    /// A reference to a rule that is not defined.
    #[error("rule `{name}` is not defined")]
    RuleUndefined {
        /// The missing name.
        name: String,
        /// A defined name close to it.
        suggestion: Option<String>,
    },
    /// A rule that is not defined, used only where a repetition drops it (`foo{0}`).
    #[error(
        "rule `{name}` is not defined; its only uses are repeated zero times, so they match nothing and are dropped"
    )]
    RuleUndefinedUnused {
        /// The missing name.
        name: String,
    },
    /// The start rule is not defined.
    #[error("no `{root}` rule: generation starts from `{root}`")]
    RootMissing {
        /// The start rule's name.
        root: String,
        /// A defined name close to it.
        suggestion: Option<String>,
    },
    /// `{m,n}` with m > n.
    #[error("repetition `{{{min},{max}}}` has its minimum above its maximum")]
    RepetitionBoundsReversed {
        /// The minimum as written.
        min: u64,
        /// The maximum as written.
        max: u64,
    },
    /// A repetition count above Grail's limit.
    #[error("repetition count {count} is above the limit of {limit}")]
    RepetitionTooLarge {
        /// The count.
        count: u64,
        /// [`crate::Limits::max_repetition_count`].
        limit: u64,
    },
    /// A repetition maximum above Grail's limit, read as unbounded (as llama.cpp reads
    /// every maximum above 2000).
    #[error("repetition maximum {max} is above the limit of {limit}, so it is read as unbounded")]
    RepetitionMaximumAboveLimit {
        /// The maximum as written.
        max: u64,
        /// [`crate::Limits::max_repetition_count`].
        limit: u64,
    },
    /// `{m,18446744073709551615}`: llama.cpp's own marker for "no maximum".
    #[error(
        "`{{{min},18446744073709551615}}` has no maximum: llama.cpp uses that number for \"unbounded\""
    )]
    RepetitionNoMaximum {
        /// The minimum.
        min: u64,
    },
    /// More rules than the limit.
    #[error("the grammar has {count} rules; the limit is {limit}")]
    TooManyRules {
        /// How many.
        count: usize,
        /// [`crate::Limits::max_rules`].
        limit: usize,
    },
    /// A rule defined more than once; the last definition is the one that counts.
    #[error("rule `{name}` is defined more than once; the last definition is used")]
    RuleDuplicate {
        /// The rule's name.
        name: String,
    },
    /// A rule nothing refers to.
    #[error("rule `{name}` is never used")]
    RuleUnused {
        /// The rule's name.
        name: String,
    },
    /// A rule that only unreachable rules refer to.
    #[error("rule `{name}` is not reachable from `{root}`")]
    RuleUnreachable {
        /// The rule's name.
        name: String,
        /// The start rule's name.
        root: String,
    },
    /// `[]` or `[^]`.
    #[error("empty character class matches the empty string, not a character")]
    ClassEmpty {
        /// True for `[^]`.
        negated: bool,
    },
    /// `[z-a]`.
    #[error("range `{first}-{last}` is reversed and matches nothing")]
    RangeReversed {
        /// The range's first character as written.
        first: String,
        /// The range's last character as written.
        last: String,
        /// The class with the range's ends swapped, escapes kept.
        swapped: Option<String>,
        /// The class with the `-` as a literal character, escapes kept.
        literal_dash: Option<String>,
    },
    /// A range whose ends are of different kinds (`;-à`: punctuation to a letter, ASCII
    /// to non-ASCII), or that spans letters between punctuation: most likely a `-` meant
    /// literally.
    #[error("range `{range}` spans {count} characters, {reason}")]
    RangeSuspicious {
        /// The range as written.
        range: String,
        /// How many code points it spans.
        count: u32,
        /// What makes it suspicious, such as "from punctuation to a letter".
        reason: String,
        /// The class with the `-` escaped, escapes kept.
        literal_dash: Option<String>,
    },
    /// An escape naming a surrogate or a value past U+10FFFF.
    #[error("U+{code_point:04X} is not a Unicode character; no text contains it")]
    CodePointInvalid {
        /// The value.
        code_point: u32,
    },
    /// A rule that matches no string because some character set it needs is empty.
    #[error("rule `{name}` matches nothing: every alternative needs a character no text contains")]
    LanguageEmpty {
        /// The rule's name.
        name: String,
    },
    /// A rule whose every alternative recurses forever.
    #[error(
        "rule `{name}` can never finish: every alternative needs `{name}` (or another rule that never finishes) again"
    )]
    RuleNeverFinishes {
        /// The rule's name.
        name: String,
    },
    /// `x? x? x? ...`.
    #[error("{count} optional `{item}` in a row")]
    OptionalChain {
        /// The repeated item, printed.
        item: String,
        /// How many.
        count: usize,
    },
    /// Left recursion: a rule can reach itself without consuming input.
    #[error("rule `{name}` is left-recursive: {cycle}")]
    LeftRecursion {
        /// The rule's name.
        name: String,
        /// The cycle, as `a -> b -> a`.
        cycle: String,
        /// What llama.cpp does with it.
        llama: LlamaLeftRecursion,
    },
    /// A cycle that only llama.cpp's expansion of repetitions has (it takes `(x |)*` for
    /// left recursion), so llama.cpp refuses the grammar.
    #[error("llama.cpp refuses this as left recursion: {cycle}")]
    LlamaLeftRecursion {
        /// The cycle in llama.cpp's internal rules.
        cycle: String,
    },
    /// Left recursion in llama.cpp's internal rules that its check misses and its matcher
    /// loops on forever (reported here when the grammar's own rules show no such cycle).
    #[error("llama.cpp's matcher loops forever on this left recursion: {cycle}")]
    LlamaLeftRecursionLoops {
        /// The cycle in llama.cpp's internal rules.
        cycle: String,
    },
    /// A rule llama.cpp finds undefined although Grail does not: used only where `{0}`
    /// drops it, or only in a definition that a later one replaces. llama.cpp checks its
    /// whole rule table, so it refuses the grammar.
    #[error("llama.cpp refuses this grammar: rule `{name}` is not defined")]
    LlamaRuleUndefined {
        /// The missing name.
        name: String,
    },
    /// A repetition minimum above 2000, which llama.cpp refuses.
    #[error("llama.cpp refuses repetition minimums above 2000 (this one is {min})")]
    LlamaRepetitionMinimum {
        /// The minimum.
        min: u64,
    },
    /// A repetition maximum above 2000, which llama.cpp silently makes unbounded.
    #[error(
        "llama.cpp reads `{{{min},{max}}}` as `{{{min},}}`: maximums above 2000 become unbounded"
    )]
    LlamaRepetitionMaximum {
        /// The minimum.
        min: u64,
        /// The maximum.
        max: u64,
    },
    /// A shape that makes llama.cpp's matcher slow down exponentially: each nesting of
    /// `callee` inside `nesting` after `opener` multiplies its stacks by `factor`.
    #[error(
        "llama.cpp's matcher slows down exponentially here: each `{opener}` that nests `{callee}` in `{nesting}` multiplies its parse stacks at least {factor}-fold"
    )]
    LlamaSlow {
        /// The rule where the nesting is written.
        nesting: String,
        /// The rule nested again.
        callee: String,
        /// The text read before the nested call, as written in the model.
        opener: String,
        /// How many stacks one nesting level turns each into.
        factor: u64,
        /// The rule rewritten with its common prefix factored out, when one was found.
        rewrite: Option<String>,
        /// The rules that start alike and differ only after the nested call, when the
        /// shared start is spread over several rules.
        through: Vec<String>,
        /// The rules on the way down to the nested call that each have several
        /// alternatives starting alike (the levels of an expression's precedence, each
        /// with one alternative per operator), when the stacks multiply through them.
        chain: Vec<String>,
    },
    /// A repetition that exceeds llama.cpp's rule budget.
    #[error(
        "llama.cpp refuses this repetition: {rules} repeated rules times {times} repetitions is over its budget of 2000"
    )]
    LlamaRuleBudget {
        /// How many generated rules the repeated item holds.
        rules: u64,
        /// The repetition's bound.
        times: u64,
    },
}

impl FindingKind {
    /// The stable kebab-case code.
    pub fn code(&self) -> &'static str {
        match self {
            FindingKind::RuleUndefined { .. } => "rule-undefined",
            FindingKind::RuleUndefinedUnused { .. } => "rule-undefined-unused",
            FindingKind::RepetitionNoMaximum { .. } => "repetition-no-maximum",
            FindingKind::LlamaLeftRecursionLoops { .. } => "llama-left-recursion-loops",
            FindingKind::LlamaRuleUndefined { .. } => "llama-rule-undefined",
            FindingKind::RootMissing { .. } => "root-missing",
            FindingKind::RepetitionBoundsReversed { .. } => "repetition-bounds-reversed",
            FindingKind::RepetitionTooLarge { .. } => "repetition-too-large",
            FindingKind::RepetitionMaximumAboveLimit { .. } => "repetition-maximum-above-limit",
            FindingKind::TooManyRules { .. } => "too-many-rules",
            FindingKind::RuleDuplicate { .. } => "rule-duplicate",
            FindingKind::RuleUnused { .. } => "rule-unused",
            FindingKind::RuleUnreachable { .. } => "rule-unreachable",
            FindingKind::ClassEmpty { .. } => "class-empty",
            FindingKind::RangeReversed { .. } => "range-reversed",
            FindingKind::RangeSuspicious { .. } => "range-suspicious",
            FindingKind::CodePointInvalid { .. } => "code-point-invalid",
            FindingKind::LanguageEmpty { .. } => "language-empty",
            FindingKind::RuleNeverFinishes { .. } => "rule-never-finishes",
            FindingKind::OptionalChain { .. } => "optional-chain",
            FindingKind::LeftRecursion { .. } => "left-recursion",
            FindingKind::LlamaLeftRecursion { .. } => "llama-left-recursion",
            FindingKind::LlamaRepetitionMinimum { .. } => "llama-repetition-minimum",
            FindingKind::LlamaRepetitionMaximum { .. } => "llama-repetition-maximum",
            FindingKind::LlamaRuleBudget { .. } => "llama-rule-budget",
            FindingKind::LlamaSlow { .. } => "llama-slow",
        }
    }

    /// How serious the finding is when checking for `target`.
    pub fn severity(&self, target: Target) -> Severity {
        let llama = target == Target::LlamaCpp;
        match self {
            FindingKind::RuleUndefined { .. }
            | FindingKind::RootMissing { .. }
            | FindingKind::RepetitionBoundsReversed { .. }
            | FindingKind::TooManyRules { .. } => Severity::Error,
            FindingKind::RepetitionTooLarge { .. } => Severity::Error,
            FindingKind::RepetitionMaximumAboveLimit { .. } => Severity::Warning,
            FindingKind::RepetitionNoMaximum { .. } => Severity::Note,
            FindingKind::RuleUndefinedUnused { .. } => Severity::Warning,
            FindingKind::RuleDuplicate { .. }
            | FindingKind::RuleUnused { .. }
            | FindingKind::RuleUnreachable { .. }
            | FindingKind::ClassEmpty { .. }
            | FindingKind::RangeReversed { .. }
            | FindingKind::RangeSuspicious { .. }
            | FindingKind::CodePointInvalid { .. }
            | FindingKind::LanguageEmpty { .. }
            | FindingKind::RuleNeverFinishes { .. }
            | FindingKind::OptionalChain { .. } => Severity::Warning,
            FindingKind::LeftRecursion {
                llama: LlamaLeftRecursion::Refused | LlamaLeftRecursion::Loops,
                ..
            } if llama => Severity::Error,
            // Grail's Earley-style matcher handles left recursion; only portability is at stake.
            FindingKind::LeftRecursion { .. } => Severity::Note,
            FindingKind::LlamaRepetitionMinimum { .. }
            | FindingKind::LlamaRuleBudget { .. }
            | FindingKind::LlamaLeftRecursion { .. }
            | FindingKind::LlamaLeftRecursionLoops { .. }
            | FindingKind::LlamaRuleUndefined { .. } => {
                if llama {
                    Severity::Error
                } else {
                    Severity::Note
                }
            }
            FindingKind::LlamaRepetitionMaximum { .. } | FindingKind::LlamaSlow { .. } => {
                if llama {
                    Severity::Warning
                } else {
                    Severity::Note
                }
            }
        }
    }

    /// How to fix it, where there is a known fix.
    pub fn help(&self) -> Option<String> {
        Some(match self {
            FindingKind::RuleUndefined { suggestion: Some(close), .. } => {
                format!("did you mean `{close}`?")
            }
            FindingKind::RuleUndefined { name, .. } => format!("define it: `{name} ::= ...`"),
            FindingKind::RootMissing { suggestion: Some(close), root } => {
                format!("did you mean `{close}`? rename it to `{root}`")
            }
            FindingKind::RootMissing { root, .. } => format!("add a rule `{root} ::= ...`"),
            FindingKind::RepetitionBoundsReversed { min, max } => {
                format!("write `{{{max},{min}}}`")
            }
            FindingKind::RepetitionMaximumAboveLimit { .. } => "write `{m,}` to say so, or raise Limits::max_repetition_count to keep the bound (llama.cpp reads every maximum above 2000 as unbounded)".into(),
            FindingKind::RepetitionTooLarge { .. } => {
                "use `*` or `{m,}` for long runs, or raise Limits::max_repetition_count".into()
            }
            FindingKind::RepetitionNoMaximum { min } => format!("write `{{{min},}}`"),
            FindingKind::RuleUndefinedUnused { name } => format!(
                "define `{name}`, or remove its uses; llama.cpp refuses an undefined rule when its grammar generates rules after it or keeps a group around the use"
            ),
            FindingKind::LlamaRuleUndefined { name } => format!(
                "define `{name}`, or remove every use of it: llama.cpp checks every rule it has read, including uses that `{{0}}` drops and definitions that a later one of the same name replaces"
            ),
            FindingKind::LlamaLeftRecursionLoops { .. } => {
                "rewrite it with repetition, e.g. `a ::= a \"x\" | \"y\"` as `a ::= \"y\" \"x\"*`, or move what follows the call out of the cycle".into()
            }
            FindingKind::RuleDuplicate { name } => {
                format!("remove one definition, or merge them: `{name} ::= first | second`")
            }
            FindingKind::RuleUnused { .. } | FindingKind::RuleUnreachable { .. } => {
                "remove it, or refer to it from the rule that needs it".into()
            }
            FindingKind::ClassEmpty { negated: true } => {
                "`[^]` does not mean \"any character\" in GBNF; write `.` for that".into()
            }
            FindingKind::ClassEmpty { negated: false } => {
                "remove it, or list the characters it should match".into()
            }
            FindingKind::RangeReversed { first, last, swapped, literal_dash } => {
                let mut ways = Vec::new();
                if let Some(swapped) = swapped {
                    ways.push(format!("to match `{last}` to `{first}`, swap the ends: `{swapped}`"));
                }
                if let Some(literal_dash) = literal_dash {
                    ways.push(format!("to match `{first}`, `-` and `{last}`, escape the `-`: `{literal_dash}`"));
                }
                if ways.is_empty() {
                    return None;
                }
                ways.join("; ")
            }
            FindingKind::RangeSuspicious { literal_dash: Some(literal_dash), .. } => format!(
                "if the `-` is meant as a character, escape it: `{literal_dash}`; if the range is meant, write its ends as escapes (`\\xHH`, `\\uHHHH`) to say so"
            ),
            FindingKind::RangeSuspicious { .. } => {
                "if the `-` is meant as a character, escape it as `\\x2D`; if the range is meant, write its ends as escapes (`\\xHH`, `\\uHHHH`) to say so".into()
            }
            FindingKind::OptionalChain { item, count } => format!(
                "write `{item}{{0,{count}}}`: chains of optional items make llama.cpp's matcher slow"
            ),
            FindingKind::LeftRecursion { llama: LlamaLeftRecursion::Loops, .. } => {
                "llama.cpp does not detect this cycle and its matcher loops forever on it (something follows a call on the cycle); rewrite it with repetition, e.g. `a ::= a \"x\" | \"y\"` as `a ::= \"y\" \"x\"*`".into()
            }
            FindingKind::LeftRecursion { llama: LlamaLeftRecursion::Accepted, .. } => {
                "Grail and llama.cpp both match it as written (llama.cpp because every call on the cycle comes last in its alternative, or the cycle is never reached)".into()
            }
            FindingKind::LeftRecursion { .. } => {
                "Grail matches it as written, llama.cpp refuses it; to stay portable, rewrite it with repetition, e.g. `a ::= a \"x\" | \"y\"` as `a ::= \"y\" \"x\"*`".into()
            }
            FindingKind::LlamaLeftRecursion { .. } => {
                "llama.cpp counts a repeated item as possibly empty only when it has an empty alternative; take the empty alternative out of the repeated item: `(x |)*` matches the same as `x*`".into()
            }
            FindingKind::LlamaRepetitionMinimum { .. } => {
                "split the repetition, e.g. `x{3000}` as `x{1500} x{1500}`".into()
            }
            FindingKind::LlamaRepetitionMaximum { .. } => {
                "split the repetition, e.g. `x{0,3000}` as `x{0,1500} x{0,1500}`, or accept the unbounded reading".into()
            }
            FindingKind::LlamaRuleBudget { .. } => {
                "use smaller bounds, or move the inner repetition into its own rule".into()
            }
            FindingKind::LlamaSlow { chain, rewrite, .. } if !chain.is_empty() => {
                let names: Vec<String> = chain.iter().map(|name| format!("`{name}`")).collect();
                let example = rewrite
                    .as_ref()
                    .map(|rewrite| format!(", e.g. `{rewrite}`"))
                    .unwrap_or_default();
                format!(
                    "{} each have alternatives that start alike, so every way down through them is a stack of its own: in each, write the shared start once and choose after it{example} (the same language; llama.cpp then keeps one stack per nesting level; Grail's matcher shares them either way)",
                    names.join(", ")
                )
            }
            FindingKind::LlamaSlow { rewrite: Some(rewrite), .. } => format!(
                "write the shared start once and choose after it: `{rewrite}` (the same language; llama.cpp then keeps one stack per nesting level; Grail's matcher shares them either way)"
            ),
            FindingKind::LlamaSlow { through, opener, .. } if !through.is_empty() => {
                let names: Vec<String> = through.iter().map(|name| format!("`{name}`")).collect();
                let (last, rest) = names.split_last().expect("not empty");
                let (all, listed) = if rest.len() == 1 {
                    ("both", format!("{} and {last}", rest[0]))
                } else {
                    ("all", format!("{}, and {last}", rest.join(", ")))
                };
                format!(
                    "{listed} {all} start with `{opener}` and the nested rule, and differ only after it: write that start once, in one rule, and choose after it (the same language; llama.cpp then keeps one stack per nesting level; Grail's matcher shares them either way)"
                )
            }
            FindingKind::LlamaSlow { callee, .. } => format!(
                "alternatives reached from `{callee}` start alike and differ only after the nested part; write the shared start once and choose after it (the same language; Grail's matcher shares the stacks either way)"
            ),
            _ => return None,
        })
    }
}

/// One finding at a span, with related locations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// What was found.
    pub kind: FindingKind,
    /// Where.
    pub span: Span,
    /// Other locations that explain it.
    pub related: Vec<(Span, String)>,
}

impl Finding {
    /// A finding without related locations.
    pub fn new(kind: FindingKind, span: Span) -> Finding {
        Finding {
            kind,
            span,
            related: Vec::new(),
        }
    }

    /// Adds a related location.
    pub fn with_related(mut self, span: Span, message: impl Into<String>) -> Finding {
        self.related.push((span, message.into()));
        self
    }

    /// The finding as a renderable diagnostic, with its severity for `target`.
    pub fn to_diagnostic(&self, target: Target) -> Diagnostic {
        let mut diagnostic = Diagnostic::new(
            self.kind.severity(target),
            self.kind.code(),
            self.kind.to_string(),
            self.span,
        )
        .with_help(self.kind.help());
        for (span, message) in &self.related {
            diagnostic = diagnostic.with_related(*span, message.clone());
        }
        diagnostic
    }
}
