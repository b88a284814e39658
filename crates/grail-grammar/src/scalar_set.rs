//! Sets of Unicode scalar values as sorted, disjoint, merged inclusive ranges: the one
//! interval set of characters the grammar, the matcher and the schema converter share.

use crate::charset::{CharSet, MAX_CODE_POINT, merge_ranges};

/// True for a Unicode scalar value (a code point that is not a surrogate).
fn is_scalar(code_point: u32) -> bool {
    char::from_u32(code_point).is_some()
}

/// A set of Unicode scalar values (never surrogates), as sorted, disjoint, non-adjacent
/// inclusive ranges.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ScalarSet {
    ranges: Vec<(u32, u32)>,
}

impl ScalarSet {
    /// The empty set.
    pub fn empty() -> ScalarSet {
        ScalarSet { ranges: Vec::new() }
    }

    /// Every scalar value.
    pub fn all() -> ScalarSet {
        ScalarSet::from_ranges([(0, MAX_CODE_POINT)])
    }

    /// The set of scalars in the given inclusive ranges (any order, overlaps allowed;
    /// surrogates and values above U+10FFFF are dropped).
    pub fn from_ranges(ranges: impl IntoIterator<Item = (u32, u32)>) -> ScalarSet {
        let mut pieces: Vec<(u32, u32)> = Vec::new();
        for (first, last) in ranges {
            let last = last.min(MAX_CODE_POINT);
            if first > last {
                continue;
            }
            // Cut out the surrogates.
            if first < 0xD800 {
                pieces.push((first, last.min(0xD7FF)));
            }
            if last > 0xDFFF {
                pieces.push((first.max(0xE000), last));
            }
        }
        let merged = merge_ranges(pieces);
        // Ranges touching across the surrogate gap stay separate pieces; that is fine,
        // since no scalar lies between them, but merge them so equal sets compare equal.
        let mut joined: Vec<(u32, u32)> = Vec::with_capacity(merged.len());
        for (first, last) in merged {
            match joined.last_mut() {
                Some(previous) if previous.1 == 0xD7FF && first == 0xE000 => previous.1 = last,
                _ => joined.push((first, last)),
            }
        }
        ScalarSet { ranges: joined }
    }

    /// The scalars a grammar character class matches (negation applied).
    pub fn from_char_set(set: &CharSet) -> ScalarSet {
        let listed = ScalarSet::from_ranges(set.ranges().iter().copied());
        if set.is_negated() {
            listed.complement()
        } else {
            listed
        }
    }

    /// The ranges, sorted. A range may span the surrogates (`[0xD000, 0xE0FF]`); the
    /// surrogates inside it are not members.
    pub fn ranges(&self) -> &[(u32, u32)] {
        &self.ranges
    }

    /// True when the set holds no scalar.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// How many scalars the set holds.
    pub fn len(&self) -> u64 {
        self.ranges
            .iter()
            .map(|&(first, last)| {
                let span = u64::from(last - first) + 1;
                let surrogates = overlap(first, last, 0xD800, 0xDFFF);
                span - surrogates
            })
            .sum()
    }

    /// True when `code_point` is in the set.
    pub fn contains(&self, code_point: u32) -> bool {
        if !is_scalar(code_point) {
            return false;
        }
        let index = self.ranges.partition_point(|&(_, last)| last < code_point);
        self.ranges
            .get(index)
            .is_some_and(|&(first, _)| first <= code_point)
    }

    /// The scalars not in the set.
    pub fn complement(&self) -> ScalarSet {
        let mut gaps = Vec::with_capacity(self.ranges.len() + 1);
        let mut next = 0u32;
        for &(first, last) in &self.ranges {
            if first > next {
                gaps.push((next, first - 1));
            }
            next = last.saturating_add(1);
        }
        if next <= MAX_CODE_POINT {
            gaps.push((next, MAX_CODE_POINT));
        }
        ScalarSet::from_ranges(gaps)
    }

    /// The union of two sets.
    pub fn union(&self, other: &ScalarSet) -> ScalarSet {
        ScalarSet::from_ranges(self.ranges.iter().chain(&other.ranges).copied())
    }

    /// The intersection of two sets.
    pub fn intersection(&self, other: &ScalarSet) -> ScalarSet {
        let mut result = Vec::new();
        let (mut left, mut right) = (0, 0);
        while left < self.ranges.len() && right < other.ranges.len() {
            let (a_first, a_last) = self.ranges[left];
            let (b_first, b_last) = other.ranges[right];
            let first = a_first.max(b_first);
            let last = a_last.min(b_last);
            if first <= last {
                result.push((first, last));
            }
            if a_last < b_last {
                left += 1;
            } else {
                right += 1;
            }
        }
        ScalarSet::from_ranges(result)
    }

    /// The scalars in `self` and not in `other`.
    pub fn difference(&self, other: &ScalarSet) -> ScalarSet {
        self.intersection(&other.complement())
    }

    /// The `index`-th scalar of the set in increasing order, if there is one.
    pub fn nth(&self, mut index: u64) -> Option<u32> {
        for &(first, last) in &self.ranges {
            let below_gap = if first < 0xD800 {
                u64::from(last.min(0xD7FF) - first) + 1
            } else {
                0
            };
            if index < below_gap {
                return Some(first + index as u32);
            }
            index -= below_gap;
            if last > 0xDFFF {
                let start = first.max(0xE000);
                let above_gap = u64::from(last - start) + 1;
                if index < above_gap {
                    return Some(start + index as u32);
                }
                index -= above_gap;
            }
        }
        None
    }
}

/// How many values `[first, last]` and `[low, high]` share.
fn overlap(first: u32, last: u32, low: u32, high: u32) -> u64 {
    let start = first.max(low);
    let end = last.min(high);
    if start > end {
        0
    } else {
        u64::from(end - start) + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_algebra_agrees_with_brute_force_on_a_small_universe() {
        let a = ScalarSet::from_ranges([(3, 9), (20, 25), (0xD700, 0xE010)]);
        let b = ScalarSet::from_ranges([(5, 21), (0xD7FF, 0xD7FF)]);
        for code_point in (0..40).chain(0xD6F0..0xE020) {
            let (in_a, in_b) = (a.contains(code_point), b.contains(code_point));
            assert_eq!(a.union(&b).contains(code_point), in_a || in_b);
            assert_eq!(a.intersection(&b).contains(code_point), in_a && in_b);
            assert_eq!(a.difference(&b).contains(code_point), in_a && !in_b);
            assert_eq!(
                a.complement().contains(code_point),
                is_scalar(code_point) && !in_a
            );
        }
        assert_eq!(
            a.len(),
            7 + 6 + (0xD7FF - 0xD700 + 1) + (0xE010 - 0xE000 + 1)
        );
        assert_eq!(ScalarSet::all().len(), 0x110000 - 0x800);
        assert_eq!(a.complement().complement(), a);
    }

    #[test]
    fn nth_walks_the_members_in_order() {
        let set = ScalarSet::from_ranges([(0xD7FE, 0xE001), (5, 6)]);
        let members: Vec<u32> = (0..set.len()).filter_map(|index| set.nth(index)).collect();
        assert_eq!(members, [5, 6, 0xD7FE, 0xD7FF, 0xE000, 0xE001]);
        assert_eq!(set.nth(6), None);
    }
}
