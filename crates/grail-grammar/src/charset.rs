//! Sets of code points, as sorted disjoint ranges.

/// The largest Unicode scalar value.
pub const MAX_CODE_POINT: u32 = 0x10FFFF;

/// Sorts inclusive ranges and merges those that overlap or touch: the one range merge of
/// Grail's character sets ([`CharSet`], [`crate::ScalarSet`], the schema converter's
/// alphabets).
pub fn merge_ranges(mut ranges: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    ranges.sort_unstable();
    let mut merged: Vec<(u32, u32)> = Vec::with_capacity(ranges.len());
    for (first, last) in ranges {
        match merged.last_mut() {
            Some(previous) if first <= previous.1.saturating_add(1) => {
                previous.1 = previous.1.max(last)
            }
            _ => merged.push((first, last)),
        }
    }
    merged
}

/// A set of code points written as a character class: sorted, disjoint, merged ranges,
/// plus whether the class is negated. Negation is kept (not complemented away) so the
/// set prints back as the author wrote it and next-character rules can say CHAR_EXCLUDE.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CharSet {
    ranges: Vec<(u32, u32)>,
    negated: bool,
}

impl CharSet {
    /// A set from inclusive ranges in any order; reversed ranges (`first > last`) match
    /// nothing and are dropped, and ranges are clipped to the Unicode range.
    pub fn new(ranges: impl IntoIterator<Item = (u32, u32)>, negated: bool) -> CharSet {
        let ranges: Vec<(u32, u32)> = ranges
            .into_iter()
            .filter(|&(first, last)| first <= last && first <= MAX_CODE_POINT)
            .map(|(first, last)| (first, last.min(MAX_CODE_POINT)))
            .collect();
        let merged = merge_ranges(ranges);
        CharSet {
            ranges: merged,
            negated,
        }
    }

    /// The set holding exactly one code point.
    pub fn single(code_point: u32) -> CharSet {
        CharSet::new([(code_point, code_point)], false)
    }

    /// The written ranges (before negation is applied).
    pub fn ranges(&self) -> &[(u32, u32)] {
        &self.ranges
    }

    /// True for a negated class `[^...]`.
    pub fn is_negated(&self) -> bool {
        self.negated
    }

    /// True when the set holds `code_point`.
    pub fn contains(&self, code_point: u32) -> bool {
        let listed = self
            .ranges
            .binary_search_by(|&(first, last)| {
                if last < code_point {
                    std::cmp::Ordering::Less
                } else if first > code_point {
                    std::cmp::Ordering::Greater
                } else {
                    std::cmp::Ordering::Equal
                }
            })
            .is_ok();
        listed != self.negated
    }

    /// True when no character (Unicode scalar value) is in the set.
    pub fn matches_nothing(&self) -> bool {
        let listed_scalars: u64 = self
            .ranges
            .iter()
            .map(|&(first, last)| scalar_count(first, last))
            .sum();
        if self.negated {
            listed_scalars == scalar_count(0, MAX_CODE_POINT)
        } else {
            listed_scalars == 0
        }
    }
}

impl CharSet {
    /// The code points in the set, negation applied, as sorted disjoint ranges.
    pub fn members(&self) -> Vec<(u32, u32)> {
        if !self.negated {
            return self.ranges.clone();
        }
        let mut members = Vec::with_capacity(self.ranges.len() + 1);
        let mut next = 0u32;
        for &(first, last) in &self.ranges {
            if first > next {
                members.push((next, first - 1));
            }
            next = last.saturating_add(1);
        }
        if next <= MAX_CODE_POINT {
            members.push((next, MAX_CODE_POINT));
        }
        members
    }

    /// The code points in both sets (not negated).
    pub fn intersection(&self, other: &CharSet) -> CharSet {
        let (left, right) = (self.members(), other.members());
        let mut ranges = Vec::new();
        let (mut i, mut j) = (0, 0);
        while i < left.len() && j < right.len() {
            let first = left[i].0.max(right[j].0);
            let last = left[i].1.min(right[j].1);
            if first <= last {
                ranges.push((first, last));
            }
            if left[i].1 < right[j].1 {
                i += 1;
            } else {
                j += 1;
            }
        }
        CharSet::new(ranges, false)
    }

    /// The code points in either set (not negated).
    pub fn union(&self, other: &CharSet) -> CharSet {
        CharSet::new(self.members().into_iter().chain(other.members()), false)
    }

    /// The code points in this set but not in `other` (not negated).
    pub fn difference(&self, other: &CharSet) -> CharSet {
        let complement = CharSet::new(other.members(), true);
        self.intersection(&complement)
    }
}

/// How many Unicode scalar values (code points that are not surrogates) lie in `first..=last`.
fn scalar_count(first: u32, last: u32) -> u64 {
    let total = u64::from(last - first) + 1;
    let surrogate_first = first.max(0xD800);
    let surrogate_last = last.min(0xDFFF);
    let surrogates = if surrogate_first <= surrogate_last {
        u64::from(surrogate_last - surrogate_first) + 1
    } else {
        0
    };
    total - surrogates
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_sorts_and_drops_reversed_ranges() {
        let set = CharSet::new(
            [
                (b'x' as u32, b'z' as u32),
                (b'a' as u32, b'c' as u32),
                (b'd' as u32, b'd' as u32),
                (9, 1),
            ],
            false,
        );
        assert_eq!(set.ranges(), &[(0x61, 0x64), (0x78, 0x7A)]);
        assert!(set.contains('b' as u32));
        assert!(!set.contains('e' as u32));
    }

    #[test]
    fn set_operations_apply_negation() {
        let letters = CharSet::new([(0x61, 0x7A)], false);
        let not_vowels = CharSet::new([(0x61, 0x61), (0x65, 0x65)], true);
        let both = letters.intersection(&not_vowels);
        assert_eq!(both.ranges(), &[(0x62, 0x64), (0x66, 0x7A)]);
        assert_eq!(
            letters.difference(&both).ranges(),
            &[(0x61, 0x61), (0x65, 0x65)]
        );
        assert_eq!(
            not_vowels.members(),
            vec![(0, 0x60), (0x62, 0x64), (0x66, MAX_CODE_POINT)]
        );
        assert_eq!(
            both.union(&CharSet::single(0x61)).ranges(),
            &[(0x61, 0x64), (0x66, 0x7A)]
        );
    }

    #[test]
    fn negation_and_emptiness() {
        let not_a = CharSet::new([(0x61, 0x61)], true);
        assert!(!not_a.contains(0x61));
        assert!(not_a.contains(0x62));
        assert!(CharSet::new([(0xD800, 0xDFFF)], false).matches_nothing());
        assert!(CharSet::new([(0, MAX_CODE_POINT)], true).matches_nothing());
        assert!(!CharSet::new([(0, 0xD7FF), (0xE000, 0x10FFFE)], true).matches_nothing());
    }
}
