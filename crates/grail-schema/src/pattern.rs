//! The `pattern` keyword: an ECMA-262 regular expression → the JSON-encoded characters of
//! the strings it matches. (Being written.)
