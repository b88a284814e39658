//! Anchors resolved: the HIR of a pattern turned into [`Node`]s where `^`, `$` and the
//! unanchored ends are decided.

use super::*;

// ---------------------------------------------------------------------------------------
// Anchors resolved: HIR → Node.
// ---------------------------------------------------------------------------------------

/// A regular expression over characters without anchors, kept simplified by its
/// constructors (`Nothing` only ever stands alone). Composite nodes know their depth and
/// whether they match the empty string. Cloning grows the stack as needed and dropping
/// uses none, so trees of any depth are safe while they are built.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Node {
    /// No string.
    Nothing,
    /// The empty string.
    Empty,
    /// A non-empty literal text.
    Text(String),
    /// One character of a non-empty set.
    Set(CharSet),
    /// The items one after another.
    Seq(Vec<Node>, Shape),
    /// Any one of the items.
    Alt(Vec<Node>, Shape),
    /// The item `min` to `max` times (`None`: no maximum).
    Repeat(Box<Node>, u32, Option<u32>, Shape),
}

/// What a composite node knows about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shape {
    depth: usize,
    nullable: bool,
}

impl Node {
    pub(super) fn set(set: CharSet) -> Node {
        if set.matches_nothing() {
            Node::Nothing
        } else {
            Node::Set(set)
        }
    }

    pub(super) fn depth(&self) -> usize {
        match self {
            Node::Seq(_, shape) | Node::Alt(_, shape) | Node::Repeat(_, _, _, shape) => shape.depth,
            _ => 1,
        }
    }

    /// True when the empty string matches.
    pub(super) fn nullable(&self) -> bool {
        match self {
            Node::Nothing | Node::Text(_) | Node::Set(_) => false,
            Node::Empty => true,
            Node::Seq(_, shape) | Node::Alt(_, shape) | Node::Repeat(_, _, _, shape) => {
                shape.nullable
            }
        }
    }

    pub(super) fn children_depth(items: &[Node]) -> usize {
        1 + items.iter().map(Node::depth).max().unwrap_or(0)
    }

    pub(super) fn new_seq(items: Vec<Node>) -> Node {
        let shape = Shape {
            depth: Node::children_depth(&items),
            nullable: items.iter().all(Node::nullable),
        };
        Node::Seq(items, shape)
    }

    pub(super) fn new_alt(items: Vec<Node>) -> Node {
        let shape = Shape {
            depth: Node::children_depth(&items),
            nullable: items.iter().any(Node::nullable),
        };
        Node::Alt(items, shape)
    }

    pub(super) fn new_repeat(item: Node, min: u32, max: Option<u32>) -> Node {
        let shape = Shape {
            depth: 1 + item.depth(),
            nullable: min == 0 || item.nullable(),
        };
        Node::Repeat(Box::new(item), min, max, shape)
    }

    pub(super) fn seq(items: impl IntoIterator<Item = Node>) -> Node {
        fn push(items: &mut Vec<Node>, item: Node) {
            if let (Some(Node::Text(previous)), Node::Text(next)) = (items.last_mut(), &item) {
                previous.push_str(next);
            } else {
                items.push(item);
            }
        }
        let mut flat = Vec::new();
        for mut item in items {
            match &mut item {
                Node::Nothing => return Node::Nothing,
                Node::Empty => {}
                Node::Seq(inner, _) => std::mem::take(inner)
                    .into_iter()
                    .for_each(|item| push(&mut flat, item)),
                _ => push(&mut flat, item),
            }
        }
        match flat.len() {
            0 => Node::Empty,
            1 => flat.pop().unwrap_or(Node::Empty),
            _ => Node::new_seq(flat),
        }
    }

    pub(super) fn alt(items: impl IntoIterator<Item = Node>) -> Node {
        let mut flat = Vec::new();
        for mut item in items {
            match &mut item {
                Node::Nothing => {}
                Node::Alt(inner, _) => flat.append(inner),
                _ => flat.push(item),
            }
        }
        // Alternatives that are single characters make one class.
        if flat.len() > 1
            && let Some(sets) = flat
                .iter()
                .map(Node::as_single_character_set)
                .collect::<Option<Vec<CharSet>>>()
        {
            let union = sets
                .iter()
                .fold(CharSet::new([], false), |union, set| union.union(set));
            return Node::set(union);
        }
        // An empty alternative says nothing beside another that can be empty.
        let other_nullable = flat
            .iter()
            .any(|item| *item != Node::Empty && item.nullable());
        let mut empty_kept = other_nullable;
        flat.retain(|item| {
            if *item != Node::Empty {
                return true;
            }
            let keep = !empty_kept;
            empty_kept = true;
            keep
        });
        match flat.len() {
            0 => Node::Nothing,
            1 => flat.pop().unwrap_or(Node::Nothing),
            _ => Node::new_alt(flat),
        }
    }

    pub(super) fn repeat(item: Node, min: u32, max: Option<u32>) -> Node {
        if max == Some(0) {
            return Node::Empty;
        }
        match item {
            Node::Nothing if min == 0 => Node::Empty,
            Node::Nothing => Node::Nothing,
            Node::Empty => Node::Empty,
            item if min == 1 && max == Some(1) => item,
            // llama.cpp refuses an unbounded repetition of something that can be empty
            // (left recursion), so repeat a body that cannot: x{m,} = x* when x can be
            // empty.
            item if max.is_none() && item.nullable() => match item.star_body() {
                Node::Nothing | Node::Empty => Node::Empty,
                body => Node::new_repeat(body, 0, None),
            },
            item => Node::new_repeat(item, min, max),
        }
    }

    pub(super) fn as_single_character_set(&self) -> Option<CharSet> {
        match self {
            Node::Set(set) => Some(set.clone()),
            Node::Text(text) => {
                let mut characters = text.chars();
                let only = characters.next()?;
                characters
                    .next()
                    .is_none()
                    .then(|| CharSet::single(only as u32))
            }
            _ => None,
        }
    }

    /// A node that cannot match the empty string whose `*` is this node's `*`.
    pub(super) fn star_body(mut self) -> Node {
        grail_syntax::stack::deep(|| match &mut self {
            Node::Nothing | Node::Empty => Node::Nothing,
            // (a|b)* = (a'|b')* when a'* = a* and b'* = b*.
            Node::Alt(items, _) => {
                Node::alt(std::mem::take(items).into_iter().map(Node::star_body))
            }
            // (a b)* = (a|b)* when both can be empty.
            Node::Seq(items, shape) if shape.nullable => {
                Node::alt(std::mem::take(items).into_iter().map(Node::star_body))
            }
            // (x{m,n})* = x* when x{m,n} can be empty.
            Node::Repeat(item, _, _, shape) if shape.nullable => {
                std::mem::replace(item.as_mut(), Node::Empty).star_body()
            }
            _ => self,
        })
    }

    pub(super) fn size(&self) -> usize {
        grail_syntax::stack::deep(|| match self {
            Node::Seq(items, _) | Node::Alt(items, _) => {
                1 + items.iter().map(Node::size).sum::<usize>()
            }
            Node::Repeat(item, _, _, _) => 1 + item.size(),
            _ => 1,
        })
    }
}

impl Clone for Node {
    fn clone(&self) -> Node {
        grail_syntax::stack::deep(|| match self {
            Node::Nothing => Node::Nothing,
            Node::Empty => Node::Empty,
            Node::Text(text) => Node::Text(text.clone()),
            Node::Set(set) => Node::Set(set.clone()),
            Node::Seq(items, shape) => Node::Seq(items.clone(), *shape),
            Node::Alt(items, shape) => Node::Alt(items.clone(), *shape),
            Node::Repeat(item, min, max, shape) => Node::Repeat(item.clone(), *min, *max, *shape),
        })
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        fn take_children(node: &mut Node, pending: &mut Vec<Node>) {
            match node {
                Node::Seq(items, _) | Node::Alt(items, _) => pending.append(items),
                Node::Repeat(item, _, _, _) => {
                    pending.push(std::mem::replace(item.as_mut(), Node::Empty))
                }
                _ => {}
            }
        }
        let mut pending = Vec::new();
        take_children(self, &mut pending);
        while let Some(mut node) = pending.pop() {
            take_children(&mut node, &mut pending);
        }
    }
}

/// How many items a sequence or alternation of `items` handles once flattened.
pub(super) fn flattened_length(items: &[Node]) -> usize {
    items
        .iter()
        .map(|item| match item {
            Node::Seq(inner, _) | Node::Alt(inner, _) => inner.len(),
            _ => 1,
        })
        .sum()
}

pub(super) fn has_start(hir: &Hir) -> bool {
    hir.properties().look_set().contains(Look::Start)
}

pub(super) fn has_end(hir: &Hir) -> bool {
    hir.properties().look_set().contains(Look::End)
}

/// Rewrites HIR with anchors into [`Node`]s without them.
///
/// `resolve(x, at_start, at_end)` is the strings `x` matches where its match starts at the
/// start of the whole string exactly when `at_start` and ends at its end exactly when
/// `at_end` (`^` then matches the empty string where `at_start` and the match has consumed
/// nothing yet, and nothing elsewhere; `$` likewise). A flag is dropped where `x` has no
/// such anchor, so the rewriting only duplicates what holds anchors.
pub(super) struct AnchorResolver {
    pub(super) budget: usize,
    pub(super) nullable_memo: HashMap<(usize, bool, bool), bool>,
}

impl AnchorResolver {
    pub(super) fn new(budget: usize) -> AnchorResolver {
        AnchorResolver {
            budget,
            nullable_memo: HashMap::new(),
        }
    }

    pub(super) fn charge(&mut self, nodes: usize) -> Result<(), PatternError> {
        self.budget = self
            .budget
            .checked_sub(nodes)
            .ok_or_else(|| PatternError::TooLarge {
                what: "the pattern's grammar (or its exact rewriting of anchors)".to_string(),
                offset: 0,
            })?;
        Ok(())
    }

    /// A copy of the sequence of `reversed_items` (last item first).
    pub(super) fn duplicate_sequence(
        &mut self,
        reversed_items: &[Node],
    ) -> Result<Node, PatternError> {
        self.charge(reversed_items.iter().map(Node::size).sum())?;
        self.seq(reversed_items.iter().rev().cloned())
    }

    /// [`Node::seq`], its work charged and its depth checked.
    pub(super) fn seq(
        &mut self,
        items: impl IntoIterator<Item = Node>,
    ) -> Result<Node, PatternError> {
        let items: Vec<Node> = items.into_iter().collect();
        self.charge(flattened_length(&items))?;
        self.checked_depth(Node::seq(items))
    }

    /// [`Node::alt`], its work charged and its depth checked.
    pub(super) fn alt(
        &mut self,
        items: impl IntoIterator<Item = Node>,
    ) -> Result<Node, PatternError> {
        let items: Vec<Node> = items.into_iter().collect();
        self.charge(flattened_length(&items))?;
        self.checked_depth(Node::alt(items))
    }

    /// [`Node::repeat`], its work charged and its depth checked.
    pub(super) fn repeat(
        &mut self,
        item: Node,
        min: u32,
        max: Option<u32>,
    ) -> Result<Node, PatternError> {
        self.charge(1)?;
        self.checked_depth(Node::repeat(item, min, max))
    }

    /// `node`, unless it nests deeper than an expression may.
    pub(super) fn checked_depth(&self, node: Node) -> Result<Node, PatternError> {
        if node.depth() > MAX_EXPRESSION_DEPTH {
            return Err(PatternError::TooLarge {
                what: format!("the pattern's grammar, nested deeper than {MAX_EXPRESSION_DEPTH},"),
                offset: 0,
            });
        }
        Ok(node)
    }

    /// The strings the whole search matches: some substring matches the pattern, with
    /// `^` and `$` at the string's ends.
    pub(super) fn search(&mut self, hir: &Hir) -> Result<Node, PatternError> {
        let anywhere = self.resolve(hir, false, false)?;
        let any = || Node::Set(CharSet::new([(0, 0x10FFFF)], false));
        let any_star = || Node::new_repeat(any(), 0, None);
        let any_plus = || Node::new_repeat(any(), 1, None);
        if anywhere.nullable() {
            return Ok(any_star());
        }
        Ok(match (has_start(hir), has_end(hir)) {
            (false, false) => Node::seq([any_star(), anywhere, any_star()]),
            (true, false) => Node::alt([
                Node::seq([self.resolve(hir, true, false)?, any_star()]),
                Node::seq([any_plus(), anywhere, any_star()]),
            ]),
            (false, true) => Node::alt([
                Node::seq([any_star(), self.resolve(hir, false, true)?]),
                Node::seq([any_star(), anywhere, any_plus()]),
            ]),
            (true, true) => Node::alt([
                self.resolve(hir, true, true)?,
                Node::seq([self.resolve(hir, true, false)?, any_plus()]),
                Node::seq([any_plus(), self.resolve(hir, false, true)?]),
                Node::seq([any_plus(), anywhere, any_plus()]),
            ]),
        })
    }

    pub(super) fn resolve(
        &mut self,
        hir: &Hir,
        at_start: bool,
        at_end: bool,
    ) -> Result<Node, PatternError> {
        let at_start = at_start && has_start(hir);
        let at_end = at_end && has_end(hir);
        self.charge(1)?;
        let node = grail_syntax::stack::deep(|| self.resolve_kind(hir, at_start, at_end))?;
        self.checked_depth(node)
    }

    pub(super) fn resolve_kind(
        &mut self,
        hir: &Hir,
        at_start: bool,
        at_end: bool,
    ) -> Result<Node, PatternError> {
        match hir.kind() {
            HirKind::Empty => Ok(Node::Empty),
            HirKind::Literal(literal) => match std::str::from_utf8(&literal.0) {
                Ok(text) => Ok(Node::Text(text.to_string())),
                Err(_) => Err(unsupported("a literal that is not UTF-8", 0)),
            },
            HirKind::Class(Class::Unicode(class)) => Ok(Node::set(CharSet::new(
                class
                    .ranges()
                    .iter()
                    .map(|range| (range.start() as u32, range.end() as u32)),
                false,
            ))),
            HirKind::Class(Class::Bytes(class)) => {
                if class.ranges().iter().all(|range| range.end() < 0x80) {
                    Ok(Node::set(CharSet::new(
                        class
                            .ranges()
                            .iter()
                            .map(|range| (u32::from(range.start()), u32::from(range.end()))),
                        false,
                    )))
                } else {
                    Err(unsupported("a class of bytes", 0))
                }
            }
            HirKind::Look(Look::Start) => Ok(if at_start { Node::Empty } else { Node::Nothing }),
            HirKind::Look(Look::End) => Ok(if at_end { Node::Empty } else { Node::Nothing }),
            HirKind::Look(other) => Err(unsupported(format!("assertion {other:?}"), 0)),
            HirKind::Capture(capture) => self.resolve(&capture.sub, at_start, at_end),
            HirKind::Alternation(branches) => {
                let mut resolved = Vec::with_capacity(branches.len());
                for branch in branches {
                    resolved.push(self.resolve(branch, at_start, at_end)?);
                }
                self.alt(resolved)
            }
            HirKind::Concat(items) => self.concat(items, at_start, at_end),
            HirKind::Repetition(repetition) => self.repetition(repetition, at_start, at_end),
        }
    }

    /// True when `hir` matches the empty string at a place described by the flags.
    pub(super) fn nullable(&mut self, hir: &Hir, at_start: bool, at_end: bool) -> bool {
        let at_start = at_start && has_start(hir);
        let at_end = at_end && has_end(hir);
        let key = (hir as *const Hir as usize, at_start, at_end);
        if let Some(&known) = self.nullable_memo.get(&key) {
            return known;
        }
        let nullable = grail_syntax::stack::deep(|| match hir.kind() {
            HirKind::Empty => true,
            HirKind::Literal(_) | HirKind::Class(_) => false,
            HirKind::Look(Look::Start) => at_start,
            HirKind::Look(Look::End) => at_end,
            HirKind::Look(_) => false,
            HirKind::Capture(capture) => self.nullable(&capture.sub, at_start, at_end),
            HirKind::Repetition(repetition) => {
                repetition.min == 0 || self.nullable(&repetition.sub, at_start, at_end)
            }
            HirKind::Concat(items) => items
                .iter()
                .all(|item| self.nullable(item, at_start, at_end)),
            HirKind::Alternation(branches) => branches
                .iter()
                .any(|branch| self.nullable(branch, at_start, at_end)),
        });
        self.nullable_memo.insert(key, nullable);
        nullable
    }

    /// `x1 x2 ... xn` at the place the flags describe.
    ///
    /// For `X Y` starting at the start (S) and ending at the end (E): `X` from S to the
    /// middle, then `Y` from the middle to E; or `X` empty at S, then `Y` from S to E; or
    /// `X` from S to E, then `Y` empty at E; or both empty with S and E at one place (the
    /// empty string). Folded from the right, with the suffixes at the middle and, while
    /// every item before them can be empty at S, at S.
    pub(super) fn concat(
        &mut self,
        items: &[Hir],
        at_start: bool,
        at_end: bool,
    ) -> Result<Node, PatternError> {
        if !at_start && !at_end {
            let mut resolved = Vec::with_capacity(items.len());
            for item in items {
                resolved.push(self.resolve(item, false, false)?);
            }
            return self.seq(resolved);
        }
        let count = items.len();
        let mut suffix_has_start = vec![false; count + 1];
        let mut suffix_nullable_from_middle = vec![true; count + 1];
        let mut suffix_nullable_from_start = vec![true; count + 1];
        for index in (0..count).rev() {
            let item = &items[index];
            suffix_has_start[index] = suffix_has_start[index + 1] || has_start(item);
            suffix_nullable_from_middle[index] =
                suffix_nullable_from_middle[index + 1] && self.nullable(item, false, at_end);
            suffix_nullable_from_start[index] =
                suffix_nullable_from_start[index + 1] && self.nullable(item, at_start, at_end);
        }
        let mut needs_start = vec![false; count + 1];
        needs_start[0] = at_start;
        for index in 0..count {
            needs_start[index + 1] =
                needs_start[index] && self.nullable(&items[index], at_start, false);
        }
        // The suffix after `index` from the middle, as its items in reverse order (made a
        // node only where it branches, so long sequences are not rebuilt item by item),
        // and from the start, as its alternatives (gathered in one list for the same
        // reason).
        let mut rest_from_middle: Vec<Node> = Vec::new();
        let mut rest_from_start: Vec<Node> = Vec::new();
        for index in (0..count).rev() {
            let item = &items[index];
            let item_ends_here = at_end && has_end(item) && suffix_nullable_from_middle[index + 1];
            if needs_start[index] && suffix_has_start[index] {
                let item_empty_at_start = self.nullable(item, at_start, false);
                // `item` empty at the start, then the rest from the start: keep its
                // alternatives; otherwise they are not wanted any more.
                if !(item_empty_at_start && suffix_has_start[index + 1]) {
                    rest_from_start.clear();
                }
                let first = self.resolve(item, at_start, false)?;
                let rest = self.duplicate_sequence(&rest_from_middle)?;
                let alternative = self.seq([first, rest])?;
                rest_from_start.push(alternative);
                if item_ends_here {
                    rest_from_start.push(self.resolve(item, at_start, at_end)?);
                }
                if at_end
                    && self.nullable(item, at_start, at_end)
                    && suffix_nullable_from_start[index + 1]
                    && !(item_empty_at_start && suffix_nullable_from_middle[index + 1])
                {
                    rest_from_start.push(Node::Empty);
                }
            } else {
                rest_from_start.clear();
            }
            let item_from_middle = self.resolve(item, false, false)?;
            if item_ends_here {
                let rest = self.seq(rest_from_middle.drain(..).rev())?;
                let ending = self.resolve(item, false, at_end)?;
                let continuing = self.seq([item_from_middle, rest])?;
                rest_from_middle.push(self.alt([continuing, ending])?);
            } else {
                rest_from_middle.push(item_from_middle);
            }
        }
        if at_start && suffix_has_start[0] {
            self.alt(rest_from_start)
        } else {
            self.seq(rest_from_middle.into_iter().rev())
        }
    }

    /// `x{min,max}` at the place the flags describe: the iterations before the first that
    /// consumes a character see the start, those after the last that does see the end.
    pub(super) fn repetition(
        &mut self,
        repetition: &Repetition,
        at_start: bool,
        at_end: bool,
    ) -> Result<Node, PatternError> {
        let item = &*repetition.sub;
        let (min, max) = (repetition.min, repetition.max);
        if !at_start && !at_end {
            let body = self.resolve(item, false, false)?;
            return self.repeat(body, min, max);
        }
        let max_less_one = max.map(|max| max.saturating_sub(1));
        let mut alternatives = Vec::new();
        match (at_start, at_end) {
            (true, true) => {
                let first_empty = self.nullable(item, true, false);
                let last_empty = self.nullable(item, false, true);
                // Empty iterations at either end fill up the count.
                let padded = first_empty || last_empty;
                if min == 0 || self.nullable(item, true, true) {
                    alternatives.push(Node::Empty);
                }
                // One iteration consumes everything.
                if max != Some(0) && (min <= 1 || padded) {
                    alternatives.push(self.resolve(item, true, true)?);
                }
                // A first and a last that consume, any in between.
                if max.is_none_or(|max| max >= 2) {
                    let low = if padded { 0 } else { min.max(2) - 2 };
                    let first = self.resolve(item, true, false)?;
                    let middle = self.resolve(item, false, false)?;
                    let middle = self.repeat(middle, low, max.map(|max| max.saturating_sub(2)))?;
                    let last = self.resolve(item, false, true)?;
                    alternatives.push(self.seq([first, middle, last])?);
                }
            }
            (true, false) => {
                // Empty iterations before the first that consumes fill up the count.
                // (The item away from the start can be empty only if it can at the start.)
                let padded = self.nullable(item, true, false);
                if min == 0 || padded {
                    alternatives.push(Node::Empty);
                }
                if max != Some(0) {
                    let low = if padded { 0 } else { min.max(1) - 1 };
                    let first = self.resolve(item, true, false)?;
                    let rest = self.resolve(item, false, false)?;
                    let rest = self.repeat(rest, low, max_less_one)?;
                    alternatives.push(self.seq([first, rest])?);
                }
            }
            (false, _) => {
                let padded = self.nullable(item, false, true);
                if min == 0 || padded {
                    alternatives.push(Node::Empty);
                }
                if max != Some(0) {
                    let low = if padded { 0 } else { min.max(1) - 1 };
                    let rest = self.resolve(item, false, false)?;
                    let rest = self.repeat(rest, low, max_less_one)?;
                    let last = self.resolve(item, false, true)?;
                    alternatives.push(self.seq([rest, last])?);
                }
            }
        }
        self.alt(alternatives)
    }
}
