//! The records of a parse state: items, the rule calls (frames) they belong to, and the
//! links from a frame to its callers (see `parse/matcher.rs`).

use crate::graph::NodeId;
use crate::graph::utf8::Partial;

/// No link: the end of a frame's caller list.
pub(crate) const NO_LINK: u32 = u32::MAX;

/// A position in the grammar: a consuming node inside one rule call, with the bytes of
/// a character begun so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Item {
    pub(crate) node: NodeId,
    pub(crate) frame: u32,
    pub(crate) partial: Partial,
}

/// One call of a rule at one input position.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Frame {
    /// The newest caller link, or [`NO_LINK`].
    pub(crate) callers: u32,
    /// The rule already returned at this frame's own step (it matched empty there), so a
    /// caller added later in the same step continues at once.
    pub(crate) completed: bool,
    /// The frame of the start rule: returning from it means the grammar may end.
    pub(crate) is_root: bool,
}

/// A caller of a frame: where to continue, in which frame, and the next older caller.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Link {
    pub(crate) next: NodeId,
    pub(crate) frame: u32,
    pub(crate) older: u32,
}
