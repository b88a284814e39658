//! Looking keywords up in a schema object. A schema object has a handful of keywords and
//! the reader asks for dozens it might have: a scan of a few keys is cheaper than hashing
//! each name with the map's SipHash, so small objects are scanned.

use serde_json::{Map, Value};

/// Objects with at most this many keys are scanned rather than hashed into.
const SCAN_UP_TO: usize = 12;

/// Keyword lookup on a schema object.
pub(crate) trait Keywords {
    /// The value of `keyword`, if the object has it.
    fn keyword(&self, keyword: &str) -> Option<&Value>;

    /// True when the object has `keyword`.
    fn has_keyword(&self, keyword: &str) -> bool {
        self.keyword(keyword).is_some()
    }
}

impl Keywords for Map<String, Value> {
    fn keyword(&self, keyword: &str) -> Option<&Value> {
        if self.len() <= SCAN_UP_TO {
            self.iter()
                .find(|(key, _)| key.as_str() == keyword)
                .map(|(_, value)| value)
        } else {
            self.get(keyword)
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::Keywords;

    #[test]
    fn small_and_large_objects_answer_as_the_map_does() {
        let small = json!({"type": "string", "minLength": 2});
        let mut large = serde_json::Map::new();
        for index in 0..40 {
            large.insert(format!("k{index}"), json!(index));
        }
        let small = small.as_object().unwrap();
        assert_eq!(small.keyword("minLength"), Some(&json!(2)));
        assert_eq!(small.keyword("maxLength"), None);
        assert!(small.has_keyword("type"));
        assert_eq!(large.keyword("k39"), Some(&json!(39)));
        assert_eq!(large.keyword("k40"), None);
    }
}
