//! Objects: declared properties in schema order (required ones first, as llama.cpp does),
//! then optional ones in order, then additional ones (or, with [`KeyOrder::Any`], all of
//! them in any order, for small objects); `minProperties`/`maxProperties`
//! counted along the way; `patternProperties` and `propertyNames` where they reduce to a
//! key grammar.
//!
//! The body is built from "slots" (each declared property, then the additional ones).
//! `rest(slot, count)` is the grammar of what may follow once `count` properties are
//! written; `count` is capped at the largest number the bounds mention, so the rules stay
//! few (without bounds, only "none yet" and "some" differ: the comma).

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use grail_grammar::{Expr, RuleId};

use super::string::excluding_llama;
use super::{Emitter, Primitive};
use crate::char_automaton::{AutomatonError, CharDfa};
use crate::diagnostic::{SchemaDiagnostic, Severity};
use crate::json_text::{encoded_text, is_written_as_itself};
use crate::options::KeyOrder;
use crate::pointer::joined;
use crate::shape::{KeySet, ObjectRules, Presence, Shape, Typed};

/// One declared property, ready to write.
struct Slot {
    /// `"name" space ":" space value`.
    pair: Expr,
    required: bool,
    /// Written before the others (see `ObjectRules::written_first`).
    first: bool,
    /// Its bit among the names presence conditions mention, if they mention it.
    tracked: Option<u32>,
}

/// The properties of one object, as slots.
struct Layout {
    slots: Vec<Slot>,
    /// `key ":" space value` for additional properties, if any are allowed.
    additional: Option<Expr>,
    min: u64,
    max: Option<u64>,
    /// Presence conditions, over the bits of the tracked names.
    presence: Vec<Presence>,
    /// The tracked names, by bit.
    tracked: Vec<String>,
}

impl Layout {
    /// Whether the presence conditions hold when the tracked names written are `bits`.
    fn conditions_hold(&self, bits: u32) -> bool {
        self.presence.iter().all(|condition| {
            condition.holds(&|property: &str| {
                self.tracked
                    .iter()
                    .position(|known| known == property)
                    .is_some_and(|bit| bits & (1 << bit) != 0)
            })
        })
    }
}

/// Most property names presence conditions may mention in one object (the grammar has a
/// state for each combination of them).
const MAX_TRACKED_NAMES: usize = 12;

/// Most key rules (`patternProperties` and what intersections make of
/// `additionalProperties`) on one object: keys are told apart by which rules cover them,
/// one kind of key per combination.
const MAX_KEY_RULES: usize = 6;

/// Most states (sets of written properties × counts) of one object's grammar in any key
/// order; larger objects keep the schema's order.
const MAX_ANY_ORDER_STATES: u64 = 4096;

/// A key rule as an automaton over property names.
struct KeyLanguage {
    /// The names the rule covers.
    language: CharDfa,
    /// What their values must be.
    shape: Shape,
    /// The rule's index among the object's key rules (`None` for the entry that only
    /// carries `propertyNames`).
    rule_index: Option<usize>,
    /// True for `patternProperties` (false for an `additionalProperties` rule).
    is_pattern: bool,
    /// `propertyNames`: the names allowed at all.
    names: Option<CharDfa>,
}

impl KeyLanguage {
    /// Whether the rule covers a declared (or required) name.
    fn covers_declared_name(&self, name: &str) -> bool {
        self.rule_index.is_some() && self.language.matches(name)
    }
}

impl Emitter<'_> {
    /// The objects `typed` allows; `None` when none.
    pub(super) fn object(&mut self, typed: &Typed, name: &str) -> Option<Expr> {
        let rules = &typed.object;
        if rules
            .max_properties
            .is_some_and(|max| max < rules.min_properties)
        {
            return None;
        }
        let layout = self.layout(rules, name)?;
        let required = layout.slots.iter().filter(|slot| slot.required).count() as u64;
        if layout.max.is_some_and(|max| max < required) {
            return None;
        }
        Some(self.braced(&layout, name))
    }

    /// `"{" space body space "}"`, the body written from `layout`.
    fn braced(&mut self, layout: &Layout, name: &str) -> Expr {
        let space = self.space();
        let body = self.object_body(layout, name);
        Expr::sequence([
            Expr::literal("{"),
            space.clone(),
            body,
            space,
            Expr::literal("}"),
        ])
    }

    /// `"property" space ":" space value` as the rule `<value_name>-kv` (see
    /// [`value_name`]).
    fn property_pair(
        &mut self,
        property: &str,
        value: Expr,
        value_name: &str,
        space: &Expr,
    ) -> Expr {
        let pair = Expr::sequence([
            key_literal(property),
            space.clone(),
            self.key_separator(),
            space.clone(),
            value,
        ]);
        self.wrap_rule(pair, joined(&[value_name, "-kv"]))
    }

    fn layout(&mut self, rules: &ObjectRules, name: &str) -> Option<Layout> {
        let space = self.space();
        let keys = self.key_languages(rules)?;
        let mut tracked: Vec<String> = Vec::new();
        for condition in &rules.presence {
            condition.names(&mut tracked);
        }
        if tracked.len() > MAX_TRACKED_NAMES {
            self.unsupported(
                "",
                "dependentRequired",
                format!(
                    "conditions on which properties are present mention {} names; at most {MAX_TRACKED_NAMES} are expressed",
                    tracked.len()
                ),
            );
            tracked.truncate(0);
        }
        let bit_of = |property: &str| {
            tracked
                .iter()
                .position(|known| known == property)
                .map(|bit| bit as u32)
        };
        // Every name written as a slot: declared ones, then required and tracked ones the
        // schema does not declare (their value is what the key rules or the additional
        // schema say).
        let required = Names::of(rules.required.iter().map(String::as_str));
        let declared = Names::of(
            rules
                .properties
                .iter()
                .map(|(property, _)| property.as_str()),
        );
        let mut named: Vec<(&str, Shape, bool)> = rules
            .properties
            .iter()
            .map(|(property, shape)| {
                (
                    property.as_str(),
                    shape.clone(),
                    required.contains(property),
                )
            })
            .collect();
        let mut known_names = declared.clone();
        for property in rules.required.iter().chain(&tracked) {
            if known_names.insert(property) {
                named.push((property, Shape::Any, required.contains(property)));
            }
        }
        let mut slots = Vec::with_capacity(named.len());
        let mut written: Vec<&str> = Vec::with_capacity(named.len());
        for (property, declared_shape, required) in named {
            // A name the slots govern is never an additional property, even when nothing
            // may be its value.
            written.push(property);
            let mut shape = if declared.contains(property) {
                declared_shape
            } else if keys.iter().any(|key| key.covers_declared_name(property)) {
                Shape::Any
            } else {
                rules.additional.clone()
            };
            for key in &keys {
                if key.rule_index.is_some() && key.covers_declared_name(property) {
                    shape = self.simplifier().meet("", shape, key.shape.clone());
                }
            }
            if let Some(names) = &keys.first().and_then(|key| key.names.clone())
                && !names.matches(property)
            {
                shape = Shape::Never;
            }
            if shape == Shape::Never {
                if required {
                    return None;
                }
                continue;
            }
            let value_name = value_name(name, property);
            let value = self.emit_nested(&shape, &value_name);
            let pair = self.property_pair(property, value, &value_name, &space);
            slots.push(Slot {
                pair,
                required,
                first: rules.written_first.iter().any(|first| first == property),
                tracked: bit_of(property),
            });
        }
        // Required properties first, in schema order, then the others (those only a
        // presence condition requires among them: see `ObjectRules::written_first`).
        slots.sort_by_key(|slot| !slot.first);
        let additional = self.additional_pairs(rules, &keys, &written, name)?;
        Some(Layout {
            slots,
            additional,
            min: rules.min_properties,
            max: rules.max_properties,
            presence: rules.presence.clone(),
            tracked,
        })
    }

    /// `key ":" space value` for the properties the slots do not write, as one choice
    /// per kind of key (which key rules cover it); `None` inside when no such property
    /// may appear. The outer `None` when the object cannot be written.
    fn additional_pairs(
        &mut self,
        rules: &ObjectRules,
        keys: &[KeyLanguage],
        written: &[&str],
        name: &str,
    ) -> Option<Option<Expr>> {
        let space = self.space();
        let value_name = value_name(name, "additional");
        if keys.is_empty() {
            // No key rules: any other key takes the additional schema.
            if rules.additional == Shape::Never {
                return Some(None);
            }
            let value = self.emit_nested(&rules.additional, &value_name);
            let key = if written.is_empty() {
                self.primitive(Primitive::String)
            } else {
                let rule_name = format!("{value_name}-k");
                let quote = Expr::literal("\"");
                if self.options.llama_dialect() {
                    let char = self.primitive(Primitive::Char);
                    let others = excluding_llama(written, &char, &mut |expr| {
                        self.wrap_rule(expr, &rule_name)
                    });
                    let others = self.wrap_rule(others, &rule_name);
                    Expr::sequence([quote.clone(), others, quote])
                } else {
                    // The closing quote is inside the trie's rules (`Emitter::excluding`).
                    let others = self.excluding(written, &rule_name);
                    let others = self.wrap_rule(others, &rule_name);
                    Expr::sequence([quote, others])
                }
            };
            let pair = Expr::sequence([key, self.key_separator(), space, value]);
            return Some(Some(self.wrap_rule(pair, joined(&[&value_name, "-kv"]))));
        }
        // With key rules: one kind of key per set of rules covering it.
        let names = keys[0].names.clone();
        let rule_keys: Vec<&KeyLanguage> =
            keys.iter().filter(|key| key.rule_index.is_some()).collect();
        if rule_keys.len() > MAX_KEY_RULES {
            let origin = rules.key_rules[0].origin.clone();
            self.unsupported(
                &origin.pointer,
                origin.keyword,
                format!(
                    "{} rules on property names meet here; at most {MAX_KEY_RULES} are expressed",
                    rule_keys.len()
                ),
            );
            return Some(None);
        }
        let not_written = match CharDfa::from_strings(written) {
            Ok(automaton) => automaton.complement(),
            Err(error) => return self.key_failure(rules, error),
        };
        let mut choices = Vec::new();
        for subset in 0u32..(1 << rule_keys.len()) {
            let mut language = match &names {
                Some(names) => match names.intersection(&not_written) {
                    Ok(language) => language,
                    Err(error) => return self.key_failure(rules, error),
                },
                None => not_written.clone(),
            };
            let mut shape = Shape::Any;
            let mut any_rule = false;
            for (bit, key) in rule_keys.iter().enumerate() {
                let step = if subset & (1 << bit) != 0 {
                    any_rule |= key.is_pattern;
                    shape = self.simplifier().meet("", shape, key.shape.clone());
                    language.intersection(&key.language)
                } else {
                    language.difference(&key.language)
                };
                language = match step {
                    Ok(language) => language,
                    Err(error) => return self.key_failure(rules, error),
                };
                if language.is_empty() {
                    break;
                }
            }
            if language.is_empty() {
                continue;
            }
            if !any_rule {
                shape = self.simplifier().meet("", shape, rules.additional.clone());
            }
            if shape == Shape::Never {
                continue;
            }
            let limit = self.options.limits.max_string_states;
            if language.state_count() > limit {
                return self.key_failure(
                    rules,
                    AutomatonError::TooLarge {
                        states: language.state_count(),
                        limit,
                    },
                );
            }
            let kind_name = format!("{value_name}-{}", choices.len());
            // The closing quote inside the key's rules (see `CharDfa::to_expr`).
            let quote = Expr::literal("\"");
            let key = match language.to_expr(&mut self.builder, &format!("{kind_name}-k"), &quote) {
                Ok(key) => key,
                Err(_) => return None,
            };
            let value = self.emit_nested(&shape, &kind_name);
            let pair = Expr::sequence([
                quote,
                key,
                space.clone(),
                self.key_separator(),
                space.clone(),
                value,
            ]);
            choices.push(self.wrap_rule(pair, format!("{kind_name}-kv")));
        }
        Some(match choices.len() {
            0 => None,
            1 => choices.pop(),
            _ => Some(self.wrap_rule(Expr::Choice(choices), joined(&[&value_name, "-kv"]))),
        })
    }

    fn key_failure(&mut self, rules: &ObjectRules, error: AutomatonError) -> Option<Option<Expr>> {
        let (pointer, keyword) = rules
            .key_rules
            .first()
            .map(|rule| (rule.origin.pointer.clone(), rule.origin.keyword))
            .or_else(|| {
                rules
                    .property_names
                    .as_ref()
                    .map(|names| (names.pointer.clone(), names.keyword))
            })
            .unwrap_or_default();
        self.unsupported(
            &pointer,
            keyword,
            format!("the property names it allows: {error}"),
        );
        Some(None)
    }

    /// The key rules (and `propertyNames`) as automata over names; empty when the object
    /// has neither. The first entry carries the `propertyNames` language, if any.
    fn key_languages(&mut self, rules: &ObjectRules) -> Option<Vec<KeyLanguage>> {
        let names = match &rules.property_names {
            Some(names) if names.value != Shape::Any => match self.string_language(&names.value) {
                Some(language) => Some(language),
                None => {
                    let (pointer, keyword) = (names.pointer.clone(), names.keyword);
                    self.unsupported(
                            &pointer,
                            keyword,
                            "only `propertyNames` made of string constraints (`pattern`, lengths, `enum`) are expressed",
                        );
                    None
                }
            },
            _ => None,
        };
        if rules.key_rules.is_empty() && names.is_none() {
            return Some(Vec::new());
        }
        let mut keys = Vec::new();
        for (index, rule) in rules.key_rules.iter().enumerate() {
            let language = match &rule.keys {
                KeySet::Pattern(pattern) => CharDfa::from_pattern(pattern),
                KeySet::NoneOf { patterns, names } => {
                    let mut covered = CharDfa::from_strings(
                        &names.iter().map(String::as_str).collect::<Vec<_>>(),
                    );
                    for pattern in patterns {
                        covered = covered.and_then(|covered| {
                            CharDfa::from_pattern(pattern)
                                .and_then(|language| covered.union(&language))
                        });
                    }
                    covered.map(|covered| covered.complement())
                }
            };
            match language {
                Ok(language) => keys.push(KeyLanguage {
                    language,
                    shape: rule.shape.clone(),
                    rule_index: Some(index),
                    is_pattern: matches!(rule.keys, KeySet::Pattern(_)),
                    names: names.clone(),
                }),
                Err(error) => {
                    let (pointer, keyword) = (rule.origin.pointer.clone(), rule.origin.keyword);
                    self.unsupported(
                        &pointer,
                        keyword,
                        format!("the property names it covers: {error}"),
                    );
                }
            }
        }
        if keys.is_empty() {
            // Only `propertyNames`: one entry carrying it.
            keys.push(KeyLanguage {
                language: CharDfa::everything(),
                shape: Shape::Any,
                rule_index: None,
                is_pattern: false,
                names,
            });
        }
        Some(keys)
    }

    /// What goes between the braces.
    fn object_body(&mut self, layout: &Layout, name: &str) -> Expr {
        // Counts above the cap behave alike: past the maximum (dead), or at least the
        // minimum and at least one (a comma comes next).
        let cap = match layout.max {
            Some(max) => max + 1,
            None => layout.min.max(1),
        };
        // Without declared properties, the schema's order is every order.
        if self.options.key_order == KeyOrder::Any && !layout.slots.is_empty() {
            let limit = self.options.limits.max_any_order_properties;
            let states = (1u64 << layout.slots.len().min(63)).saturating_mul(cap + 1);
            if layout.slots.len() <= limit && states <= MAX_ANY_ORDER_STATES {
                let mut memo = HashMap::default();
                return self.rest_any_order(layout, (0, 0), cap, name, &mut memo);
            }
            self.reader.findings().push(SchemaDiagnostic::new(
                Severity::Note,
                "key-order-schema",
                "",
                None,
                format!(
                    "the object of rule `{name}` declares {} properties (any order is written for at most {limit}, and {MAX_ANY_ORDER_STATES} states of its grammar); its properties keep the schema's order",
                    layout.slots.len()
                ),
            ));
        }
        if let Some(body) = self.required_in_order(layout) {
            return body;
        }
        let mut memo = RestMemo {
            rules: HashMap::default(),
            paths_into: paths_into(layout, cap),
            inline_depth: 0,
        };
        self.rest(layout, (0, 0, 0), cap, name, &mut memo)
    }

    /// The body [`Emitter::rest`] writes for an object whose properties are all required
    /// and the only ones (no additional properties, no presence conditions, counts the
    /// properties meet), few enough to be written inline: one sequence of the pairs and
    /// their separators, without the state graph. `None` for any other layout.
    fn required_in_order(&mut self, layout: &Layout) -> Option<Expr> {
        let count = layout.slots.len();
        let plain = layout.additional.is_none()
            && layout.presence.is_empty()
            && count <= MAX_INLINE_DEPTH as usize
            && layout.min <= count as u64
            && layout.max.is_none_or(|max| max >= count as u64)
            && layout.slots.iter().all(|slot| slot.required);
        if !plain {
            return None;
        }
        if count == 0 {
            return Some(Expr::Empty);
        }
        let space = self.space();
        // What `rest` writes, item for item: no separator before the first pair, and the
        // empty end.
        let mut items = Vec::with_capacity(2 * count + 1);
        items.push(Expr::Empty);
        for (index, slot) in layout.slots.iter().enumerate() {
            if index > 0 {
                items.push(self.separator_and_space(&space));
            }
            items.push(slot.pair.clone());
        }
        items.push(Expr::Empty);
        Some(Expr::Sequence(items))
    }

    /// The item separator and the whitespace after it, written before every property but
    /// the first.
    fn separator_and_space(&self, space: &Expr) -> Expr {
        Expr::sequence([self.item_separator(), space.clone()])
    }

    /// [`KeyOrder::Any`]: what may follow in `state` = (the slots written so far as bits,
    /// the properties written so far capped at `cap`). Declared and additional properties
    /// come in any order; each declared one at most once.
    fn rest_any_order(
        &mut self,
        layout: &Layout,
        state: (u64, u64),
        cap: u64,
        name: &str,
        memo: &mut HashMap<(u64, u64), RuleId>,
    ) -> Expr {
        // One level per property written: counts up to the cap recurse deeply.
        grail_syntax::stack::deep(|| self.rest_any_order_in(layout, state, cap, name, memo))
    }

    fn rest_any_order_in(
        &mut self,
        layout: &Layout,
        state: (u64, u64),
        cap: u64,
        name: &str,
        memo: &mut HashMap<(u64, u64), RuleId>,
    ) -> Expr {
        if let Some(&rule) = memo.get(&state) {
            return Expr::Rule(rule);
        }
        let (written, count) = state;
        if layout.max.is_some_and(|max| count > max) {
            return Expr::Choice(Vec::new());
        }
        // Declare first, so that paths back to this state (additional properties) find it.
        let rule = (state != (0, 0)).then(|| {
            let rule = self.declare(joined(&[name, "-rest"]));
            memo.insert(state, rule);
            rule
        });
        let space = self.space();
        let separator = if count == 0 {
            Expr::Empty
        } else {
            self.separator_and_space(&space)
        };
        let next_count = (count + 1).min(cap);
        let mut choices = Vec::new();
        for (index, slot) in layout.slots.iter().enumerate() {
            if written & (1 << index) != 0 {
                continue;
            }
            let then =
                self.rest_any_order(layout, (written | 1 << index, next_count), cap, name, memo);
            choices.push(Expr::sequence([separator.clone(), slot.pair.clone(), then]));
        }
        if let Some(pair) = &layout.additional {
            let then = self.rest_any_order(layout, (written, next_count), cap, name, memo);
            choices.push(Expr::sequence([separator.clone(), pair.clone(), then]));
        }
        let all_required = layout
            .slots
            .iter()
            .enumerate()
            .all(|(index, slot)| !slot.required || written & (1 << index) != 0);
        let bits = layout
            .slots
            .iter()
            .enumerate()
            .filter(|(index, _)| written & (1 << index) != 0)
            .filter_map(|(_, slot)| slot.tracked)
            .fold(0u32, |bits, bit| bits | 1 << bit);
        let conditions_hold = layout.conditions_hold(bits);
        if all_required && conditions_hold && count >= layout.min {
            choices.push(Expr::Empty);
        }
        let expr = Expr::Choice(choices);
        match rule {
            None => expr,
            Some(rule) => {
                self.builder.define(rule, expr).expect("new rule");
                Expr::Rule(rule)
            }
        }
    }

    /// What may follow in `state` = (the next slot, the properties written so far capped at
    /// `cap`, the tracked names written so far as bits): a rule when several paths reach
    /// the state, else written inline where its one path writes it (the start of the body
    /// among them), unless it would nest too deep.
    fn rest(
        &mut self,
        layout: &Layout,
        state: RestState,
        cap: u64,
        name: &str,
        memo: &mut RestMemo,
    ) -> Expr {
        if let Some(&rule) = memo.rules.get(&state) {
            return Expr::Rule(rule);
        }
        let shared = memo.paths_into.get(&state).is_some_and(|&paths| paths > 1);
        let inline = state == (0, 0, 0) || (!shared && memo.inline_depth < MAX_INLINE_DEPTH);
        let outer_depth = memo.inline_depth;
        memo.inline_depth = if inline { outer_depth + 1 } else { 0 };
        // One level per slot: objects of thousands of properties recurse deeply.
        let expr = grail_syntax::stack::deep(|| self.rest_expr(layout, state, cap, name, memo));
        memo.inline_depth = outer_depth;
        // An end with nothing left to write, or a dead end, needs no rule (`x-rest ::=
        // ""` would only add a name).
        let trivial = match &expr {
            Expr::Empty => true,
            Expr::Choice(choices) => choices.is_empty(),
            _ => false,
        };
        if inline || trivial {
            return expr;
        }
        let rule = self.declare(joined(&[name, "-rest"]));
        self.builder.define(rule, expr).expect("new rule");
        memo.rules.insert(state, rule);
        Expr::Rule(rule)
    }

    /// The grammar of what may follow in `state` (see [`Emitter::rest`]), its
    /// continuations as rules or inline.
    fn rest_expr(
        &mut self,
        layout: &Layout,
        state: RestState,
        cap: u64,
        name: &str,
        memo: &mut RestMemo,
    ) -> Expr {
        let (slot, count, bits) = state;
        let space = self.space();
        let separator = |count: u64| {
            if count == 0 {
                Expr::Empty
            } else {
                self.separator_and_space(&space)
            }
        };
        let conditions_hold = layout.conditions_hold(bits);
        let within = |written: u64| {
            conditions_hold && written >= layout.min && layout.max.is_none_or(|max| written <= max)
        };
        if slot == layout.slots.len() {
            // Only additional properties remain.
            match &layout.additional {
                _ if !conditions_hold => Expr::Choice(Vec::new()),
                None => {
                    if within(count) {
                        Expr::Empty
                    } else {
                        Expr::Choice(Vec::new())
                    }
                }
                Some(pair) => {
                    let least = layout.min.saturating_sub(count);
                    let most = layout.max.map(|max| max.saturating_sub(count));
                    if layout.max.is_some_and(|max| count > max) {
                        Expr::Choice(Vec::new())
                    } else if most == Some(0) {
                        Expr::Empty
                    } else if count == 0 {
                        // pair ("," pair){least-1, most-1}, optional when least is 0.
                        let more =
                            Expr::sequence([self.item_separator(), space.clone(), pair.clone()]);
                        let tail =
                            self.repeat(more, least.saturating_sub(1), most.map(|most| most - 1));
                        let list = Expr::sequence([pair.clone(), tail]);
                        if least == 0 { list.optional() } else { list }
                    } else {
                        let more =
                            Expr::sequence([self.item_separator(), space.clone(), pair.clone()]);
                        self.repeat(more, least, most)
                    }
                }
            }
        } else {
            let Some((after_written, after_skipped)) = slot_moves(layout, state, cap) else {
                return Expr::Choice(Vec::new());
            };
            let mut written = vec![separator(count), layout.slots[slot].pair.clone()];
            // A continuation written inline as a sequence joins this one (required
            // properties in a row make one flat sequence, however many).
            match self.rest(layout, after_written, cap, name, memo) {
                Expr::Sequence(items) => written.extend(items),
                then => written.push(then),
            }
            let written = Expr::Sequence(written);
            match after_skipped {
                None => written,
                Some(after_skipped) => {
                    let skipped = self.rest(layout, after_skipped, cap, name, memo);
                    Expr::choice([written, skipped])
                }
            }
        }
    }
}

/// A state of [`Emitter::rest`]: (the next slot, the properties written so far capped at
/// the cap, the tracked names written so far as bits).
type RestState = (usize, u64, u32);

/// The rules of the states of one object body written so far, and how many paths lead into
/// each state.
struct RestMemo {
    rules: HashMap<RestState, RuleId>,
    paths_into: HashMap<RestState, u32>,
    /// How many states are written inline around the one at hand (optional properties
    /// in a row nest one choice per property).
    inline_depth: u32,
}

/// The most states written inline inside one another before one becomes a rule (keeps
/// the expressions of objects with thousands of optional properties shallow).
const MAX_INLINE_DEPTH: u32 = 16;

/// The states a slot state moves to: (after writing its slot, after skipping it when it is
/// optional); `None` at the end of the slots or past the maximum count.
fn slot_moves(
    layout: &Layout,
    (slot, count, bits): RestState,
    cap: u64,
) -> Option<(RestState, Option<RestState>)> {
    if slot == layout.slots.len() || layout.max.is_some_and(|max| count > max) {
        return None;
    }
    let this = &layout.slots[slot];
    let written = (
        slot + 1,
        (count + 1).min(cap),
        bits | this.tracked.map_or(0, |bit| 1 << bit),
    );
    let skipped = (!this.required).then_some((slot + 1, count, bits));
    Some((written, skipped))
}

/// How many moves of [`Emitter::rest`]'s state graph ([`slot_moves`]) lead into each
/// state reached from the start.
fn paths_into(layout: &Layout, cap: u64) -> HashMap<RestState, u32> {
    // Without bounds or conditions, two states per slot (none written yet, some).
    let mut paths: HashMap<RestState, u32> =
        HashMap::with_capacity_and_hasher(2 * layout.slots.len() + 2, Default::default());
    let mut pending: Vec<RestState> = vec![(0, 0, 0)];
    while let Some(state) = pending.pop() {
        let Some((written, skipped)) = slot_moves(layout, state, cap) else {
            continue;
        };
        for target in std::iter::once(written).chain(skipped) {
            let seen = paths.entry(target).or_insert(0);
            *seen += 1;
            // A state's own moves are followed once, when it is first reached.
            if *seen == 1 {
                pending.push(target);
            }
        }
    }
    paths
}

/// The name of the rules of `property`'s value in the object whose rule is `object` (the
/// property's own name at the root).
fn value_name(object: &str, property: &str) -> String {
    if object == "root" {
        property.to_string()
    } else {
        joined(&[object, "-", property])
    }
}

/// `"name"` as written in JSON (canonical form).
fn key_literal(name: &str) -> Expr {
    if is_written_as_itself(name) {
        // One allocation: the quotes around the name as it is.
        let mut quoted = String::with_capacity(name.len() + 2);
        quoted.push('"');
        quoted.push_str(name);
        quoted.push('"');
        return Expr::Literal(quoted.into());
    }
    Expr::sequence([Expr::literal("\""), encoded_text(name), Expr::literal("\"")])
}

/// Property names looked up many times while an object is laid out: scanned when few
/// (most objects), hashed when many (objects with thousands of properties, where scans
/// would be quadratic).
#[derive(Clone)]
struct Names<'n> {
    list: Vec<&'n str>,
    set: Option<HashSet<&'n str>>,
}

/// Above this many names, [`Names`] hashes them.
const NAMES_SCANNED: usize = 32;

impl<'n> Names<'n> {
    /// The names of `names`.
    fn of(names: impl Iterator<Item = &'n str>) -> Names<'n> {
        let mut all = Names {
            list: Vec::with_capacity(names.size_hint().0.min(NAMES_SCANNED + 1)),
            set: None,
        };
        for name in names {
            all.insert(name);
        }
        all
    }

    /// Whether `name` is one of the names.
    fn contains(&self, name: &str) -> bool {
        match &self.set {
            Some(set) => set.contains(name),
            None => self.list.contains(&name),
        }
    }

    /// Adds `name`; false when it was there already.
    fn insert(&mut self, name: &'n str) -> bool {
        if self.contains(name) {
            return false;
        }
        self.list.push(name);
        if let Some(set) = &mut self.set {
            set.insert(name);
        } else if self.list.len() > NAMES_SCANNED {
            self.set = Some(self.list.iter().copied().collect());
        }
        true
    }
}

#[cfg(test)]
mod names_tests {
    use super::{NAMES_SCANNED, Names};

    #[test]
    fn names_are_found_whether_scanned_or_hashed() {
        let words: Vec<String> = (0..NAMES_SCANNED * 3).map(|n| format!("p{n}")).collect();
        let mut names = Names::of(words[..NAMES_SCANNED].iter().map(String::as_str));
        assert!(names.set.is_none());
        for (position, word) in words.iter().enumerate() {
            assert_eq!(names.contains(word), position < NAMES_SCANNED, "{word}");
            assert_eq!(names.insert(word), position >= NAMES_SCANNED, "{word}");
            assert!(!names.insert(word), "{word} is there now");
        }
        assert!(names.set.is_some());
        assert!(words.iter().all(|word| names.contains(word)));
        assert!(!names.contains("q"));
    }
}
