//! Pointers and rule names: the JSON pointers the reader builds, and the readable rule
//! name the emitter gives the schema at a pointer, and looking a pointer up in a value.

use serde_json::Value;

use crate::keywords::Keywords;

/// `parts` written one after another, in one allocation of the right size (cheaper than
/// `format!` for the pointers and rule names the converter makes per schema).
pub(crate) fn joined(parts: &[&str]) -> String {
    let mut text = String::with_capacity(parts.iter().map(|part| part.len()).sum());
    for part in parts {
        text.push_str(part);
    }
    text
}

/// A readable rule name for the schema at `pointer`: its last property names, `item`,
/// or definition name.
pub(crate) fn rule_name(pointer: &str) -> String {
    let unescape = |token: &str| -> String {
        if token.contains('~') {
            token.replace("~1", "/").replace("~0", "~")
        } else {
            token.to_string()
        }
    };
    let mut tokens = pointer.split('/').skip(1);
    // Words by reference where they can be: most are property names or fixed words.
    let mut words: Vec<std::borrow::Cow<'_, str>> = Vec::new();
    while let Some(token) = tokens.next() {
        let word: Option<std::borrow::Cow<'_, str>> = match token {
            "properties" | "$defs" | "definitions" | "patternProperties" | "dependentSchemas" => {
                tokens.next().map(|name| {
                    if name.contains('~') {
                        unescape(name).into()
                    } else {
                        name.into()
                    }
                })
            }
            "items" | "additionalItems" => Some("item".into()),
            "prefixItems" => tokens
                .next()
                .map(|position| format!("tuple-{}", unescape(position)).into()),
            "additionalProperties" => Some("additional".into()),
            "anyOf" | "oneOf" | "allOf" => tokens
                .next()
                .map(|position| format!("alternative-{}", unescape(position)).into()),
            "contains" | "not" | "then" | "else" | "if" => Some(token.into()),
            _ => None,
        };
        words.extend(word);
    }
    if words.is_empty() {
        return "root".to_string();
    }
    let keep = words.len().saturating_sub(3);
    words[keep..].join("-")
}

/// The value at JSON pointer `pointer` in `root` (as `Value::pointer`, without allocating
/// for tokens that need no unescaping: the converter looks a pointer up for every schema
/// it reads).
pub(crate) fn lookup<'v>(root: &'v Value, pointer: &str) -> Option<&'v Value> {
    if pointer.is_empty() {
        return Some(root);
    }
    let rest = pointer.strip_prefix('/')?;
    let mut current = root;
    for token in rest.split('/') {
        let unescaped;
        let token = if token.contains('~') {
            unescaped = token.replace("~1", "/").replace("~0", "~");
            unescaped.as_str()
        } else {
            token
        };
        current = match current {
            // Schema objects are small: a scan beats hashing the key.
            Value::Object(map) => map.keyword(token)?,
            Value::Array(items) => {
                if token.len() > 1 && token.starts_with('0') || token.starts_with('+') {
                    return None;
                }
                items.get(token.parse::<usize>().ok()?)?
            }
            _ => return None,
        };
    }
    Some(current)
}

#[cfg(test)]
mod rule_name_tests {
    use super::rule_name;

    #[test]
    fn names_come_from_the_last_three_words_of_the_pointer() {
        for (pointer, name) in [
            ("", "root"),
            ("/type", "root"),
            ("/properties/user", "user"),
            ("/properties/a~1b/items", "a/b-item"),
            (
                "/$defs/tool/properties/arguments/properties/x~0y",
                "tool-arguments-x~y",
            ),
            ("/anyOf/2/prefixItems/0", "alternative-2-tuple-0"),
            (
                "/properties/a/additionalProperties/not/if",
                "additional-not-if",
            ),
            ("/properties", "root"),
            ("/definitions/d/contains/then", "d-contains-then"),
        ] {
            assert_eq!(rule_name(pointer), name, "{pointer}");
        }
    }
}

#[cfg(test)]
mod lookup_tests {
    use serde_json::json;

    use super::lookup;

    #[test]
    fn lookup_reads_pointers_as_serde_json_does() {
        let document = json!({"a/b": {"~c": [1, {"d": 2}]}, "": 3, "e": [0]});
        for pointer in [
            "",
            "/a~1b",
            "/a~1b/~0c/1/d",
            "/a~1b/~0c/0",
            "/",
            "/e/00",
            "/e/+0",
            "/e/1",
            "/x",
            "a",
            "/e/0/f",
        ] {
            assert_eq!(
                lookup(&document, pointer),
                document.pointer(pointer),
                "{pointer}"
            );
        }
    }
}
