//! The set of items already seen in the step being computed.
//!
//! Almost every node appears in a step with at most one frame, so each node keeps a
//! stamp (step generation, first frame seen): a first visit is one array write, no
//! hashing. Only a node seen again with another frame (an ambiguous grammar) or an item
//! inside a multi-byte character goes to a hash set.

use rustc_hash::FxHashSet;

use crate::graph::records::Item;

/// A set of items, cleared in O(1) per step.
#[derive(Debug, Clone, Default)]
pub(crate) struct ItemSet {
    /// Per node: the generation it was last seen in and the first frame seen then.
    stamps: Vec<(u32, u32)>,
    generation: u32,
    overflow: FxHashSet<Item>,
    len: usize,
}

impl ItemSet {
    /// Empties the set, for a graph of `node_count` nodes.
    pub(crate) fn clear(&mut self, node_count: usize) {
        if self.stamps.len() != node_count {
            self.stamps = vec![(0, 0); node_count];
            self.generation = 0;
        }
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.stamps.fill((0, 0));
            self.generation = 1;
        }
        if !self.overflow.is_empty() {
            self.overflow.clear();
        }
        self.len = 0;
    }

    /// Bytes of its heap buffers.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.stamps.capacity() * size_of::<(u32, u32)>()
            + self.overflow.capacity() * (size_of::<Item>() + 1)
    }

    /// Adds the item; true when it was not there yet.
    pub(crate) fn insert(&mut self, item: Item) -> bool {
        let added = if item.partial.is_none() {
            let stamp = &mut self.stamps[item.node as usize];
            if stamp.0 != self.generation {
                *stamp = (self.generation, item.frame);
                true
            } else if stamp.1 == item.frame {
                false
            } else {
                self.overflow.insert(item)
            }
        } else {
            self.overflow.insert(item)
        };
        self.len += usize::from(added);
        added
    }

    /// How many items were added since the last clear.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}
