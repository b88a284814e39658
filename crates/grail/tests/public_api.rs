//! The facade's public surface, as a snapshot: every name `grail` exports and where it
//! comes from. A change to the public API shows as a diff of
//! `tests/snapshots/public_api__surface.snap` (review it with `cargo insta review`, or
//! accept it with `INSTA_UPDATE=always`).

use syn::{Item, UseTree, Visibility};

/// The public names of a list of items: `path = source`, one per line.
fn public_names(items: &[Item], prefix: &str, names: &mut Vec<String>) {
    for item in items {
        match item {
            Item::Use(item) if matches!(item.vis, Visibility::Public(_)) => {
                use_tree(&item.tree, prefix, "", names);
            }
            Item::Mod(module) if matches!(module.vis, Visibility::Public(_)) => {
                let path = format!("{prefix}::{}", module.ident);
                names.push(format!("{path} (module)"));
                let (_, items) = module
                    .content
                    .as_ref()
                    .expect("the facade's modules are written inline");
                public_names(items, &path, names);
            }
            Item::Fn(function) if matches!(function.vis, Visibility::Public(_)) => {
                names.push(format!("{prefix}::{} (fn)", function.sig.ident));
            }
            Item::Struct(item) if matches!(item.vis, Visibility::Public(_)) => {
                names.push(format!("{prefix}::{} (struct)", item.ident));
            }
            Item::Enum(item) if matches!(item.vis, Visibility::Public(_)) => {
                names.push(format!("{prefix}::{} (enum)", item.ident));
            }
            Item::Const(item) if matches!(item.vis, Visibility::Public(_)) => {
                names.push(format!("{prefix}::{} (const)", item.ident));
            }
            Item::Type(item) if matches!(item.vis, Visibility::Public(_)) => {
                names.push(format!("{prefix}::{} (type)", item.ident));
            }
            Item::Trait(item) if matches!(item.vis, Visibility::Public(_)) => {
                names.push(format!("{prefix}::{} (trait)", item.ident));
            }
            _ => {}
        }
    }
}

/// The names one `pub use` tree exports.
fn use_tree(tree: &UseTree, prefix: &str, source: &str, names: &mut Vec<String>) {
    let join = |name: &str| {
        if source.is_empty() {
            name.to_string()
        } else {
            format!("{source}::{name}")
        }
    };
    match tree {
        UseTree::Path(path) => use_tree(&path.tree, prefix, &join(&path.ident.to_string()), names),
        UseTree::Name(name) => {
            let name = name.ident.to_string();
            names.push(format!("{prefix}::{name} = {}", join(&name)));
        }
        UseTree::Rename(rename) => names.push(format!(
            "{prefix}::{} = {}",
            rename.rename,
            join(&rename.ident.to_string())
        )),
        UseTree::Glob(_) => names.push(format!("{prefix}::* = {}", join("*"))),
        UseTree::Group(group) => {
            for tree in &group.items {
                use_tree(tree, prefix, source, names);
            }
        }
    }
}

#[test]
fn the_public_surface_is_the_snapshot() {
    let source = include_str!("../src/lib.rs");
    let file = syn::parse_file(source).expect("lib.rs parses");
    let mut names = Vec::new();
    public_names(&file.items, "grail", &mut names);
    names.sort();
    // Only curated names at the top: no whole crate and no glob outside `unstable`.
    for name in &names {
        if name.starts_with("grail::unstable") {
            continue;
        }
        assert!(
            !name.contains('*'),
            "a glob re-export outside `unstable`: {name}"
        );
        assert!(
            !name.ends_with("= grail_syntax")
                && !name.ends_with("= grail_grammar")
                && !name.ends_with("= grail_engine")
                && !name.ends_with("= grail_vocab")
                && !name.ends_with("= grail_schema")
                && !name.ends_with("= grail_tools"),
            "a whole crate re-exported outside `unstable`: {name}"
        );
    }
    insta::assert_snapshot!("surface", names.join("\n"));
}
