//! Numbers: integer and number ranges, `multipleOf`. (Being written.)
