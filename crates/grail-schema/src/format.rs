//! The `format` keyword: grammars of the formats Grail enforces. (Being written.)
