//! `$ref` resolution inside one schema document (and the documents mounted in it, each a
//! resource of its own): JSON pointers, `$defs`/`definitions`, `$anchor` (and draft-07's
//! `"$id": "#name"`), and references to the `$id` of a subschema, relative ones included.
//! Nothing is fetched: a reference to another document is an error that says so.

use std::borrow::Cow;

use rustc_hash::FxHashMap as HashMap;
use serde_json::Value;

use crate::diagnostic::escape_pointer_token;
use crate::document::{Document, Mount, under};
use crate::keywords::Keywords;

/// Where each identified schema of a document is, and what each subschema's base URI is.
#[derive(Debug, Default)]
pub struct ResourceIndex {
    /// Absolute `$id` (without fragment) → pointer of the schema that declares it.
    ids: HashMap<String, String>,
    /// (base URI, anchor name) → pointer.
    anchors: HashMap<(String, String), String>,
    /// Pointer → base URI in force there, for schemas that change it.
    bases: HashMap<String, String>,
}

/// The base of a document without an `$id` of its own.
const DOCUMENT_BASE: &str = "grail:schema";

/// The base of the mounted document number N (`grail:mount/N/`) without an `$id`: a
/// directory of its own, so relative `$id`s in different mounted documents (two tools'
/// `"$id": "args.json"`) name different resources.
const MOUNT_BASE: &str = "grail:mount/";

impl ResourceIndex {
    /// Indexes every `$id`, `id` (draft-04) and `$anchor` of the document and of the
    /// documents mounted in it; each mounted document is a resource of its own.
    pub fn new(document: &Document<'_>) -> ResourceIndex {
        let documents = document.mounts.len() + 1;
        let mut index = ResourceIndex {
            ids: HashMap::with_capacity_and_hasher(documents, Default::default()),
            anchors: HashMap::default(),
            bases: HashMap::with_capacity_and_hasher(documents, Default::default()),
        };
        index.bases.insert(String::new(), DOCUMENT_BASE.to_string());
        index.walk(document.root, "", DOCUMENT_BASE);
        // A mounted document's own base and place are known from the document (see
        // `base_at` and `resolve`): only its identifiers are indexed.
        for (number, mount) in document.mounts.iter().enumerate() {
            if has_identifiers(mount.schema) {
                index.walk(mount.schema, mount.at, &mount_base(number));
            }
        }
        index
    }

    /// Indexes the identifiers of `value`, the schema at `pointer`, whose base is `base`.
    fn walk(&mut self, value: &Value, pointer: &str, base: &str) {
        // Most documents (tool schemas) have no identifier at all: no walk with pointers.
        if !has_identifiers(value) {
            return;
        }
        let mut pending = vec![(value, pointer.to_string(), base.to_string())];
        while let Some((value, pointer, inherited)) = pending.pop() {
            let Value::Object(object) = value else {
                if let Value::Array(items) = value {
                    for (position, item) in items.iter().enumerate() {
                        pending.push((item, format!("{pointer}/{position}"), inherited.clone()));
                    }
                }
                continue;
            };
            let mut base = inherited;
            let id = object
                .get("$id")
                .or_else(|| object.keyword("id").filter(|id| id.is_string()))
                .and_then(Value::as_str);
            if let Some(id) = id {
                let absolute = join(&base, id);
                let (without_fragment, fragment) = split_fragment(&absolute);
                if !without_fragment.is_empty() && without_fragment != base {
                    base = without_fragment.to_string();
                    self.ids.insert(base.clone(), pointer.clone());
                    self.bases.insert(pointer.clone(), base.clone());
                }
                // draft-07 and earlier: `"$id": "#name"` is an anchor.
                if let Some(name) =
                    fragment.filter(|name| !name.is_empty() && !name.starts_with('/'))
                {
                    self.anchors
                        .insert((base.clone(), name.to_string()), pointer.clone());
                }
            }
            if let Some(anchor) = object.keyword("$anchor").and_then(Value::as_str) {
                self.anchors
                    .insert((base.clone(), anchor.to_string()), pointer.clone());
            }
            if pointer.is_empty() {
                self.bases.insert(String::new(), base.clone());
            }
            for (key, child) in object {
                let child_pointer = format!("{pointer}/{}", escape_pointer_token(key));
                match key.as_str() {
                    // Keywords holding a map of schemas.
                    "properties" | "patternProperties" | "$defs" | "definitions"
                    | "dependentSchemas" | "dependencies" => {
                        if let Value::Object(members) = child {
                            for (name, member) in members {
                                pending.push((
                                    member,
                                    format!("{child_pointer}/{}", escape_pointer_token(name)),
                                    base.clone(),
                                ));
                            }
                        }
                    }
                    // Keywords holding a schema or a list of schemas.
                    "items"
                    | "prefixItems"
                    | "allOf"
                    | "anyOf"
                    | "oneOf"
                    | "not"
                    | "if"
                    | "then"
                    | "else"
                    | "contains"
                    | "additionalProperties"
                    | "additionalItems"
                    | "propertyNames"
                    | "unevaluatedProperties"
                    | "unevaluatedItems"
                    | "contentSchema" => {
                        pending.push((child, child_pointer, base.clone()));
                    }
                    // Anything else is not a schema: identifiers inside it are not ones.
                    _ => {}
                }
            }
        }
    }

    /// The base URI in force at `pointer`: the nearest `$id` above it, else the base of
    /// the mounted document it is in, else the root's.
    fn base_at(&self, document: &Document<'_>, pointer: &str) -> Cow<'_, str> {
        let mount = document
            .mounts
            .iter()
            .position(|mount| under(pointer, mount.at).is_some());
        let mut current = pointer;
        loop {
            if let Some(base) = self.bases.get(current) {
                return Cow::Borrowed(base);
            }
            if let Some(number) = mount
                && current == document.mounts[number].at
            {
                return Cow::Owned(mount_base(number));
            }
            match current.rfind('/') {
                Some(cut) => current = &current[..cut],
                None => return Cow::Borrowed(DOCUMENT_BASE),
            }
        }
    }

    /// The pointer a `$ref` written at `pointer` refers to.
    pub fn resolve(
        &self,
        document: &Document<'_>,
        pointer: &str,
        reference: &str,
    ) -> Result<String, String> {
        let base = self.base_at(document, pointer);
        let absolute;
        let (resource, fragment) = if let Some(fragment) = reference.strip_prefix('#') {
            // A fragment keeps the base's resource: no URI to join (most references
            // are `#/$defs/…`).
            (split_fragment(&base).0, Some(fragment))
        } else {
            absolute = join(&base, reference);
            split_fragment(&absolute)
        };
        let document_pointer = if resource == DOCUMENT_BASE || resource.is_empty() {
            String::new()
        } else if let Some(found) = self.ids.get(resource) {
            found.clone()
        } else if let Some(mount) = mounted_document(document, resource) {
            mount.at.to_string()
        } else if self.bases.get("").is_some_and(|base| base == resource) {
            String::new()
        } else {
            return Err(format!(
                "`{reference}` refers to another document (`{resource}`); Grail resolves references inside the schema only"
            ));
        };
        let fragment = match fragment {
            Some(fragment) if fragment.contains('%') => Cow::Owned(percent_decode(fragment)),
            Some(fragment) => Cow::Borrowed(fragment),
            None => Cow::Borrowed(""),
        };
        let target = if fragment.is_empty() {
            document_pointer
        } else if fragment.starts_with('/') {
            format!("{document_pointer}{fragment}")
        } else {
            let base = if document_pointer.is_empty() {
                self.bases
                    .get("")
                    .cloned()
                    .unwrap_or_else(|| DOCUMENT_BASE.to_string())
            } else {
                resource.to_string()
            };
            match self.anchors.get(&(base, fragment.to_string())) {
                Some(found) => found.clone(),
                None => return Err(format!("no `$anchor` named `{fragment}`")),
            }
        };
        if document.lookup(&target).is_none() {
            return Err(format!("`{reference}` points at nothing in the schema"));
        }
        Ok(target)
    }
}

/// The base of the mounted document number `number` without an `$id` of its own.
fn mount_base(number: usize) -> String {
    format!("{MOUNT_BASE}{number}/")
}

/// The mounted document whose own base is `resource`.
fn mounted_document<'d>(document: &Document<'d>, resource: &str) -> Option<Mount<'d>> {
    let digits = resource.strip_prefix(MOUNT_BASE)?.strip_suffix('/')?;
    // The spelling `mount_base` writes only (`01` or `+1` is not document 1).
    let canonical = digits.bytes().all(|byte| byte.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    if !canonical {
        return None;
    }
    document.mounts.get(digits.parse::<usize>().ok()?).copied()
}

/// `reference` resolved against `base` (RFC 3986, for the forms schemas use: absolute
/// URIs, fragments, absolute and relative paths).
fn join(base: &str, reference: &str) -> String {
    if reference.contains(':') && !reference.starts_with('#') {
        return reference.to_string();
    }
    let (base_document, _) = split_fragment(base);
    if reference.starts_with('#') || reference.is_empty() {
        return format!("{base_document}{reference}");
    }
    if let Some(rest) = reference.strip_prefix('/') {
        // Keep the scheme and authority of the base.
        let authority_end = base_document
            .find("://")
            .and_then(|scheme| {
                base_document[scheme + 3..]
                    .find('/')
                    .map(|slash| scheme + 3 + slash)
            })
            .unwrap_or(base_document.len());
        return format!("{}/{rest}", &base_document[..authority_end]);
    }
    let directory = match base_document.rfind('/') {
        Some(slash) => &base_document[..=slash],
        None => match base_document.find(':') {
            Some(colon) => &base_document[..=colon],
            None => "",
        },
    };
    normalize_dots(&format!("{directory}{reference}"))
}

/// Removes `./` and `seg/../` segments.
fn normalize_dots(uri: &str) -> String {
    let (document, fragment) = split_fragment(uri);
    let mut segments: Vec<&str> = Vec::new();
    for segment in document.split('/') {
        match segment {
            "." => {}
            ".." => {
                if segments.len() > 1 {
                    segments.pop();
                }
            }
            other => segments.push(other),
        }
    }
    let mut joined = segments.join("/");
    if let Some(fragment) = fragment {
        joined.push('#');
        joined.push_str(fragment);
    }
    joined
}

/// (URI without fragment, fragment without `#`).
fn split_fragment(uri: &str) -> (&str, Option<&str>) {
    match uri.find('#') {
        Some(hash) => (&uri[..hash], Some(&uri[hash + 1..])),
        None => (uri, None),
    }
}

/// `%XX` escapes of a URI fragment decoded (invalid ones kept as written).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let hex = |offset: usize| {
            bytes
                .get(index + offset)
                .and_then(|&byte| (byte as char).to_digit(16))
        };
        if bytes[index] == b'%'
            && let (Some(high), Some(low)) = (hex(1), hex(2))
        {
            out.push((high * 16 + low) as u8);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// True when some object anywhere in `value` has an `$id`, a string `id` or an
/// `$anchor` (a superset of the schemas [`ResourceIndex::new`] indexes).
fn has_identifiers(value: &Value) -> bool {
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Value::Object(object) => {
                // One pass over the keys; only objects and arrays can hold more.
                for (key, value) in object {
                    match (key.as_str(), value) {
                        ("$id" | "$anchor", _) | ("id", Value::String(_)) => return true,
                        (_, Value::Object(_) | Value::Array(_)) => pending.push(value),
                        _ => {}
                    }
                }
            }
            Value::Array(items) => pending.extend(
                items
                    .iter()
                    .filter(|item| matches!(item, Value::Object(_) | Value::Array(_))),
            ),
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn resolves_pointers_definitions_anchors_and_ids() {
        let schema = json!({
            "$id": "https://example.com/root.json",
            "$defs": {
                "a": {"$anchor": "first", "type": "string"},
                "b": {"$id": "item.json", "$defs": {"c": {"type": "integer"}}},
                "d": {"$id": "#old-style"},
                "e~f/g": {"type": "null"}
            }
        });
        let document = Document::alone(&schema);
        let index = ResourceIndex::new(&document);
        let resolve = |at: &str, reference: &str| index.resolve(&document, at, reference);
        assert_eq!(resolve("", "#/$defs/a").unwrap(), "/$defs/a");
        assert_eq!(resolve("", "#first").unwrap(), "/$defs/a");
        assert_eq!(resolve("", "#old-style").unwrap(), "/$defs/d");
        assert_eq!(resolve("", "item.json").unwrap(), "/$defs/b");
        assert_eq!(
            resolve("", "item.json#/$defs/c").unwrap(),
            "/$defs/b/$defs/c"
        );
        assert_eq!(
            resolve("/$defs/b", "#/$defs/c").unwrap(),
            "/$defs/b/$defs/c"
        );
        assert_eq!(
            resolve("/$defs/b", "root.json#/$defs/a").unwrap(),
            "/$defs/a"
        );
        assert_eq!(resolve("", "#/$defs/e~0f~1g").unwrap(), "/$defs/e~0f~1g");
        assert_eq!(resolve("", "#/%24defs/a").unwrap(), "/$defs/a");
        assert!(resolve("", "https://other.org/x.json").is_err());
        assert!(resolve("", "#/$defs/missing").is_err());
        assert!(resolve("", "#nowhere").is_err());
    }

    #[test]
    fn a_document_without_id_resolves_fragments() {
        let schema = json!({"definitions": {"x": {"type": "boolean"}}, "$ref": "#/definitions/x"});
        let document = Document::alone(&schema);
        let index = ResourceIndex::new(&document);
        assert_eq!(
            index.resolve(&document, "", "#/definitions/x").unwrap(),
            "/definitions/x"
        );
        assert_eq!(index.resolve(&document, "", "#").unwrap(), "");
    }
}
