//! `fix`: the mechanical repairs of a grammar, made in its text so comments and layout
//! stay, each checked before it is kept.
//!
//! The repairs: a rule name with `_` is renamed with `-` everywhere it is written (made
//! unique among the grammar's names); a line that starts with `|` after its rule ended
//! is joined to that rule (the `|` moves to the end of the line before); a reversed range
//! has its ends swapped, the author's escapes kept; a repetition llama.cpp refuses or
//! reads differently (`{m,n}` over 2000, or over its rule budget) is split into pieces it
//! reads exactly (`x{0,3000}` becomes `x{0,1500} x{0,1500}`, the same language).
//!
//! Fixing runs in rounds, since one repair can reveal the need for another (a joined
//! line may use a name with `_`). After each round the new text is parsed again and its
//! syntax tree must equal the old one with exactly the intended changes (names renamed,
//! ranges swapped, repetitions split, joined rules gaining alternatives after their own).
//! When it does not (the parser's recovery from other errors can read the new text
//! differently), each repair is tried alone and one that still does not is declined:
//! reported, not made.
//!
//! Every repair is reported on its line in the original text, lines ending at `\n`,
//! `\r\n` or a lone `\r` as the parser ends them: a split can copy a group written over
//! several lines, so a later round's text may have more lines than the original, and
//! its offsets are traced back through the edits of the rounds before.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use grail_syntax::ast::{self, Alternatives, Quantifier, QuantifierStyle, Term, TermKind};
use grail_syntax::format::print_rules;
use grail_syntax::{LineIndex, ParseLimits, Span, SyntaxError, parse_with_limits};

use crate::class_ranges::reversed_range;
use crate::finding::FindingKind;
use crate::llama_cpp::{LLAMA_REPETITION_THRESHOLD, model};

/// Rounds of fixing before giving up on reaching a fixed point.
const MAX_ROUNDS: usize = 64;

/// What one repair changed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FixKind {
    /// A rule name with `_` renamed everywhere it is written.
    RuleRenamed {
        /// The name as written.
        from: String,
        /// The new name.
        to: String,
        /// How many places were renamed.
        places: usize,
    },
    /// A line that started with `|` joined to the rule before it.
    LineJoined,
    /// A reversed range's ends swapped, in the class that holds it.
    RangeSwapped {
        /// The class as written.
        from: String,
        /// The class with the range swapped.
        to: String,
    },
    /// A repetition split into pieces llama.cpp reads exactly.
    RepetitionSplit {
        /// Why llama.cpp needs it split.
        reason: SplitReason,
        /// The repetition as written.
        from: String,
        /// Its replacement.
        to: String,
    },
}

impl std::fmt::Display for FixKind {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FixKind::RuleRenamed { from, to, places } => {
                let noun = if *places == 1 { "place" } else { "places" };
                write!(formatter, "renamed `{from}` to `{to}` ({places} {noun})")
            }
            FixKind::LineJoined => write!(
                formatter,
                "joined the line that starts with `|` to its rule (moved the `|` to the end of the line before)"
            ),
            FixKind::RangeSwapped { from, to } => {
                write!(
                    formatter,
                    "swapped the reversed range's ends: `{from}` -> `{to}`"
                )
            }
            FixKind::RepetitionSplit { reason, from, to } => {
                let why = match reason {
                    SplitReason::Minimum => "llama.cpp refuses a minimum over 2000",
                    SplitReason::Maximum => "llama.cpp reads a maximum over 2000 as unbounded",
                    SplitReason::RuleBudget => "over llama.cpp's rule budget of 2000",
                };
                write!(
                    formatter,
                    "split the repetition ({why}): `{from}` -> `{to}`"
                )
            }
        }
    }
}

/// Why a repetition is split for llama.cpp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SplitReason {
    /// Its minimum is over 2000, which llama.cpp refuses.
    Minimum,
    /// Its maximum is over 2000, which llama.cpp reads as unbounded.
    Maximum,
    /// The rules inside the repeated item times its bound are over llama.cpp's budget
    /// of 2000.
    RuleBudget,
}

/// One repair, on a line of the original text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fix {
    /// What changed.
    pub kind: FixKind,
    /// The 1-based line in the original text (lines end at `\n`, `\r\n` or a lone `\r`,
    /// as the parser ends them).
    pub line: usize,
}

/// A fixed grammar text and the repairs made, in line order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fixed {
    /// The fixed text (equal to the input when nothing needed fixing).
    pub source: String,
    /// The repairs made.
    pub fixes: Vec<Fix>,
    /// Repairs found but not made, since the text with them would not read back as the
    /// same grammar with just that change (other errors around them): the author's.
    pub declined: Vec<Fix>,
}

/// Repairs what can be repaired mechanically in `source` (see the module documentation).
///
/// A repair whose text does not read back as the same grammar with just that change (the
/// parser's recovery from other errors can see the joined or split text differently) is
/// not made: it is returned in [`Fixed::declined`] for the author.
pub fn fix(source: &str) -> Fixed {
    let mut fixer = Fixer {
        renames: HashMap::new(),
        renamed_places: HashMap::new(),
        taken: HashSet::new(),
    };
    let mut text = source.to_string();
    let mut lines = OriginalLines {
        original: line_index(source),
        rounds: Vec::new(),
    };
    // Each fix with its line and its offset in the original text (to order a line's).
    let mut fixes: Vec<(usize, usize, Fix)> = Vec::new();
    let mut declined: Vec<Fix> = Vec::new();
    let limits = ParseLimits {
        max_errors: usize::MAX,
        ..ParseLimits::default()
    };
    for _ in 0..MAX_ROUNDS {
        let parsed = parse_with_limits(&text, &limits);
        let mut repairs = fixer.repairs(&text, &parsed, &lines);
        keep_apart(&mut repairs);
        let round = Round {
            text: &text,
            before: &parsed.grammar,
            renames: &fixer.renames,
            limits: &limits,
        };
        let (kept, refused) = round.verified(repairs);
        if kept.is_empty() {
            // Nothing more can be made: what is left is the author's.
            declined = refused
                .iter()
                .flat_map(|group| group_fix(group, &fixer.renames))
                .collect();
            break;
        }
        let fixed_text = apply(&text, &kept);
        let round_moves = moves(&kept);
        for repair in kept {
            let offset = lines.original_offset(repair.edits[0].0.start);
            match repair.change {
                Change::Rename { from, line } => {
                    let entry = fixer
                        .renamed_places
                        .entry(from)
                        .or_insert((line, offset, 0));
                    entry.2 += 1;
                }
                _ => fixes.extend(repair.fix.map(|fix| (fix.line, offset, fix))),
            }
        }
        text = fixed_text;
        lines.rounds.push(round_moves);
    }
    for (from, (line, offset, places)) in fixer.renamed_places {
        let to = fixer.renames[&from].clone();
        let kind = FixKind::RuleRenamed { from, to, places };
        fixes.push((line, offset, Fix { kind, line }));
    }
    fixes.sort_by_key(|&(line, offset, _)| (line, offset));
    declined.sort_by_key(|fix| fix.line);
    Fixed {
        source: text,
        fixes: fixes.into_iter().map(|(_, _, fix)| fix).collect(),
        declined,
    }
}

/// One round's text and tree, against which repairs are tried.
struct Round<'a> {
    text: &'a str,
    before: &'a ast::Grammar,
    renames: &'a HashMap<String, String>,
    limits: &'a ParseLimits,
}

impl Round<'_> {
    /// True when the text with `repairs` made parses to the tree with exactly their changes.
    fn reads_back(&self, repairs: &[Repair]) -> bool {
        let renames: HashMap<String, String> = repairs
            .iter()
            .filter_map(|repair| match &repair.change {
                Change::Rename { from, .. } => Some((from.clone(), self.renames[from].clone())),
                _ => None,
            })
            .collect();
        let reparsed = parse_with_limits(&apply(self.text, repairs), self.limits);
        verify(self.before, &reparsed.grammar, repairs, &renames).is_ok()
    }

    /// The repairs to make this round, and the groups refused (each read back wrong alone).
    /// All together when they read back; otherwise each group (a name's renames go
    /// together, every other repair alone) is tried alone, and those that pass are made
    /// together, or the first of them when together they do not (the rest come again next
    /// round).
    fn verified(&self, repairs: Vec<Repair>) -> (Vec<Repair>, Vec<Vec<Repair>>) {
        if repairs.is_empty() || self.reads_back(&repairs) {
            return (repairs, Vec::new());
        }
        let (passing, refused): (Vec<Vec<Repair>>, Vec<Vec<Repair>>) = groups(repairs)
            .into_iter()
            .partition(|group| self.reads_back(group));
        let mut passing = passing.into_iter();
        let Some(first) = passing.next() else {
            return (Vec::new(), refused);
        };
        let rest: Vec<Repair> = passing.flatten().collect();
        let together: Vec<Repair> = first.iter().cloned().chain(rest).collect();
        if self.reads_back(&together) {
            (together, refused)
        } else {
            (first, refused)
        }
    }
}

/// `repairs` in groups that must be made together: all renames of one name; every other
/// repair alone.
fn groups(repairs: Vec<Repair>) -> Vec<Vec<Repair>> {
    let mut groups: Vec<Vec<Repair>> = Vec::new();
    let mut group_of_name: HashMap<String, usize> = HashMap::new();
    for repair in repairs {
        if let Change::Rename { from, .. } = &repair.change {
            if let Some(&index) = group_of_name.get(from) {
                groups[index].push(repair);
                continue;
            }
            group_of_name.insert(from.clone(), groups.len());
        }
        groups.push(vec![repair]);
    }
    groups
}

/// The fix a group of repairs would have been.
fn group_fix(group: &[Repair], renames: &HashMap<String, String>) -> Option<Fix> {
    let first = group.first()?;
    match &first.change {
        Change::Rename { from, line } => Some(Fix {
            kind: FixKind::RuleRenamed {
                from: from.clone(),
                to: renames[from].clone(),
                places: group.len(),
            },
            line: *line,
        }),
        _ => first.fix.clone(),
    }
}

/// One text edit with the change it makes to the syntax tree and the repair it reports.
#[derive(Clone)]
struct Repair {
    edits: Vec<(Range<usize>, String)>,
    /// The parts of the first edit's replacement that copy the round's text, as (offset
    /// in the replacement, the range copied): where those bytes came from.
    copies: Vec<(usize, Range<usize>)>,
    change: Change,
    fix: Option<Fix>,
}

/// One edit of a round: the range it replaced in the text before, the range of its
/// replacement in the text after, and the copied parts of the replacement (offset in
/// the text after, offset of the copied text in the text before, length).
struct Move {
    before: Range<usize>,
    after: Range<usize>,
    copies: Vec<(usize, usize, usize)>,
}

/// The edits of `repairs`, in the order [`apply`] makes them, with where each lands in
/// the text after.
fn moves(repairs: &[Repair]) -> Vec<Move> {
    // Each edit with its replacement's range and copies relative to the replacement, until
    // placed.
    let mut moves: Vec<Move> = repairs
        .iter()
        .flat_map(|repair| {
            repair
                .edits
                .iter()
                .enumerate()
                .map(move |(index, (range, replacement))| Move {
                    before: range.clone(),
                    after: 0..replacement.len(),
                    copies: match index {
                        0 => repair
                            .copies
                            .iter()
                            .map(|(offset, copied)| (*offset, copied.start, copied.len()))
                            .collect(),
                        _ => Vec::new(),
                    },
                })
        })
        .collect();
    moves.sort_by_key(|edit| (edit.before.start, edit.before.end));
    // The text after is this much longer (or shorter) than the text before, so far.
    let mut growth: isize = 0;
    for edit in &mut moves {
        let start = edit.before.start.saturating_add_signed(growth);
        let length = edit.after.len();
        edit.after = start..start + length;
        for copy in &mut edit.copies {
            copy.0 += start;
        }
        growth += length as isize - edit.before.len() as isize;
    }
    moves
}

/// Lines of the original text, and the edits of each round made since, to find the
/// original line of an offset in a later round's text.
struct OriginalLines {
    original: LineIndex,
    rounds: Vec<Vec<Move>>,
}

impl OriginalLines {
    /// The offset in the original text that `offset` in the current round's text comes
    /// from: outside the edits, the same text moved; in a copy, the text copied; anywhere
    /// else in a replacement, the start of the text it replaced.
    fn original_offset(&self, offset: usize) -> usize {
        let mut offset = offset;
        for moves in self.rounds.iter().rev() {
            offset = Self::before(moves, offset);
        }
        offset
    }

    /// Where `offset` of the text after `moves` was in the text before them.
    fn before(moves: &[Move], offset: usize) -> usize {
        let mut growth: isize = 0;
        for edit in moves {
            if offset < edit.after.start {
                break;
            }
            if offset < edit.after.end {
                return edit
                    .copies
                    .iter()
                    .find(|&&(at, _, length)| (at..at + length).contains(&offset))
                    .map_or(edit.before.start, |&(at, copied, _)| copied + (offset - at));
            }
            growth = edit.after.end as isize - edit.before.end as isize;
        }
        offset.saturating_add_signed(-growth)
    }

    /// The 1-based line in the original text of `offset` in the current round's text.
    fn line_of(&self, offset: u32) -> usize {
        let original = self.original_offset(offset as usize);
        self.original.line_of(original as u32) + 1
    }
}

/// The line starts of `source`, lines ending where the parser ends them: at `\n`, `\r\n`
/// and a lone `\r` ([`LineIndex`] alone ends them at `\n` only).
fn line_index(source: &str) -> LineIndex {
    let bytes = source.as_bytes();
    // Each lone `\r` read as `\n`: one byte for another, so the offsets stay.
    let lone_returns_as_newlines: String = source
        .char_indices()
        .map(|(index, character)| {
            if character == '\r' && bytes.get(index + 1) != Some(&b'\n') {
                '\n'
            } else {
                character
            }
        })
        .collect();
    LineIndex::new(&lone_returns_as_newlines)
}

/// What a repair does to the syntax tree, for checking the reparsed text.
#[derive(Clone)]
enum Change {
    /// A name occurrence renamed (the rename map says to what).
    Rename { from: String, line: usize },
    /// Alternatives added to the rule written before `bar`.
    Join { bar: u32 },
    /// The class written at `span` gets these items.
    Class { span: Span, items: Vec<(u32, u32)> },
    /// The repetition written at `span` becomes these pieces (grouped when a quantifier
    /// applies to it).
    Split {
        span: Span,
        pieces: Vec<(u64, Option<u64>)>,
    },
}

struct Fixer {
    /// Each name with `_` and its new name.
    renames: HashMap<String, String>,
    /// Each renamed name: its first line and offset, and how many places were renamed.
    renamed_places: HashMap<String, (usize, usize, usize)>,
    /// Every name in use or given.
    taken: HashSet<String>,
}

impl Fixer {
    fn repairs(
        &mut self,
        text: &str,
        parsed: &grail_syntax::Parsed,
        lines: &OriginalLines,
    ) -> Vec<Repair> {
        let line_of = |offset: u32| lines.line_of(offset);
        let mut repairs = Vec::new();
        self.note_names(text, &parsed.grammar);

        // Names with `_`, everywhere the tree has them.
        let mut names: Vec<&ast::Name> = Vec::new();
        for rule in &parsed.grammar.rules {
            names.push(&rule.name);
            visit_terms(&rule.body, &mut |term| {
                if let TermKind::RuleRef(name) = &term.kind {
                    names.push(name);
                }
            });
        }
        // Where the parser dropped text (an error of another kind), a name may also be
        // used there, out of the tree's sight: such a name is left for the author, or its
        // definition and uses would part.
        let dropped_text = parsed.errors.iter().any(|error| {
            !matches!(
                error.kind,
                SyntaxError::RuleNameUnderscore { .. } | SyntaxError::LineStartsWithBar
            )
        });
        let mut in_tree: HashMap<&str, usize> = HashMap::new();
        for name in &names {
            *in_tree.entry(name.text.as_str()).or_default() += 1;
        }
        let unseen_uses = |name: &str| dropped_text && word_count(text, name) > in_tree[name];
        for name in names
            .iter()
            .filter(|name| name.text.contains('_') && !unseen_uses(&name.text))
        {
            let to = self.new_name(&name.text);
            repairs.push(Repair {
                edits: vec![(name.span.range(), to)],
                copies: Vec::new(),
                change: Change::Rename {
                    from: name.text.clone(),
                    line: line_of(name.span.start),
                },
                fix: None,
            });
        }

        // Lines that start with `|`: the `|` moves to the end of the line before.
        for error in &parsed.errors {
            if error.kind != SyntaxError::LineStartsWithBar {
                continue;
            }
            let Some((end_of_rule, _)) = error.related else {
                continue;
            };
            let bar = error.span.start as usize;
            // A line whose alternatives do not parse would break its rule once joined.
            let boundary = next_line_starting_a_rule_or_bar(text, bar);
            let broken = parsed.errors.iter().any(|other| {
                let start = other.span.start as usize;
                start > bar
                    && start < boundary
                    && !matches!(other.kind, SyntaxError::RuleNameUnderscore { .. })
            });
            // A bare `|` (nothing after it on its line but a comment) joined to the line
            // before would take the next line as its alternative, maybe a new rule: left
            // for the author (an empty alternative, or a stray `|`?).
            let rest_of_line = text[bar + 1..].split('\n').next().unwrap_or("").trim();
            if broken || rest_of_line.is_empty() || rest_of_line.starts_with('#') {
                continue;
            }
            let after_bar = text[bar + 1..]
                .bytes()
                .take_while(|&byte| byte == b' ' || byte == b'\t')
                .count();
            let insert = end_of_rule.start as usize;
            repairs.push(Repair {
                edits: vec![
                    (insert..insert, " |".to_string()),
                    (bar..bar + 1 + after_bar, String::new()),
                ],
                copies: Vec::new(),
                change: Change::Join {
                    bar: error.span.start,
                },
                fix: Some(Fix {
                    kind: FixKind::LineJoined,
                    line: line_of(error.span.start),
                }),
            });
        }

        // Reversed ranges: the first of each class per round.
        for rule in &parsed.grammar.rules {
            visit_terms(&rule.body, &mut |term| {
                let TermKind::Class(class) = &term.kind else {
                    return;
                };
                let Some(index) = class.items.iter().position(|item| item.first > item.last) else {
                    return;
                };
                let finding = reversed_range(class, term.span, index, Some(text));
                let FindingKind::RangeReversed {
                    swapped: Some(swapped),
                    ..
                } = finding.kind
                else {
                    return;
                };
                let mut items: Vec<(u32, u32)> = class
                    .items
                    .iter()
                    .map(|item| (item.first, item.last))
                    .collect();
                items[index] = (class.items[index].last, class.items[index].first);
                repairs.push(Repair {
                    edits: vec![(term.span.range(), swapped.clone())],
                    copies: Vec::new(),
                    change: Change::Class {
                        span: term.span,
                        items,
                    },
                    fix: Some(Fix {
                        kind: FixKind::RangeSwapped {
                            from: text[term.span.range()].to_string(),
                            to: swapped,
                        },
                        line: line_of(term.span.start),
                    }),
                });
            });
        }

        // Repetitions llama.cpp refuses or reads as unbounded.
        let mut splits: HashMap<Span, (u64, SplitReason)> = HashMap::new();
        for finding in model(&parsed.grammar, "root").findings {
            let (chunk, reason) = match finding.kind {
                FindingKind::LlamaRepetitionMinimum { .. } => {
                    (LLAMA_REPETITION_THRESHOLD, SplitReason::Minimum)
                }
                FindingKind::LlamaRepetitionMaximum { .. } => {
                    (LLAMA_REPETITION_THRESHOLD, SplitReason::Maximum)
                }
                FindingKind::LlamaRuleBudget { rules, .. } => {
                    (LLAMA_REPETITION_THRESHOLD / rules, SplitReason::RuleBudget)
                }
                _ => continue,
            };
            if chunk > 0 {
                splits.insert(finding.span, (chunk, reason));
            }
        }
        if !splits.is_empty() {
            for rule in &parsed.grammar.rules {
                visit_terms(&rule.body, &mut |term| {
                    let TermKind::Repeat(inner, quantifier) = &term.kind else {
                        return;
                    };
                    let Some(&(chunk, reason)) = splits.get(&quantifier.span) else {
                        return;
                    };
                    let Some(pieces) = split_bounds(quantifier.min, quantifier.max, chunk) else {
                        return;
                    };
                    let inner_range = inner.span.range();
                    let inner_text = &text[inner_range.clone()];
                    let grouped = stacked_under_quantifier(text, term.span);
                    let mut replacement = String::new();
                    let mut copies = Vec::new();
                    if grouped {
                        replacement.push('(');
                    }
                    for (index, &(min, max)) in pieces.iter().enumerate() {
                        if index > 0 {
                            replacement.push(' ');
                        }
                        copies.push((replacement.len(), inner_range.clone()));
                        replacement.push_str(inner_text);
                        replacement.push_str(&braces(min, max));
                    }
                    if grouped {
                        replacement.push(')');
                    }
                    repairs.push(Repair {
                        edits: vec![(term.span.range(), replacement.clone())],
                        copies,
                        change: Change::Split {
                            span: term.span,
                            pieces,
                        },
                        fix: Some(Fix {
                            kind: FixKind::RepetitionSplit {
                                reason,
                                from: text[term.span.range()].to_string(),
                                to: replacement,
                            },
                            line: line_of(term.span.start),
                        }),
                    });
                });
            }
        }
        repairs
    }

    /// Records every rule name of the tree, and of lines that read `name ::=`, as taken.
    fn note_names(&mut self, text: &str, grammar: &ast::Grammar) {
        for rule in &grammar.rules {
            self.taken.insert(rule.name.text.clone());
            visit_terms(&rule.body, &mut |term| {
                if let TermKind::RuleRef(name) = &term.kind {
                    self.taken.insert(name.text.clone());
                }
            });
        }
        for line in text.lines() {
            let line = line.trim_start();
            let length = line
                .bytes()
                .take_while(|&byte| grail_syntax::parser::is_name_byte(byte) || byte == b'_')
                .count();
            if length > 0 && line[length..].trim_start().starts_with("::=") {
                self.taken.insert(line[..length].to_string());
            }
        }
    }

    /// The new name of `name` (which has `_`): `-` for `_`, made unique.
    fn new_name(&mut self, name: &str) -> String {
        if let Some(given) = self.renames.get(name) {
            return given.clone();
        }
        let base = name.replace('_', "-");
        let mut candidate = base.clone();
        let mut number = 2;
        while self.taken.contains(&candidate) {
            candidate = format!("{base}-{number}");
            number += 1;
        }
        self.taken.insert(candidate.clone());
        self.renames.insert(name.to_string(), candidate.clone());
        candidate
    }
}

/// The offset of the first line after the one holding `offset` that starts (after spaces)
/// with `|` or `name ::=`, or the end of the text.
fn next_line_starting_a_rule_or_bar(text: &str, offset: usize) -> usize {
    let mut line_start = match text[offset..].find('\n') {
        Some(newline) => offset + newline + 1,
        None => return text.len(),
    };
    while line_start < text.len() {
        let line = text[line_start..].trim_start_matches([' ', '\t']);
        let name = line
            .bytes()
            .take_while(|&byte| grail_syntax::parser::is_name_byte(byte) || byte == b'_')
            .count();
        if line.starts_with('|') || name > 0 && line[name..].trim_start().starts_with("::=") {
            return line_start;
        }
        line_start = match text[line_start..].find('\n') {
            Some(newline) => line_start + newline + 1,
            None => text.len(),
        };
    }
    text.len()
}

/// `{min,max}` as written in GBNF.
fn braces(min: u64, max: Option<u64>) -> String {
    match max {
        Some(max) if max == min => format!("{{{min}}}"),
        Some(max) => format!("{{{min},{max}}}"),
        None => format!("{{{min},}}"),
    }
}

/// How many times `name` is written in `text` as a whole word (not inside a longer name).
fn word_count(text: &str, name: &str) -> usize {
    let is_name_byte = |byte: u8| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-');
    text.match_indices(name)
        .filter(|&(start, _)| {
            let before = text.as_bytes()[..start].last().copied();
            let after = text.as_bytes().get(start + name.len()).copied();
            !before.is_some_and(is_name_byte) && !after.is_some_and(is_name_byte)
        })
        .count()
}

/// Pieces one repetition may be split into; a larger bound (`{0,4000000000}` would be two
/// million pieces, half a gigabyte of text) is left for the author to rewrite.
const MAX_PIECES: u64 = 1000;

/// `{min,max}` as pieces whose bounds are at most `chunk` each (an unbounded piece last),
/// matching the same counts in sequence; `None` when no split is needed or possible (or
/// would take more than [`MAX_PIECES`]).
fn split_bounds(min: u64, max: Option<u64>, chunk: u64) -> Option<Vec<(u64, Option<u64>)>> {
    let bound = max.unwrap_or(min);
    if chunk == 0 || bound <= chunk || max.is_some_and(|max| max < min) {
        return None;
    }
    let count = bound.div_ceil(chunk);
    if count > MAX_PIECES {
        return None;
    }
    let mut pieces = Vec::with_capacity(count as usize);
    let mut min_left = min;
    for index in 0..count {
        // Spread the bound evenly: the first pieces take one more.
        let share = bound / count + u64::from(index < bound % count);
        let piece_min = min_left.min(share);
        min_left -= piece_min;
        let piece_max = match max {
            Some(_) => Some(share),
            None if index + 1 == count => None,
            None => Some(share),
        };
        pieces.push((piece_min, piece_max));
    }
    Some(pieces)
}

/// True when a quantifier follows `span` directly (`x{3000}?`), so pieces written there
/// must be grouped for it to apply to all of them.
fn stacked_under_quantifier(text: &str, span: Span) -> bool {
    let after = text[span.end as usize..].trim_start_matches([' ', '\t']);
    after.starts_with(['*', '+', '?', '{'])
}

/// Drops repairs whose edits overlap an earlier kept one (renames first, then in text
/// order); the next round makes them on the new text.
fn keep_apart(repairs: &mut Vec<Repair>) {
    repairs.sort_by_key(|repair| {
        (
            !matches!(repair.change, Change::Rename { .. }),
            repair.edits[0].0.start,
        )
    });
    let mut taken: Vec<Range<usize>> = Vec::new();
    repairs.retain(|repair| {
        let overlaps = repair.edits.iter().any(|(range, _)| {
            taken.iter().any(|kept| {
                range.start < kept.end && kept.start < range.end
                    || range.is_empty() && kept.contains(&range.start)
                    || kept.is_empty() && range.contains(&kept.start)
            })
        });
        if !overlaps {
            taken.extend(repair.edits.iter().map(|(range, _)| range.clone()));
        }
        !overlaps
    });
}

fn apply(text: &str, repairs: &[Repair]) -> String {
    let mut edits: Vec<&(Range<usize>, String)> =
        repairs.iter().flat_map(|repair| &repair.edits).collect();
    edits.sort_by_key(|(range, _)| (range.start, range.end));
    let mut out = String::with_capacity(text.len() + 64);
    let mut at = 0;
    for (range, replacement) in edits {
        out.push_str(&text[at..range.start]);
        out.push_str(replacement);
        at = range.end;
    }
    out.push_str(&text[at..]);
    out
}

/// Checks that `after` is `before` with exactly the changes of `repairs`.
fn verify(
    before: &ast::Grammar,
    after: &ast::Grammar,
    repairs: &[Repair],
    renames: &HashMap<String, String>,
) -> Result<(), String> {
    let mut expected = before.clone();
    let mut joined: HashSet<usize> = HashSet::new();
    for repair in repairs {
        if let Change::Join { bar } = repair.change
            && let Some(index) = expected
                .rules
                .iter()
                .rposition(|rule| rule.span.start < bar)
        {
            joined.insert(index);
        }
    }
    for rule in &mut expected.rules {
        if let Some(to) = renames.get(&rule.name.text) {
            rule.name.text = to.clone();
        }
        change_terms(&mut rule.body, &mut |term| {
            change_term(term, repairs, renames);
        });
        split_terms(&mut rule.body, repairs);
    }
    let wrong = |detail: String| Err(detail);
    if expected.rules.len() != after.rules.len() {
        return wrong(format!(
            "{} rules instead of {}",
            after.rules.len(),
            expected.rules.len()
        ));
    }
    for (index, (expected_rule, rule)) in expected.rules.iter().zip(&after.rules).enumerate() {
        let mut rule = rule.clone();
        if joined.contains(&index) {
            let own = expected_rule.body.sequences.len();
            if rule.body.sequences.len() <= own {
                return wrong(format!("rule `{}` gained no alternative", rule.name.text));
            }
            rule.body.sequences.truncate(own);
        }
        let expected_text = print_rules(std::slice::from_ref(expected_rule));
        let text = print_rules(std::slice::from_ref(&rule));
        if expected_text != text {
            return wrong(format!(
                "expected `{}`, got `{}`",
                expected_text.trim_end(),
                text.trim_end()
            ));
        }
    }
    Ok(())
}

/// Applies the tree side of the repairs to one term: renames, swapped classes, splits.
fn change_term(term: &mut Term, repairs: &[Repair], renames: &HashMap<String, String>) {
    match &mut term.kind {
        TermKind::RuleRef(name) => {
            if let Some(to) = renames.get(&name.text) {
                name.text = to.clone();
            }
        }
        TermKind::Class(class) => {
            for repair in repairs {
                if let Change::Class { span, items } = &repair.change
                    && *span == term.span
                {
                    for (item, &(first, last)) in class.items.iter_mut().zip(items) {
                        item.first = first;
                        item.last = last;
                    }
                }
            }
        }
        _ => {}
    }
}

/// The pieces of a split repetition, as terms.
fn pieces_as_terms(inner: &Term, pieces: &[(u64, Option<u64>)]) -> Vec<Term> {
    pieces
        .iter()
        .map(|&(min, max)| Term {
            kind: TermKind::Repeat(
                Box::new(inner.clone()),
                Quantifier {
                    min,
                    max,
                    style: QuantifierStyle::Braces,
                    span: Span::default(),
                },
            ),
            span: Span::default(),
        })
        .collect()
}

/// Calls `change` on every term of `alternatives` (nested ones after their parents),
/// replacing split repetitions by their pieces first.
fn change_terms(alternatives: &mut Alternatives, change: &mut impl FnMut(&mut Term)) {
    for sequence in &mut alternatives.sequences {
        for term in &mut sequence.terms {
            change_term_tree(term, change);
        }
    }
}

fn change_term_tree(term: &mut Term, change: &mut impl FnMut(&mut Term)) {
    grail_syntax::stack::deep(|| {
        change(term);
        match &mut term.kind {
            TermKind::Group(alternatives) => change_terms(alternatives, change),
            TermKind::Repeat(inner, _) => change_term_tree(inner, change),
            _ => {}
        }
    })
}

/// Replaces each split repetition of `alternatives` by its pieces (grouped when a
/// quantifier applies to it).
fn split_terms(alternatives: &mut Alternatives, repairs: &[Repair]) {
    for sequence in &mut alternatives.sequences {
        let mut terms = Vec::with_capacity(sequence.terms.len());
        for mut term in std::mem::take(&mut sequence.terms) {
            split_nested(&mut term, repairs);
            match pieces_of(&term, repairs) {
                Some(pieces) => terms.extend(pieces),
                None => terms.push(term),
            }
        }
        sequence.terms = terms;
    }
}

fn split_nested(term: &mut Term, repairs: &[Repair]) {
    grail_syntax::stack::deep(|| match &mut term.kind {
        TermKind::Group(alternatives) => split_terms(alternatives, repairs),
        TermKind::Repeat(inner, _) => {
            split_nested(inner, repairs);
            if let Some(pieces) = pieces_of(inner, repairs) {
                let span = inner.span;
                **inner = Term {
                    kind: TermKind::Group(Alternatives {
                        sequences: vec![ast::Sequence {
                            terms: pieces,
                            span,
                        }],
                        span,
                    }),
                    span,
                };
            }
        }
        _ => {}
    })
}

/// The pieces `term` is split into, when a repair splits it.
fn pieces_of(term: &Term, repairs: &[Repair]) -> Option<Vec<Term>> {
    let TermKind::Repeat(inner, _) = &term.kind else {
        return None;
    };
    repairs.iter().find_map(|repair| match &repair.change {
        Change::Split { span, pieces } if *span == term.span => {
            Some(pieces_as_terms(inner, pieces))
        }
        _ => None,
    })
}

/// Calls `visit` on every term of `alternatives`, nested ones included.
fn visit_terms<'a>(alternatives: &'a Alternatives, visit: &mut impl FnMut(&'a Term)) {
    for term in alternatives
        .sequences
        .iter()
        .flat_map(|sequence| &sequence.terms)
    {
        visit_term(term, visit);
    }
}

fn visit_term<'a>(term: &'a Term, visit: &mut impl FnMut(&'a Term)) {
    grail_syntax::stack::deep(|| {
        visit(term);
        match &term.kind {
            TermKind::Group(alternatives) => visit_terms(alternatives, visit),
            TermKind::Repeat(inner, _) => visit_term(inner, visit),
            _ => {}
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_split_into_pieces_that_add_up() {
        assert_eq!(split_bounds(0, Some(2000), 2000), None);
        // Two million pieces: left for the author.
        assert_eq!(split_bounds(0, Some(4_000_000_000), 2000), None);
        assert_eq!(
            split_bounds(2500, Some(2500), 2000),
            Some(vec![(1250, Some(1250)), (1250, Some(1250))])
        );
        assert_eq!(
            split_bounds(10, Some(4001), 2000),
            Some(vec![(10, Some(1334)), (0, Some(1334)), (0, Some(1333))])
        );
        assert_eq!(
            split_bounds(3000, None, 1000),
            Some(vec![(1000, Some(1000)), (1000, Some(1000)), (1000, None)])
        );
        for (min, max, chunk) in [(7, Some(9999), 13), (0, Some(20001), 2000), (4321, None, 7)] {
            let pieces = split_bounds(min, max, chunk).unwrap();
            assert_eq!(pieces.iter().map(|piece| piece.0).sum::<u64>(), min);
            assert!(
                pieces
                    .iter()
                    .all(|piece| piece.1.unwrap_or(piece.0) <= chunk)
            );
            if let Some(max) = max {
                assert_eq!(
                    pieces.iter().map(|piece| piece.1.unwrap()).sum::<u64>(),
                    max
                );
            }
        }
    }

    #[test]
    fn a_name_also_written_where_the_parser_dropped_text_is_not_renamed() {
        let source = "root ::= a_b \"unterminated\na_b ::= \"x\"\n";
        let fixed = fix(source);
        assert!(fixed.source.contains("a_b ::="), "{}", fixed.source);
        assert!(fixed.source.contains("root ::= a_b"), "{}", fixed.source);
    }

    #[test]
    fn a_bare_bar_line_is_left_for_the_author() {
        for source in [
            "root ::= \"a\"\n|\ny ::= \"b\"\n",
            "root ::= \"a\"\n| # alt\ny ::= \"b\"\n",
        ] {
            let fixed = fix(source);
            assert_eq!(fixed.source, source);
            assert!(fixed.fixes.is_empty());
        }
    }

    #[test]
    fn a_join_the_parser_would_read_differently_is_declined() {
        // `<` on line 2 opens a token that `>` closes on line 3: joined, line 2 would take
        // the unterminated literal of line 3 into the rule, and the rule would be lost.
        let source = "root ::= <>\n|<\n|>\"";
        let fixed = fix(source);
        assert_eq!(fixed.source, source);
        assert!(fixed.fixes.is_empty());
        assert_eq!(
            fixed.declined,
            [Fix {
                kind: FixKind::LineJoined,
                line: 2
            }]
        );
        // A repair that reads back is still made beside it.
        let source = "root ::= <> [z-a]\n|<\n|>\"";
        let fixed = fix(source);
        assert_eq!(fixed.source, "root ::= <> [a-z]\n|<\n|>\"");
        assert_eq!(fixed.fixes.len(), 1);
        assert_eq!(fixed.declined.len(), 1);
    }

    #[test]
    fn names_are_renamed_apart_and_lines_joined() {
        let fixed = fix("root ::= a_b a-b\na_b ::= \"x\" # c\n  | \"y\"\na-b ::= \"z\"\n");
        assert_eq!(
            fixed.source,
            "root ::= a-b-2 a-b\na-b-2 ::= \"x\" | # c\n  \"y\"\na-b ::= \"z\"\n"
        );
        assert_eq!(
            fixed
                .fixes
                .iter()
                .map(|fix| (fix.line, fix.kind.to_string()))
                .collect::<Vec<_>>(),
            [
                (1, "renamed `a_b` to `a-b-2` (2 places)".to_string()),
                (
                    3,
                    "joined the line that starts with `|` to its rule (moved the `|` to the end of the line before)"
                        .to_string()
                ),
            ]
        );
    }

    /// Each fix's line and what it did.
    fn lines_and_kinds(fixes: &[Fix]) -> Vec<(usize, String)> {
        fixes
            .iter()
            .map(|fix| (fix.line, fix.kind.to_string()))
            .collect()
    }

    #[test]
    fn lines_end_at_a_lone_carriage_return_too() {
        for line_break in ["\n", "\r\n", "\r"] {
            let source = ["root ::= a_b", "a_b ::= [z-a]", "  | \"y\"", ""].join(line_break);
            let fixed = fix(&source);
            assert_eq!(
                lines_and_kinds(&fixed.fixes),
                [
                    (1, "renamed `a_b` to `a-b` (2 places)".to_string()),
                    (2, "swapped the reversed range's ends: `[z-a]` -> `[a-z]`".to_string()),
                    (
                        3,
                        "joined the line that starts with `|` to its rule (moved the `|` to the end of the line before)"
                            .to_string()
                    ),
                ],
                "{line_break:?}"
            );
        }
    }

    #[test]
    fn lines_are_those_of_the_original_text_after_a_split_adds_lines() {
        // The split writes the two-line group twice (a line more); the second range of
        // line 3's class is swapped a round later, in that longer text.
        let source = "root ::= (\"a\"\n  | \"b\"){0,3000} x\nx ::= [z-ay-b]\n";
        let fixed = fix(source);
        assert_eq!(
            fixed.source,
            "root ::= (\"a\"\n  | \"b\"){0,1500} (\"a\"\n  | \"b\"){0,1500} x\nx ::= [a-zb-y]\n"
        );
        let lines: Vec<usize> = fixed.fixes.iter().map(|fix| fix.line).collect();
        assert_eq!(lines, [1, 3, 3], "{:?}", lines_and_kinds(&fixed.fixes));
        // A repair made a round later inside the split's copies is on the line of the
        // text it was copied from.
        let source = "root ::= (\"a\"\n  | [z-a]){0,3000}\n";
        let fixed = fix(source);
        assert_eq!(
            fixed.source,
            "root ::= (\"a\"\n  | [a-z]){0,1500} (\"a\"\n  | [a-z]){0,1500}\n"
        );
        let lines: Vec<usize> = fixed.fixes.iter().map(|fix| fix.line).collect();
        assert_eq!(lines, [1, 2, 2], "{:?}", lines_and_kinds(&fixed.fixes));
    }

    #[test]
    fn nothing_to_fix_leaves_the_text_alone() {
        let source = "root ::= [a-z]{0,2000} # fine\n";
        assert_eq!(
            fix(source),
            Fixed {
                source: source.to_string(),
                fixes: Vec::new(),
                declined: Vec::new(),
            }
        );
    }
}
