//! The schema a conversion reads: one root document, and other documents mounted into it
//! at JSON pointers without being copied. A tool registry mounts each tool's arguments
//! schema into the schema of one call this way: nothing is cloned, and the pointers of
//! diagnostics stay those of the combined schema.
//!
//! A pointer at or under a mount point reads the mounted document; `$ref`s written in a
//! mounted document are relative to that document (its own `$id`, if any, or a base of
//! its own), as they would be if it stood alone.

use serde_json::Value;

use crate::diagnostic::{SchemaDiagnostic, Severity};
use crate::pointer::lookup;

/// A schema document placed inside the converted schema at a JSON pointer.
///
/// The root must hold a placeholder where the document is mounted (`true`, say), so the
/// keyword around it (`properties`, `items`, …) names that place; the placeholder itself
/// is never read. Mount points may not lie inside one another.
#[derive(Debug, Clone, Copy)]
pub struct Mount<'v> {
    /// Where the document sits in the root (a JSON pointer, such as
    /// `/$defs/search/properties/arguments`).
    pub at: &'v str,
    /// The mounted schema.
    pub schema: &'v Value,
}

/// The root document with the documents mounted in it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Document<'v> {
    /// The root.
    pub root: &'v Value,
    /// The mounted documents.
    pub mounts: &'v [Mount<'v>],
}

impl<'v> Document<'v> {
    /// A document with nothing mounted in it.
    pub fn alone(root: &'v Value) -> Document<'v> {
        Document { root, mounts: &[] }
    }

    /// The value at `pointer`, in the mounted document when the pointer is at or under a
    /// mount point.
    pub fn lookup(&self, pointer: &str) -> Option<&'v Value> {
        for mount in self.mounts {
            if let Some(rest) = under(pointer, mount.at) {
                return lookup(mount.schema, rest);
            }
        }
        lookup(self.root, pointer)
    }

    /// An error when a mount point is not a pointer below the root or lies inside
    /// another.
    pub fn check_mounts(&self) -> Result<(), Box<SchemaDiagnostic>> {
        for (number, mount) in self.mounts.iter().enumerate() {
            let problem = if !mount.at.starts_with('/') {
                Some("a mount point must be a JSON pointer below the root (`/…`)")
            } else if self.mounts[..number].iter().any(|other| {
                under(mount.at, other.at).is_some() || under(other.at, mount.at).is_some()
            }) {
                Some("mount points may not lie inside one another")
            } else {
                None
            };
            if let Some(problem) = problem {
                return Err(Box::new(SchemaDiagnostic::new(
                    Severity::Error,
                    "mount-invalid",
                    mount.at,
                    None,
                    format!("a document is mounted at `{}`: {problem}", mount.at),
                )));
            }
        }
        Ok(())
    }

    /// The mounted document whose mount point is exactly `pointer`.
    pub fn mounted_at(&self, pointer: &str) -> Option<&'v Value> {
        self.mounts
            .iter()
            .find(|mount| mount.at == pointer)
            .map(|mount| mount.schema)
    }
}

/// The rest of `pointer` below `place` (`""` for `place` itself), when `pointer` is at or
/// under it.
pub(crate) fn under<'p>(pointer: &'p str, place: &str) -> Option<&'p str> {
    let rest = pointer.strip_prefix(place)?;
    (rest.is_empty() || rest.starts_with('/')).then_some(rest)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn pointers_under_a_mount_point_read_the_mounted_document() {
        let root = json!({"properties": {"a": true, "b": {"type": "null"}}});
        let mounted = json!({"type": "object", "properties": {"x": {"type": "string"}}});
        let mounts = [Mount {
            at: "/properties/a",
            schema: &mounted,
        }];
        let document = Document {
            root: &root,
            mounts: &mounts,
        };
        assert_eq!(document.lookup("/properties/a"), Some(&mounted));
        assert_eq!(
            document.lookup("/properties/a/properties/x"),
            Some(&json!({"type": "string"}))
        );
        assert_eq!(
            document.lookup("/properties/b"),
            Some(&json!({"type": "null"}))
        );
        // `/properties/ab` is not under `/properties/a`.
        assert_eq!(document.lookup("/properties/ab"), None);
        assert_eq!(document.mounted_at("/properties/a"), Some(&mounted));
        assert_eq!(document.mounted_at("/properties/a/type"), None);
    }
}
