//! Node bindings of Grail: the native addon of the npm package `grail-gbnf`, wrapped by
//! the hand-written `index.js`, which adds the `gbnf`-compatible API (`GBNF()`, immutable
//! states, `RuleType`, `isRange`) and the error classes.
//!
//! The classes are thin over the Rust API: [`grammar::Grammar`] (GBNF, JSON Schema or a
//! tool registry, compiled once, shared by any number of matchers),
//! [`vocabulary::Vocabulary`] (exact token bytes and the token trie) and
//! [`matcher::Matcher`] (text or tokens in; next-character rules, forced text and token
//! masks out, masks written into a caller's `Uint32Array`). Grammars, schemas and
//! registries that Grail refuses come back as data ([`errors::Failure`], with Grail's
//! diagnostics), which `index.js` turns into exceptions, so a WebAssembly build of the
//! same Rust functions can sit under the same JavaScript.

// napi-derive registers the exports only outside `cfg(test)`; clippy's `--all-targets`
// checks the library under `cfg(test)` too, where nothing would use them.
#![cfg_attr(test, allow(dead_code))]

mod batch;
mod check;
mod errors;
mod grammar;
mod matcher;
mod prefault;
mod rules;
mod tools;
mod vocabulary;

use napi_derive::napi;

/// Grammar building allocates many small objects: mimalloc, as the `grail` binary.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The version of the addon (the Grail workspace's version).
#[napi]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}
