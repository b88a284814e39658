//! Arrays: `prefixItems`, `items`, `minItems`, `maxItems`, `contains`, `uniqueItems`.

use grail_grammar::Expr;

use super::Emitter;
use crate::shape::{Shape, Typed};

impl Emitter<'_> {
    /// The arrays `typed` allows; `None` when none.
    pub(super) fn array(&mut self, typed: &Typed, name: &str) -> Option<Expr> {
        let rules = &typed.array;
        let (min, max) = (rules.min_items, rules.max_items);
        if max.is_some_and(|max| max < min) {
            return None;
        }
        if let Some(unique) = &rules.unique
            && max.is_none_or(|max| max > 1)
        {
            let (pointer, keyword) = (unique.pointer.clone(), unique.keyword);
            self.unsupported(
                &pointer,
                keyword,
                "a grammar cannot require the items of an array to differ",
            );
        }
        let space = self.space();
        let open = Expr::sequence([Expr::literal("["), space.clone()]);
        let close = Expr::sequence([space, Expr::literal("]")]);
        if !rules.contains.is_empty() {
            let body = self.containing(typed, name)?;
            return Some(Expr::sequence([open, body, close]));
        }
        // Items after the prefix: none when `items` is false.
        let item = (rules.items != Shape::Never).then(|| {
            let item_name = format!("{name}-item");
            self.emit_nested(&rules.items, &item_name)
        });
        let prefix: Vec<Expr> = rules
            .prefix
            .iter()
            .enumerate()
            .take(max.map_or(usize::MAX, |max| max as usize))
            .map(|(position, shape)| self.emit_nested(shape, &format!("{name}-tuple-{position}")))
            .collect();
        if prefix.iter().any(is_nothing) {
            // An item that nothing satisfies: only the items before it may appear.
            let usable = prefix.iter().position(is_nothing).expect("found");
            if (usable as u64) < min {
                return None;
            }
            if usable == 0 {
                return Some(Expr::sequence([open, close]));
            }
            return Some(Expr::sequence([
                open,
                self.prefix_list(&prefix[..usable], None, min, Some(usable as u64)),
                close,
            ]));
        }
        if prefix.is_empty() {
            let item = match item {
                Some(item) if !is_nothing(&item) => item,
                _ => {
                    return (min == 0).then(|| Expr::sequence([open, close]));
                }
            };
            let list = self.list(item, min, max)?;
            return Some(Expr::sequence([open, list, close]));
        }
        let item = item.filter(|item| !is_nothing(item));
        if item.is_none() && min > prefix.len() as u64 {
            return None;
        }
        let body = self.prefix_list(&prefix, item, min, max);
        Some(Expr::sequence([open, body, close]))
    }

    /// Items `prefix[0], prefix[1], ...` then `item`s, between `min` and `max` of them.
    fn prefix_list(
        &mut self,
        prefix: &[Expr],
        item: Option<Expr>,
        min: u64,
        max: Option<u64>,
    ) -> Expr {
        let space = self.space();
        let separator = Expr::sequence([self.item_separator(), space]);
        let count = prefix.len() as u64;
        // The tail after the prefix: `("," item){a,b}`.
        let tail = match &item {
            Some(item) if max.is_none_or(|max| max > count) => {
                let least = min.saturating_sub(count);
                let most = max.map(|max| max - count);
                let one = Expr::sequence([separator.clone(), item.clone()]);
                Some(self.repeat(one, least, most))
            }
            _ => None,
        };
        // Built from the last prefix item back: after item k, the rest is optional when
        // k+1 items already satisfy `min`.
        let mut rest = tail.unwrap_or(Expr::Empty);
        for position in (1..prefix.len()).rev() {
            let this = Expr::sequence([separator.clone(), prefix[position].clone(), rest]);
            rest = if (position as u64) >= min {
                this.optional()
            } else {
                this
            };
        }
        let whole = Expr::sequence([prefix[0].clone(), rest]);
        if min == 0 { whole.optional() } else { whole }
    }

    /// Arrays with `contains` (and `minContains`): `item* (item ∧ contains) item*`, the
    /// middle part repeated `minContains` times. Other combinations are unsupported.
    fn containing(&mut self, typed: &Typed, name: &str) -> Option<Expr> {
        let rules = &typed.array;
        let contains = rules.contains[0].clone();
        let located = |emitter: &mut Emitter<'_>, reason: &str| {
            emitter.unsupported(&contains.pointer, contains.keyword, reason.to_string());
        };
        if rules.contains.len() > 1 {
            located(self, "several `contains` apply at once");
        }
        if contains.value.max.is_some() {
            located(
                self,
                "`maxContains` needs the items that do not match `contains`, which a grammar cannot express here",
            );
        }
        if !rules.prefix.is_empty()
            || rules.max_items.is_some()
            || rules.min_items > contains.value.min.max(1)
        {
            located(
                self,
                "`contains` beside `prefixItems`, `maxItems` or a larger `minItems` is not expressed in the grammar",
            );
        }
        let needed = contains.value.min;
        let item_shape = rules.items.clone();
        let matching_shape = self.simplifier().meet(
            &contains.pointer,
            item_shape.clone(),
            contains.value.shape.clone(),
        );
        if needed == 0 {
            let item = self.emit_nested(&item_shape, &format!("{name}-item"));
            return self.list(item, rules.min_items, None);
        }
        if matching_shape == Shape::Never {
            return None;
        }
        let item = self.emit_nested(&item_shape, &format!("{name}-item"));
        let matching = self.emit_nested(&matching_shape, &format!("{name}-contains"));
        let space = self.space();
        let separator = Expr::sequence([self.item_separator(), space]);
        let others = Expr::sequence([item.clone(), separator.clone()]).zero_or_more();
        let after = Expr::sequence([separator.clone(), item]).zero_or_more();
        // others* matching ("," others* matching){needed-1} ("," item)*
        let again = Expr::sequence([separator, others.clone(), matching.clone()]);
        let repeated = self.repeat(again, needed - 1, Some(needed - 1));
        Some(Expr::sequence([others, matching, repeated, after]))
    }
}

fn is_nothing(expr: &Expr) -> bool {
    matches!(expr, Expr::Choice(choices) if choices.is_empty())
}
