//! Describing steps for the step cache: frame slots, state keys and transition
//! templates (see `step_cache.rs` for what they are for).

use crate::automaton::step_cache::{OUTSIDE, StateId, Transition};
use crate::graph::NodeId;
use crate::graph::records::{Frame, Item, Link, NO_LINK};
use crate::parse::matcher::Scratch;

/// The distinct frames of `items`, in the order the items meet them (slot order).
pub(crate) fn frames_in_order(items: &[Item], frames: &mut Vec<u32>) {
    frames.clear();
    for item in items {
        // Items of a frame mostly come together: the last frame met is checked first.
        if frames.last() != Some(&item.frame) && !frames.contains(&item.frame) {
            frames.push(item.frame);
        }
    }
}

/// Most frames a cached state may span, and most words in its key.
pub(crate) const MAX_STATE_SLOTS: usize = 64;
const MAX_STATE_KEY: usize = 1024;

/// Turns the description of a one-item step that [`describe_step`] left in `scratch` into
/// that of the same step with its item at `node` (same partial character, same frame):
/// the key differs in the item's node alone.
pub(crate) fn move_single_item(scratch: &mut Scratch, node: NodeId) {
    debug_assert_eq!(scratch.state_items.len(), 1, "a one-item description");
    // The key starts with the accepting flag and the item count, then the item.
    scratch.key[2] = node;
    scratch.state_items[0].0 = node;
}

/// Describes a new step for the step cache: its items with frames as slots, and for each
/// slot its root flag, whether it has callers outside the slots, and its callers inside
/// them (return node, caller slot). Fills
/// `scratch.key`, `scratch.state_items` and `scratch.slot_frames`; false when the step is
/// too large to cache.
pub(crate) fn describe_step(
    items: &[Item],
    accepting: bool,
    frames: &[Frame],
    links: &[Link],
    scratch: &mut Scratch,
) -> bool {
    frames_in_order(items, &mut scratch.slot_frames);
    if scratch.slot_frames.len() > MAX_STATE_SLOTS {
        return false;
    }
    let slot_of = |frame: u32, slots: &[u32]| {
        slots
            .iter()
            .position(|&known| known == frame)
            .map_or(OUTSIDE, |slot| slot as u32)
    };
    scratch.key.clear();
    scratch.state_items.clear();
    scratch.key.push(u32::from(accepting));
    scratch.key.push(items.len() as u32);
    for item in items {
        let slot = slot_of(item.frame, &scratch.slot_frames);
        scratch
            .key
            .extend([item.node, item.partial.to_bits(), slot]);
        scratch
            .state_items
            .push((item.node, item.partial, slot as u8));
    }
    for &frame in &scratch.slot_frames {
        let frame = frames[frame as usize];
        // Callers outside the slots only matter as "some exist": returning to one leaves
        // the state (not cacheable), wherever it returns.
        let mark = scratch.key.len();
        scratch.key.push(u32::MAX - u32::from(frame.is_root));
        let mut outside = false;
        let mut link = frame.callers;
        while link != NO_LINK {
            let caller = links[link as usize];
            match slot_of(caller.frame, &scratch.slot_frames) {
                OUTSIDE => outside = true,
                slot => scratch.key.extend([caller.next, slot]),
            }
            link = caller.older;
            if scratch.key.len() > MAX_STATE_KEY {
                return false;
            }
        }
        if outside {
            scratch.key[mark] -= 2;
        }
    }
    true
}

/// The transition just computed, as a template: the frames it created (those from
/// `frames_before` on) with their caller links in creation order, and where each target
/// slot's frame is among the source slots followed by the new frames. `None` when it does
/// not fit a template (too many frames).
pub(crate) fn transition_template(
    target: StateId,
    accepting: bool,
    frames_before: usize,
    links_before: usize,
    frames: &[Frame],
    links: &[Link],
    scratch: &Scratch,
) -> Option<Transition> {
    let new_frames = frames.len() - frames_before;
    let source_count = scratch.source_frames.len();
    if source_count + new_frames > MAX_STATE_SLOTS {
        return None;
    }
    let slot_of = |frame: u32| -> Option<u8> {
        if frame as usize >= frames_before {
            Some((source_count + frame as usize - frames_before) as u8)
        } else {
            scratch
                .source_frames
                .iter()
                .position(|&known| known == frame)
                .map(|slot| slot as u8)
        }
    };
    // Every link made in this step belongs to a frame made in this step: find whose.
    let mut owner = vec![u8::MAX; links.len() - links_before];
    for (index, frame) in frames[frames_before..].iter().enumerate() {
        let mut cursor = frame.callers;
        while cursor != NO_LINK && cursor as usize >= links_before {
            owner[cursor as usize - links_before] = index as u8;
            cursor = links[cursor as usize].older;
        }
    }
    let mut new_links = Vec::with_capacity(owner.len());
    for (offset, link) in links[links_before..].iter().enumerate() {
        if owner[offset] == u8::MAX {
            return None;
        }
        new_links.push((owner[offset], link.next, slot_of(link.frame)?));
    }
    // Sized up front (collecting through `Option` grew a vector, then shrank it to a box:
    // two reallocations per transition learned).
    let mut slot_map = Vec::with_capacity(scratch.slot_frames.len());
    for &frame in &scratch.slot_frames {
        slot_map.push(slot_of(frame)?);
    }
    let slot_map = slot_map.into_boxed_slice();
    let keeps_slots = slot_map.len() == source_count
        && slot_map
            .iter()
            .enumerate()
            .all(|(slot, &from)| usize::from(from) == slot);
    Some(Transition {
        target,
        target_viable: !scratch.state_items.is_empty() || accepting,
        keeps_slots,
        escapes: scratch.escaped(),
        slot_map,
        new_frames: new_frames as u8,
        new_links: new_links.into_boxed_slice(),
        renewal: None,
    })
}

/// For a transition from `source` that makes frames and comes back to `source`, keeping
/// every frame it keeps in its slot and putting new frames in the slots of frames it drops,
/// with the new frames' callers kept frames or new frames: the identity, slot for slot.
/// Same state, so slot for slot the same items, callers in slots and flags; what the new
/// frames call through outside the slots (rules with no items of their own, between them
/// and a kept frame) is predicted by the state's own items, as it was for the dropped
/// ones. The common case: whitespace looping before a rule call in C.
pub(crate) fn own_renewal_slots(transition: &Transition, source: StateId) -> Option<Box<[u8]>> {
    let slots = transition.slot_map.len();
    let kept_in_place =
        |slot: usize| slot >= slots || usize::from(transition.slot_map[slot]) == slot;
    let renews = transition.target == source
        && transition
            .slot_map
            .iter()
            .enumerate()
            .all(|(slot, &from)| usize::from(from) == slot || usize::from(from) >= slots)
        && transition
            .new_links
            .iter()
            .all(|&(_, _, caller)| kept_in_place(usize::from(caller)));
    renews.then(|| (0..slots as u8).collect())
}

/// For a transition that makes frames: when every new frame renews a frame of the source
/// step that the transition drops (the same items, root and completed flags, and callers
/// — kept frames, or new frames renewing their caller's counterpart), for each target
/// slot the source slot whose frame it stands for. A whitespace loop before a rule call
/// predicts the call again at every byte; walks then go on from the target as if the
/// step made no frames, the renewed frames standing for the dropped ones (which have the
/// same structure and, like the new ones, no callers outside the state).
/// `source_items` are the source step's items, `target_items` the new step's.
pub(crate) fn renewal_slots(
    transition: &Transition,
    source_items: &[Item],
    target_items: &[Item],
    frames: &[Frame],
    links: &[Link],
    scratch: &Scratch,
) -> Option<Box<[u8]>> {
    let source_frames = &scratch.source_frames;
    let source_count = source_frames.len();
    // The new frames (their index among new frames, and frame), in creation order so that
    // callers come before callees, and the source slots the transition drops.
    let mut new_frames: Vec<(usize, u32)> = transition
        .slot_map
        .iter()
        .enumerate()
        .filter(|&(_, &from)| usize::from(from) >= source_count)
        .map(|(slot, &from)| (usize::from(from) - source_count, scratch.slot_frames[slot]))
        .collect();
    if new_frames.len() != usize::from(transition.new_frames) {
        return None;
    }
    new_frames.sort_unstable_by_key(|&(_, frame)| frame);
    let mut kept = vec![false; source_count];
    for &from in transition.slot_map.iter() {
        if usize::from(from) < source_count {
            kept[usize::from(from)] = true;
        }
    }
    let dropped: Vec<usize> = (0..source_count).filter(|&slot| !kept[slot]).collect();
    if dropped.len() < new_frames.len() {
        return None;
    }
    // A frame's signature: flags, callers (return node, source slot of the caller) and
    // items (node, partial).
    type Signature = (bool, bool, Vec<(NodeId, usize)>, Vec<(NodeId, u32)>);
    let signature =
        |frame: u32, items: &[Item], slot_of: &dyn Fn(u32) -> Option<usize>| -> Option<Signature> {
            let record = frames[frame as usize];
            let mut callers = Vec::new();
            let mut link = record.callers;
            while link != NO_LINK {
                let caller = links[link as usize];
                callers.push((caller.next, slot_of(caller.frame)?));
                link = caller.older;
            }
            callers.sort_unstable();
            let mut frame_items: Vec<(NodeId, u32)> = items
                .iter()
                .filter(|item| item.frame == frame)
                .map(|item| (item.node, item.partial.to_bits()))
                .collect();
            frame_items.sort_unstable();
            Some((record.is_root, record.completed, callers, frame_items))
        };
    let source_slot_of =
        |caller: u32| -> Option<usize> { source_frames.iter().position(|&known| known == caller) };
    // Dropped frames with callers outside the source's slots renew nothing.
    let mut candidates: Vec<Option<(usize, Signature)>> = dropped
        .iter()
        .map(|&slot| {
            signature(source_frames[slot], source_items, &source_slot_of).map(|found| (slot, found))
        })
        .collect();
    let mut renewed: Vec<Option<usize>> = vec![None; new_frames.len()];
    for position in 0..new_frames.len() {
        let frame = new_frames[position].1;
        let new_slot_of = |caller: u32| -> Option<usize> {
            if let Some(slot) = source_frames.iter().position(|&known| known == caller) {
                return kept[slot].then_some(slot);
            }
            let caller_position = new_frames.iter().position(|&(_, known)| known == caller)?;
            renewed[caller_position]
        };
        let wanted = signature(frame, target_items, &new_slot_of)?;
        let found = candidates
            .iter_mut()
            .find(|candidate| matches!(candidate, Some((_, known)) if *known == wanted))?
            .take()
            .map(|(slot, _)| slot)?;
        renewed[position] = Some(found);
    }
    transition
        .slot_map
        .iter()
        .map(|&from| {
            let from = usize::from(from);
            if from < source_count {
                Some(from as u8)
            } else {
                let position = new_frames
                    .iter()
                    .position(|&(index, _)| index == from - source_count)?;
                renewed[position].map(|slot| slot as u8)
            }
        })
        .collect()
}
