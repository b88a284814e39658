//! The files of `src/` depend on one another in one direction: reading, then simplifying,
//! then emitting, over leaf modules that import no stage. This test reads every `use` of
//! the crate's own modules (`crate::…`, `super::…`, `self::…`, and `crate::…` paths
//! written inline in code) and fails on an import circle across files; a circle is allowed
//! only among the files of one folder module (`emit.rs` and `emit/*.rs`), whose parts
//! recurse into one another as the values they write nest. It also fails when a type's
//! inherent methods (`impl Type { … }`) are written outside the folder module that
//! defines the type, since a method called through `self` needs no `use` and would hide a
//! dependency from the first check.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path (`["emit", "json"]`) for each file under `src/`, by file.
fn modules(source: &Path) -> BTreeMap<PathBuf, Vec<String>> {
    let mut found = BTreeMap::new();
    let mut stack = vec![source.to_path_buf()];
    while let Some(directory) = stack.pop() {
        for entry in std::fs::read_dir(&directory).expect("a source directory") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|extension| extension != "rs") {
                continue;
            }
            let relative = path.strip_prefix(source).expect("under src");
            let mut module: Vec<String> = relative
                .with_extension("")
                .components()
                .map(|part| part.as_os_str().to_string_lossy().into_owned())
                .collect();
            if module == ["lib"] || module.last().is_some_and(|last| last == "mod") {
                module.pop();
            }
            found.insert(path, module);
        }
    }
    found
}

/// The code of a file without comments (doc comments and links in them included) and
/// without the text of string literals.
fn code_of(text: &str) -> String {
    let mut code = String::with_capacity(text.len());
    for line in text.lines() {
        let mut in_string = false;
        let mut previous = ' ';
        let mut kept = String::new();
        let characters: Vec<char> = line.chars().collect();
        let mut index = 0;
        while index < characters.len() {
            let character = characters[index];
            if !in_string && character == '/' && characters.get(index + 1) == Some(&'/') {
                break;
            }
            if character == '"' && previous != '\\' && (in_string || previous != '\'') {
                in_string = !in_string;
            }
            if !in_string {
                kept.push(character);
            }
            previous = if previous == '\\' && character == '\\' {
                ' '
            } else {
                character
            };
            index += 1;
        }
        code.push_str(&kept);
        code.push('\n');
    }
    code
}

/// The paths a use tree names (`a::{b, c::d}` → `a::b`, `a::c::d`), each as segments.
fn use_paths(tree: &str) -> Vec<Vec<String>> {
    fn parse(tree: &str, prefix: &[String], paths: &mut Vec<Vec<String>>) {
        let tree = tree.trim();
        if let Some(inner) = tree
            .strip_prefix('{')
            .and_then(|rest| rest.strip_suffix('}'))
        {
            for part in split_top_level(inner) {
                parse(part, prefix, paths);
            }
            return;
        }
        match tree.find("::") {
            Some(at) if !tree[..at].contains('{') => {
                let mut longer = prefix.to_vec();
                longer.push(tree[..at].trim().to_string());
                parse(&tree[at + 2..], &longer, paths);
            }
            _ => {
                let name = tree.split_whitespace().next().unwrap_or("");
                let mut path = prefix.to_vec();
                if !name.is_empty() && name != "*" && name != "self" {
                    path.push(name.to_string());
                }
                paths.push(path);
            }
        }
    }
    let mut paths = Vec::new();
    parse(tree, &[], &mut paths);
    paths
}

/// `text` split at the commas outside braces.
fn split_top_level(text: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (index, character) in text.char_indices() {
        match character {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..index]);
                start = index + 1;
            }
            _ => {}
        }
    }
    if !text[start..].trim().is_empty() {
        parts.push(&text[start..]);
    }
    parts
}

/// The module paths a file's code refers to, as written (`crate::…`, or `super::…`,
/// `self::…` and paths from a child module made absolute). `module` is the file's own
/// module path, `known` every module path of the crate.
fn references(code: &str, module: &[String], known: &BTreeSet<Vec<String>>) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    // `use` items, which may span lines; an indented one is inside an inline module of
    // the file (its tests), where `super` is the file's own module.
    let mut rest = code;
    while let Some(at) = find_use(rest) {
        let indented = at > 0 && !rest[..at].ends_with('\n');
        let after = &rest[at..];
        let start = after.find("use ").expect("found") + 4;
        let end = after.find(';').expect("a use item ends with `;`");
        for path in use_paths(&after[start..end]) {
            let parent_of_file = if indented {
                module.to_vec()
            } else {
                module[..module.len().saturating_sub(1)].to_vec()
            };
            let own = module.to_vec();
            let absolute = match path.first().map(String::as_str) {
                Some("crate") => Some(path[1..].to_vec()),
                Some("super") => Some([parent_of_file, path[1..].to_vec()].concat()),
                Some("self") => Some([own, path[1..].to_vec()].concat()),
                // `use child::Item` names a module declared in this one.
                Some(first) if known.contains(&[module, &[first.to_string()]].concat()) => {
                    Some([module, &path].concat())
                }
                _ => None,
            };
            found.extend(absolute);
        }
        rest = &after[end..];
    }
    // `crate::a::b` written inline.
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let boundary = rest[..at]
            .chars()
            .next_back()
            .is_none_or(|before| !(before.is_alphanumeric() || before == '_'));
        let after = &rest[at + "crate::".len()..];
        if boundary {
            let text: String = after
                .chars()
                .take_while(|character| {
                    character.is_alphanumeric() || *character == '_' || *character == ':'
                })
                .collect();
            let path: Vec<String> = text
                .split("::")
                .take_while(|segment| !segment.is_empty())
                .map(str::to_string)
                .collect();
            found.push(path);
        }
        rest = after;
    }
    found
}

/// Where the next `use` item starts (`use`, `pub use`, `pub(crate) use`, … at the start
/// of a line, after indentation).
fn find_use(code: &str) -> Option<usize> {
    let mut offset = 0;
    for line in code.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let item = trimmed
            .strip_prefix("pub(crate) ")
            .or_else(|| trimmed.strip_prefix("pub(super) "))
            .or_else(|| trimmed.strip_prefix("pub "))
            .unwrap_or(trimmed);
        if item.starts_with("use ") {
            return Some(offset + (line.len() - trimmed.len()));
        }
        offset += line.len();
    }
    None
}

/// The file of the longest prefix of `path` that is a module of the crate.
fn file_of<'m>(path: &[String], by_module: &'m BTreeMap<Vec<String>, PathBuf>) -> &'m PathBuf {
    (0..=path.len())
        .rev()
        .find_map(|length| by_module.get(&path[..length]))
        .expect("the crate root is a module")
}

/// The strongly connected components of a graph with more than one node (Tarjan's
/// algorithm, recursive: a crate has few files).
fn circles(graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    struct State<'g> {
        graph: &'g BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: BTreeMap<&'g PathBuf, usize>,
        low: BTreeMap<&'g PathBuf, usize>,
        stack: Vec<&'g PathBuf>,
        on_stack: BTreeSet<&'g PathBuf>,
        found: Vec<Vec<PathBuf>>,
    }
    fn visit<'g>(state: &mut State<'g>, node: &'g PathBuf) {
        let number = state.index.len();
        state.index.insert(node, number);
        state.low.insert(node, number);
        state.stack.push(node);
        state.on_stack.insert(node);
        for next in state.graph.get(node).into_iter().flatten() {
            if !state.index.contains_key(next) {
                visit(state, next);
                let low = state.low[node].min(state.low[next]);
                state.low.insert(node, low);
            } else if state.on_stack.contains(next) {
                let low = state.low[node].min(state.index[next]);
                state.low.insert(node, low);
            }
        }
        if state.low[node] == state.index[node] {
            let mut component = Vec::new();
            loop {
                let member = state.stack.pop().expect("on the stack");
                state.on_stack.remove(member);
                component.push(member.clone());
                if member == node {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                state.found.push(component);
            }
        }
    }
    let mut state = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for node in graph.keys() {
        if !state.index.contains_key(node) {
            visit(&mut state, node);
        }
    }
    state.found
}

/// The folder module a file belongs to: the first segment of its module path (`emit`
/// for `emit.rs` and `emit/json.rs`); `None` for the crate root.
fn folder_module(module: &[String]) -> Option<&str> {
    module.first().map(String::as_str)
}

fn source_directory() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn no_import_circle_across_files_outside_a_folder_module() {
    let source = source_directory();
    let modules = modules(&source);
    assert!(modules.len() > 20, "found {} files", modules.len());
    let by_module: BTreeMap<Vec<String>, PathBuf> = modules
        .iter()
        .map(|(file, module)| (module.clone(), file.clone()))
        .collect();
    let known: BTreeSet<Vec<String>> = by_module.keys().cloned().collect();
    let mut graph: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    let mut edges = 0;
    for (file, module) in &modules {
        let code = code_of(&std::fs::read_to_string(file).expect("a source file"));
        let targets = graph.entry(file.clone()).or_default();
        for path in references(&code, module, &known) {
            let target = file_of(&path, &by_module);
            if target != file && targets.insert(target.clone()) {
                edges += 1;
            }
        }
    }
    // The reader imports the simplifier: the graph is read, not empty.
    let read = source.join("read.rs");
    assert!(
        graph[&read].contains(&source.join("meet.rs")),
        "read.rs → meet.rs not found among {edges} edges: {:?}",
        graph[&read]
    );
    if std::env::var_os("MODULE_GRAPH_PRINT").is_some() {
        for (file, targets) in &graph {
            let name = |file: &PathBuf| {
                file.strip_prefix(&source)
                    .expect("under src")
                    .display()
                    .to_string()
            };
            let targets: Vec<String> = targets.iter().map(name).collect();
            println!("{} → {}", name(file), targets.join(", "));
        }
    }
    let mut failures = Vec::new();
    for circle in circles(&graph) {
        let folders: BTreeSet<Option<&str>> = circle
            .iter()
            .map(|file| folder_module(&modules[file]))
            .collect();
        let folder = folders.iter().next().copied().flatten();
        let one_folder =
            folders.len() == 1 && folder.is_some_and(|folder| source.join(folder).is_dir());
        if !one_folder {
            let names: Vec<String> = circle
                .iter()
                .map(|file| {
                    file.strip_prefix(&source)
                        .expect("under src")
                        .display()
                        .to_string()
                })
                .collect();
            failures.push(names.join(" ↔ "));
        }
    }
    assert!(
        failures.is_empty(),
        "import circles across files:\n{}",
        failures.join("\n")
    );
}

#[test]
fn inherent_methods_live_where_their_type_is_defined() {
    let source = source_directory();
    let modules = modules(&source);
    // Where each type of the crate is defined, by name.
    let mut defined: BTreeMap<String, BTreeSet<PathBuf>> = BTreeMap::new();
    let mut impls: Vec<(PathBuf, String)> = Vec::new();
    for file in modules.keys() {
        let code = code_of(&std::fs::read_to_string(file).expect("a source file"));
        for line in code.lines() {
            let words: Vec<&str> = line
                .split(|character: char| !(character.is_alphanumeric() || character == '_'))
                .filter(|word| !word.is_empty())
                .collect();
            let item = words
                .iter()
                .skip_while(|word| ["pub", "crate", "super"].contains(word))
                .copied()
                .collect::<Vec<&str>>();
            if let [kind, name, ..] = item.as_slice()
                && ["struct", "enum", "type", "union", "trait"].contains(kind)
            {
                defined
                    .entry(name.to_string())
                    .or_default()
                    .insert(file.clone());
            }
            let trimmed = line.trim_start();
            if trimmed.starts_with("impl") && !line.contains(" for ") {
                // `impl<'a, S: Bound> Name<'a, S> {` → `Name`.
                let mut after = &trimmed["impl".len()..];
                if after.starts_with('<') {
                    let mut depth = 0;
                    let close = after
                        .char_indices()
                        .find(|&(_, character)| {
                            match character {
                                '<' => depth += 1,
                                '>' => depth -= 1,
                                _ => {}
                            }
                            depth == 0
                        })
                        .map(|(index, _)| index)
                        .expect("closed generics");
                    after = &after[close + 1..];
                }
                let name: String = after
                    .trim_start()
                    .chars()
                    .take_while(|character| character.is_alphanumeric() || *character == '_')
                    .collect();
                if !name.is_empty() {
                    impls.push((file.clone(), name));
                }
            }
        }
    }
    let mut failures = Vec::new();
    for (file, name) in &impls {
        let Some(homes) = defined.get(name) else {
            continue;
        };
        let folder = folder_module(&modules[file]);
        let at_home = homes.iter().any(|home| {
            home == file || folder.is_some() && folder_module(&modules[home]) == folder
        });
        if !at_home {
            failures.push(format!(
                "`impl {name}` in {} but {name} is defined in {:?}",
                file.display(),
                homes
            ));
        }
    }
    assert!(!impls.is_empty(), "no inherent impl found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_checks_see_a_circle_and_resolve_use_trees() {
    let (a, b, c) = (
        PathBuf::from("a.rs"),
        PathBuf::from("b.rs"),
        PathBuf::from("c.rs"),
    );
    let graph: BTreeMap<PathBuf, BTreeSet<PathBuf>> = [
        (a.clone(), [b.clone()].into()),
        (b.clone(), [c.clone()].into()),
        (c.clone(), [a.clone()].into()),
    ]
    .into();
    assert_eq!(circles(&graph), vec![vec![a, b, c]]);
    let module = vec!["emit".to_string(), "json".to_string()];
    let code = code_of(
        "use super::{Emitter, Primitive};\nuse crate::numeric::{Bound, decimal::Decimal};\n// use crate::read::Reader;\nfn f() { crate::shape::Types::ALL; }\nuse tables::Table;\nuse std::fmt;\n",
    );
    let tables = vec!["emit".to_string(), "json".to_string(), "tables".to_string()];
    let found: BTreeSet<String> = references(&code, &module, &[tables].into())
        .iter()
        .map(|path| path.join("::"))
        .collect();
    let expected: BTreeSet<String> = [
        "emit::Emitter",
        "emit::Primitive",
        // The inline scan sees the `crate::numeric` of the use item too.
        "numeric",
        "numeric::Bound",
        "numeric::decimal::Decimal",
        "shape::Types::ALL",
        "emit::json::tables::Table",
    ]
    .into_iter()
    .map(str::to_string)
    .collect();
    assert_eq!(found, expected);
}
