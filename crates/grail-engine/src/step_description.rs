//! Describing steps for the step cache: frame slots, state keys and transition
//! templates (see `step_cache.rs` for what they are for).

use crate::matcher::{Frame, Item, Link, NO_LINK, Scratch};
use crate::step_cache::{OUTSIDE, StateId, Transition};

/// The distinct frames of `items`, in the order the items meet them (slot order).
pub(crate) fn frames_in_order(items: &[Item], frames: &mut Vec<u32>) {
    frames.clear();
    for item in items {
        if !frames.contains(&item.frame) {
            frames.push(item.frame);
        }
    }
}

/// Most frames a cached state may span, and most words in its key.
pub(crate) const MAX_STATE_SLOTS: usize = 64;
const MAX_STATE_KEY: usize = 1024;

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
    let slot_map = scratch
        .slot_frames
        .iter()
        .map(|&frame| slot_of(frame))
        .collect::<Option<Box<[u8]>>>()?;
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
    })
}
