//! Strongly connected components of rule graphs (iterative Tarjan, no recursion, so
//! grammars with long rule chains cannot overflow the stack).

/// The strongly connected components of the graph `edges` (node `i` has edges to
/// `edges[i]`), each a list of nodes. Components come in reverse topological order:
/// every component comes after all components it has edges to.
pub fn strongly_connected_components(edges: &[Vec<u32>]) -> Vec<Vec<u32>> {
    const UNVISITED: u32 = u32::MAX;
    let count = edges.len();
    let mut index = vec![UNVISITED; count];
    let mut low_link = vec![0u32; count];
    let mut on_stack = vec![false; count];
    let mut stack: Vec<u32> = Vec::new();
    let mut components = Vec::new();
    let mut next_index = 0u32;
    // Each frame: (node, position of the next edge to visit).
    let mut frames: Vec<(u32, usize)> = Vec::new();
    for start in 0..count as u32 {
        if index[start as usize] != UNVISITED {
            continue;
        }
        frames.push((start, 0));
        index[start as usize] = next_index;
        low_link[start as usize] = next_index;
        next_index += 1;
        stack.push(start);
        on_stack[start as usize] = true;
        while let Some(&mut (node, ref mut edge_position)) = frames.last_mut() {
            let node_edges = &edges[node as usize];
            if let Some(&next) = node_edges.get(*edge_position) {
                *edge_position += 1;
                if index[next as usize] == UNVISITED {
                    index[next as usize] = next_index;
                    low_link[next as usize] = next_index;
                    next_index += 1;
                    stack.push(next);
                    on_stack[next as usize] = true;
                    frames.push((next, 0));
                } else if on_stack[next as usize] {
                    low_link[node as usize] = low_link[node as usize].min(index[next as usize]);
                }
                continue;
            }
            frames.pop();
            if let Some(&(parent, _)) = frames.last() {
                low_link[parent as usize] = low_link[parent as usize].min(low_link[node as usize]);
            }
            if low_link[node as usize] == index[node as usize] {
                let mut component = Vec::new();
                loop {
                    let member = stack.pop().expect("node is on the stack");
                    on_stack[member as usize] = false;
                    component.push(member);
                    if member == node {
                        break;
                    }
                }
                components.push(component);
            }
        }
    }
    components
}

/// A shortest cycle through `start` using only `members` (a strongly connected
/// component), as the list of nodes from `start` back to `start`.
pub fn cycle_through(edges: &[Vec<u32>], members: &[u32], start: u32) -> Vec<u32> {
    use std::collections::{HashMap, VecDeque};
    let in_component: std::collections::HashSet<u32> = members.iter().copied().collect();
    let mut parent: HashMap<u32, u32> = HashMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(node) = queue.pop_front() {
        for &next in &edges[node as usize] {
            if !in_component.contains(&next) {
                continue;
            }
            if next == start {
                let mut path = vec![node];
                let mut current = node;
                while current != start {
                    current = parent[&current];
                    path.push(current);
                }
                path.reverse();
                path.push(start);
                return path;
            }
            if next != start
                && let std::collections::hash_map::Entry::Vacant(entry) = parent.entry(next)
            {
                entry.insert(node);
                queue.push_back(next);
            }
        }
    }
    vec![start, start]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_in_reverse_topological_order() {
        // 0 -> 1 -> 2 -> 1, 2 -> 3
        let edges = vec![vec![1], vec![2], vec![1, 3], vec![]];
        let components = strongly_connected_components(&edges);
        let position = |node: u32| components.iter().position(|c| c.contains(&node)).unwrap();
        assert_eq!(components.len(), 3);
        assert!(position(3) < position(1));
        assert!(position(1) < position(0));
        assert_eq!(position(1), position(2));
    }

    #[test]
    fn cycles_are_listed_from_start_back_to_start() {
        let edges = vec![vec![1], vec![2], vec![0], vec![3]];
        assert_eq!(cycle_through(&edges, &[0, 1, 2], 0), vec![0, 1, 2, 0]);
        assert_eq!(cycle_through(&edges, &[3], 3), vec![3, 3]);
    }
}
