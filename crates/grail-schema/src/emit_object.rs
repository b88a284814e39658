//! Objects: declared properties in schema order (required ones first, as llama.cpp does),
//! then optional ones in order, then additional ones; `minProperties`/`maxProperties`
//! counted along the way; `patternProperties` and `propertyNames` where they reduce to a
//! key grammar.
//!
//! The body is built from "slots" (each declared property, then the additional ones).
//! `rest(slot, count)` is the grammar of what may follow once `count` properties are
//! written; `count` is capped at the largest number the bounds mention, so the rules stay
//! few (without bounds, only "none yet" and "some" differ: the comma).

use std::collections::HashMap;

use grail_grammar::{Expr, RuleId};

use crate::convert::Converter;
use crate::emit_string::{excluding, excluding_llama};
use crate::json_text::encoded_text;
use crate::shape::{ObjectRules, Presence, Shape, Typed};

/// One declared property, ready to write.
struct Slot {
    /// `"name" space ":" space value`.
    pair: Expr,
    required: bool,
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

/// Most property names presence conditions may mention in one object (the grammar has a
/// state for each combination of them).
const MAX_TRACKED_NAMES: usize = 12;

impl Converter<'_> {
    /// The objects `typed` allows; `None` when none.
    pub fn object(&mut self, typed: &Typed, name: &str) -> Option<Expr> {
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
        let space = self.space();
        let body = self.object_body(&layout, name);
        Some(Expr::sequence([
            Expr::literal("{"),
            space.clone(),
            body,
            space,
            Expr::literal("}"),
        ]))
    }

    fn layout(&mut self, rules: &ObjectRules, name: &str) -> Option<Layout> {
        let space = self.space();
        if let Some(names) = &rules.property_names
            && names.value != Shape::Any
        {
            let (pointer, keyword) = (names.pointer.clone(), names.keyword);
            self.unsupported(
                &pointer,
                keyword,
                "`propertyNames` is not expressed in the grammar yet",
            );
        }
        if let Some((pattern, _)) = rules.pattern_properties.first() {
            let (pointer, keyword) = (pattern.pointer.clone(), pattern.keyword);
            self.unsupported(
                &pointer,
                keyword,
                "`patternProperties` is not expressed in the grammar yet",
            );
        }
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
        let mut slots = Vec::new();
        let mut declared: Vec<String> = Vec::new();
        for (property, shape) in &rules.properties {
            declared.push(property.clone());
            let required = rules.required.contains(property);
            if *shape == Shape::Never {
                if required {
                    return None;
                }
                continue;
            }
            let value_name = if name == "root" {
                property.clone()
            } else {
                format!("{name}-{property}")
            };
            let value = self.emit_as_rule(shape, &value_name);
            let pair = Expr::sequence([
                key_literal(property),
                space.clone(),
                Expr::literal(":"),
                space.clone(),
                value,
            ]);
            let pair = self.wrap_rule(pair, &format!("{value_name}-kv"));
            slots.push(Slot {
                pair,
                required,
                tracked: bit_of(property),
            });
        }
        // Required names the schema does not declare take the additional schema, and so do
        // the names presence conditions mention (as optional properties).
        let mut undeclared: Vec<(String, bool)> = rules
            .required
            .iter()
            .map(|property| (property.clone(), true))
            .collect();
        for property in &tracked {
            if !rules.required.contains(property) {
                undeclared.push((property.clone(), false));
            }
        }
        for (property, required) in &undeclared {
            let (property, required) = (property, *required);
            if declared.contains(property) {
                continue;
            }
            if rules.additional == Shape::Never {
                if required {
                    return None;
                }
                continue;
            }
            declared.push(property.clone());
            let value = self.emit_as_rule(&rules.additional, &format!("{name}-{property}"));
            let pair = Expr::sequence([
                key_literal(property),
                space.clone(),
                Expr::literal(":"),
                space.clone(),
                value,
            ]);
            slots.push(Slot {
                pair,
                required,
                tracked: bit_of(property),
            });
        }
        // Required properties first, in schema order, then the optional ones.
        slots.sort_by_key(|slot| !slot.required);
        let additional = if rules.additional == Shape::Never {
            None
        } else {
            let value_name = if name == "root" {
                "additional".to_string()
            } else {
                format!("{name}-additional")
            };
            let value = self.emit_as_rule(&rules.additional, &value_name);
            let key = if declared.is_empty() {
                self.primitive(crate::emit::Primitive::String)
            } else {
                let others = if self.options.llama_dialect() {
                    let char = self.primitive(crate::emit::Primitive::Char);
                    excluding_llama(&declared, &char)
                } else {
                    let any = self.primitive(crate::emit::Primitive::CanonicalChar);
                    excluding(&declared, &any)
                };
                let others = self.wrap_rule(others, &format!("{value_name}-k"));
                Expr::sequence([Expr::literal("\""), others, Expr::literal("\"")])
            };
            let pair = Expr::sequence([key, Expr::literal(":"), space.clone(), value]);
            Some(self.wrap_rule(pair, &format!("{value_name}-kv")))
        };
        Some(Layout {
            slots,
            additional,
            min: rules.min_properties,
            max: rules.max_properties,
            presence: rules.presence.clone(),
            tracked,
        })
    }

    /// What goes between the braces.
    fn object_body(&mut self, layout: &Layout, name: &str) -> Expr {
        // Counts above the cap behave alike: past the maximum (dead), or at least the
        // minimum and at least one (a comma comes next).
        let cap = match layout.max {
            Some(max) => max + 1,
            None => layout.min.max(1),
        };
        let mut memo: HashMap<(usize, u64, u32), RuleId> = HashMap::new();
        self.rest(layout, (0, 0, 0), cap, name, &mut memo)
    }

    /// What may follow in `state` = (the next slot, the properties written so far capped at
    /// `cap`, the tracked names written so far as bits).
    fn rest(
        &mut self,
        layout: &Layout,
        state: (usize, u64, u32),
        cap: u64,
        name: &str,
        memo: &mut HashMap<(usize, u64, u32), RuleId>,
    ) -> Expr {
        if let Some(&rule) = memo.get(&state) {
            return Expr::Rule(rule);
        }
        let (slot, count, bits) = state;
        let space = self.space();
        let separator = |count: u64| {
            if count == 0 {
                Expr::Empty
            } else {
                Expr::sequence([Expr::literal(","), space.clone()])
            }
        };
        let conditions_hold = layout.presence.iter().all(|condition| {
            condition.holds(&|property: &str| {
                layout
                    .tracked
                    .iter()
                    .position(|known| known == property)
                    .is_some_and(|bit| bits & (1 << bit) != 0)
            })
        });
        let within = |written: u64| {
            conditions_hold && written >= layout.min && layout.max.is_none_or(|max| written <= max)
        };
        let expr = if slot == layout.slots.len() {
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
                            Expr::sequence([Expr::literal(","), space.clone(), pair.clone()]);
                        let tail =
                            self.repeat(more, least.saturating_sub(1), most.map(|most| most - 1));
                        let list = Expr::sequence([pair.clone(), tail]);
                        if least == 0 { list.optional() } else { list }
                    } else {
                        let more =
                            Expr::sequence([Expr::literal(","), space.clone(), pair.clone()]);
                        self.repeat(more, least, most)
                    }
                }
            }
        } else {
            let this = &layout.slots[slot];
            if layout.max.is_some_and(|max| count > max) {
                return Expr::Choice(Vec::new());
            }
            let next_count = (count + 1).min(cap);
            let next_bits = bits | this.tracked.map_or(0, |bit| 1 << bit);
            let written = Expr::sequence([
                separator(count),
                this.pair.clone(),
                self.rest(layout, (slot + 1, next_count, next_bits), cap, name, memo),
            ]);
            if this.required {
                written
            } else {
                let skipped = self.rest(layout, (slot + 1, count, bits), cap, name, memo);
                Expr::choice([written, skipped])
            }
        };
        // The start of the body stays inline; every other state is a rule, shared by the
        // paths that reach it.
        if state == (0, 0, 0) {
            return expr;
        }
        let rule = self.declare(&format!("{name}-rest"));
        self.builder.define(rule, expr).expect("new rule");
        memo.insert(state, rule);
        Expr::Rule(rule)
    }
}

/// `"name"` as written in JSON (canonical form).
fn key_literal(name: &str) -> Expr {
    match encoded_text(name) {
        Expr::Literal(text) => Expr::literal(format!("\"{text}\"")),
        other => Expr::sequence([Expr::literal("\""), other, Expr::literal("\"")]),
    }
}
