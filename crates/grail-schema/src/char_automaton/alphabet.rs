//! The alphabet of the automata: scalar values without the surrogate gap, partitioned
//! into classes; and the work budget of one construction.

use super::*;

// ---------------------------------------------------------------------------------------
// The alphabet: scalar values without the surrogate gap, partitioned into classes.
// ---------------------------------------------------------------------------------------

/// The alphabet index of a code point; `None` for surrogates and beyond U+10FFFF.
pub(super) fn scalar_index(code_point: u32) -> Option<u32> {
    match code_point {
        0..SURROGATE_FIRST => Some(code_point),
        SURROGATE_FIRST..=SURROGATE_LAST => None,
        _ if code_point <= grail_grammar::charset::MAX_CODE_POINT => {
            Some(code_point - SURROGATE_COUNT)
        }
        _ => None,
    }
}

/// The code point of an alphabet index.
pub(super) fn code_point_of(index: u32) -> u32 {
    if index < SURROGATE_FIRST {
        index
    } else {
        index + SURROGATE_COUNT
    }
}

/// The alphabet indexes of a set's characters (surrogates left out), as merged ranges.
pub(super) fn index_ranges(set: &CharSet) -> Vec<(u32, u32)> {
    let mut ranges = Vec::new();
    for (first, last) in set.members() {
        if first < SURROGATE_FIRST {
            ranges.push((first, last.min(SURROGATE_FIRST - 1)));
        }
        if last > SURROGATE_LAST {
            let low = first.max(SURROGATE_LAST + 1);
            ranges.push((low - SURROGATE_COUNT, last - SURROGATE_COUNT));
        }
    }
    merge_ranges(ranges)
}

/// The code-point ranges of merged alphabet-index ranges.
pub(super) fn code_point_ranges(index_ranges: &[(u32, u32)]) -> Vec<(u32, u32)> {
    let mut ranges = Vec::with_capacity(index_ranges.len() + 1);
    for &(first, last) in index_ranges {
        if first < SURROGATE_FIRST && last >= SURROGATE_FIRST {
            ranges.push((first, SURROGATE_FIRST - 1));
            ranges.push((SURROGATE_LAST + 1, code_point_of(last)));
        } else {
            ranges.push((code_point_of(first), code_point_of(last)));
        }
    }
    ranges
}

/// A partition of the alphabet into classes: intervals of alphabet indexes, each with the
/// class it belongs to. A class may hold many intervals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Alphabet {
    /// The first alphabet index of each interval, ascending from 0.
    pub(super) starts: Vec<u32>,
    /// The class of each interval.
    pub(super) classes: Vec<u32>,
    /// How many classes there are (`0..count`, each holding at least one interval).
    pub(super) count: usize,
}

impl Alphabet {
    /// The whole alphabet as one class.
    pub(super) fn single() -> Alphabet {
        Alphabet {
            starts: vec![0],
            classes: vec![0],
            count: 1,
        }
    }

    /// The alphabet index one past the end of interval `interval`.
    pub(super) fn interval_end(&self, interval: usize) -> u32 {
        self.starts
            .get(interval + 1)
            .copied()
            .unwrap_or(ALPHABET_SIZE)
    }

    /// The class of an alphabet index.
    pub(super) fn class_of(&self, index: u32) -> usize {
        let interval = self
            .starts
            .partition_point(|&start| start <= index)
            .saturating_sub(1);
        self.classes
            .get(interval)
            .map_or(0, |&class| class as usize)
    }

    /// The alphabet-index ranges of each class.
    pub(super) fn class_ranges(&self) -> Vec<Vec<(u32, u32)>> {
        let mut ranges = vec![Vec::new(); self.count];
        for (interval, (&start, &class)) in self.starts.iter().zip(&self.classes).enumerate() {
            if let Some(class_ranges) = ranges.get_mut(class as usize) {
                class_ranges.push((start, self.interval_end(interval) - 1));
            }
        }
        ranges
    }

    /// The coarsest partition that tells apart the members and non-members of each set
    /// (merged alphabet-index ranges), and the classes each set is made of.
    pub(super) fn from_sets(
        sets: &[Vec<(u32, u32)>],
        budget: &mut Budget,
    ) -> Result<(Alphabet, Vec<Vec<u32>>), AutomatonError> {
        let mut starts = vec![0u32];
        for set in sets {
            budget.charge(set.len())?;
            for &(first, last) in set {
                starts.push(first);
                if last + 1 < ALPHABET_SIZE {
                    starts.push(last + 1);
                }
            }
        }
        starts.sort_unstable();
        starts.dedup();
        budget.charge(starts.len())?;
        // Refine: the intervals of each set take new classes, one per class they had, so
        // two intervals share a class exactly when no set tells them apart.
        let mut classes = vec![0u32; starts.len()];
        let mut next_class = 1u32;
        let intervals_of = |&(first, last): &(u32, u32)| {
            let begin = starts.partition_point(|&start| start < first);
            let end = starts.partition_point(|&start| start <= last);
            begin..end
        };
        for set in sets {
            let mut renamed: HashMap<u32, u32> = HashMap::default();
            for range in set {
                let intervals = intervals_of(range);
                budget.charge(intervals.len())?;
                for interval in intervals {
                    let old = classes[interval];
                    let new = *renamed.entry(old).or_insert_with(|| {
                        next_class += 1;
                        next_class - 1
                    });
                    classes[interval] = new;
                }
            }
        }
        // Number the classes densely, in order of first appearance.
        let mut dense: HashMap<u32, u32> = HashMap::default();
        for class in &mut classes {
            let next = dense.len() as u32;
            *class = *dense.entry(*class).or_insert(next);
        }
        let mut set_classes = Vec::with_capacity(sets.len());
        for set in sets {
            let mut members = Vec::new();
            for range in set {
                let intervals = intervals_of(range);
                budget.charge(intervals.len())?;
                members.extend(intervals.map(|interval| classes[interval]));
            }
            members.sort_unstable();
            members.dedup();
            set_classes.push(members);
        }
        let alphabet = Alphabet {
            count: dense.len(),
            starts,
            classes,
        };
        Ok((alphabet, set_classes))
    }

    /// The common refinement of two partitions, and for each of its classes the pair of
    /// classes (this one's, the other's) it lies in.
    pub(super) fn joint(&self, other: &Alphabet) -> (Alphabet, Vec<(u32, u32)>) {
        let mut starts = Vec::new();
        let mut classes = Vec::new();
        let mut pairs: Vec<(u32, u32)> = Vec::new();
        let mut ids: HashMap<(u32, u32), u32> = HashMap::default();
        let (mut left, mut right, mut position) = (0usize, 0usize, 0u32);
        while let (Some(&left_class), Some(&right_class)) =
            (self.classes.get(left), other.classes.get(right))
        {
            let pair = (left_class, right_class);
            let id = *ids.entry(pair).or_insert_with(|| {
                pairs.push(pair);
                (pairs.len() - 1) as u32
            });
            if classes.last() != Some(&id) {
                starts.push(position);
                classes.push(id);
            }
            let (left_end, right_end) = (self.interval_end(left), other.interval_end(right));
            position = left_end.min(right_end);
            if position >= ALPHABET_SIZE {
                break;
            }
            if left_end == position {
                left += 1;
            }
            if right_end == position {
                right += 1;
            }
        }
        let alphabet = Alphabet {
            starts,
            classes,
            count: pairs.len(),
        };
        (alphabet, pairs)
    }
}

/// The most states an automaton over `classes` classes may have.
pub(super) fn state_limit(classes: usize) -> usize {
    STATE_LIMIT.min(CELL_LIMIT / classes.max(1))
}

/// Steps left for one construction.
pub(super) struct Budget {
    pub(super) remaining: u64,
}

impl Budget {
    /// A budget of [`WORK_LIMIT`] steps.
    pub(super) fn new() -> Budget {
        Budget {
            remaining: WORK_LIMIT,
        }
    }

    /// Spends `steps`, or fails when they are not left.
    pub(super) fn charge(&mut self, steps: usize) -> Result<(), AutomatonError> {
        let steps = steps as u64;
        if steps > self.remaining {
            self.remaining = 0;
            return Err(AutomatonError::TooComplex { limit: WORK_LIMIT });
        }
        self.remaining -= steps;
        Ok(())
    }
}
