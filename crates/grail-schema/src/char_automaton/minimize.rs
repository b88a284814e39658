//! Minimizing a deterministic automaton (Hopcroft's partition refinement).

// ---------------------------------------------------------------------------------------
// Minimization (Hopcroft).
// ---------------------------------------------------------------------------------------

/// A partition of states into blocks, each block a slice of `elements` whose first
/// `marked` elements are marked.
pub(super) struct Partition {
    /// The states, block by block.
    pub(super) elements: Vec<u32>,
    /// Where each state is in `elements`.
    pub(super) position: Vec<u32>,
    /// The block of each state.
    pub(super) block_of: Vec<u32>,
    /// Where each block begins in `elements`.
    pub(super) begin: Vec<u32>,
    /// Where each block ends in `elements` (exclusive).
    pub(super) end: Vec<u32>,
    /// How many of each block's elements are marked.
    pub(super) marked: Vec<u32>,
}

impl Partition {
    /// The states `0..count` in two blocks: those `in_first` and the others (one block when
    /// either is empty).
    pub(super) fn new(count: usize, in_first: impl Fn(usize) -> bool) -> Partition {
        let mut elements: Vec<u32> = (0..count as u32)
            .filter(|&state| in_first(state as usize))
            .collect();
        let first_size = elements.len() as u32;
        elements.extend((0..count as u32).filter(|&state| !in_first(state as usize)));
        let mut partition = Partition {
            position: vec![0; count],
            block_of: vec![0; count],
            elements,
            begin: Vec::new(),
            end: Vec::new(),
            marked: Vec::new(),
        };
        for (position, &state) in partition.elements.iter().enumerate() {
            partition.position[state as usize] = position as u32;
        }
        for (begin, end) in [(0, first_size), (first_size, count as u32)] {
            if begin < end {
                let block = partition.begin.len() as u32;
                partition.begin.push(begin);
                partition.end.push(end);
                partition.marked.push(0);
                for position in begin..end {
                    let state = partition.elements[position as usize];
                    partition.block_of[state as usize] = block;
                }
            }
        }
        partition
    }

    /// How many blocks there are.
    pub(super) fn block_count(&self) -> usize {
        self.begin.len()
    }

    /// The states of a block.
    pub(super) fn block(&self, block: usize) -> &[u32] {
        &self.elements[self.begin[block] as usize..self.end[block] as usize]
    }

    /// Marks a state (at most once between splits); returns true when it is the first
    /// mark in its block.
    pub(super) fn mark(&mut self, state: u32) -> bool {
        let block = self.block_of[state as usize] as usize;
        let position = self.position[state as usize];
        let target = self.begin[block] + self.marked[block];
        if position < target {
            return false;
        }
        let other = self.elements[target as usize];
        self.elements.swap(position as usize, target as usize);
        self.position[other as usize] = position;
        self.position[state as usize] = target;
        self.marked[block] += 1;
        self.marked[block] == 1
    }

    /// Splits the marked states of a block off into a new block, unless all or none are
    /// marked; returns the new block. Clears the marks.
    pub(super) fn split(&mut self, block: usize) -> Option<usize> {
        let marked = std::mem::replace(&mut self.marked[block], 0);
        let begin = self.begin[block];
        if marked == 0 || begin + marked == self.end[block] {
            return None;
        }
        let new_block = self.begin.len();
        self.begin.push(begin);
        self.end.push(begin + marked);
        self.marked.push(0);
        self.begin[block] = begin + marked;
        for position in begin..begin + marked {
            let state = self.elements[position as usize];
            self.block_of[state as usize] = new_block as u32;
        }
        Some(new_block)
    }
}
