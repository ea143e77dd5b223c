//! The canonical form of a pod template (docs/hashing.md): compact JSON bytes that are equal
//! exactly when two templates mean the same thing to the Kubernetes API.
//!
//! - `walk`: the rules, once, generic over the [`Input`] and the [`Sink`];
//! - `input`: what the walker asks of a document; `tape` (JSON text, parsed into a flat
//!   tape) and `value` (`serde_json::Value`) are the core's inputs, the Python binding adds
//!   one over Python objects;
//! - `sink`: where the bytes go, a buffer or FNV-1a 64 ([`Fnv`]);
//! - `keys`: map-list key tuples; `fail`: errors, with the JSON path.
//!
//! JSON text goes through the tape; when that gives up (any error, a duplicate member name,
//! text it does not read the easy way) the text is read by `serde_json` and walked as a
//! `Value`, which decides the output and the exact error.

mod fail;
mod input;
mod keys;
mod sink;
mod tape;
mod value;
mod walk;

use serde_json::Value;

pub use fail::{Fail, WalkResult};
pub use input::{Input, Number, Shape};
pub use sink::{Fnv, Sink};
pub use walk::{walk, Scratch};

use crate::error::CoreError;
use crate::schema::Kind;

/// Containers (objects and lists) may nest this deep; deeper documents are refused.
pub const MAX_DEPTH: usize = 100;

/// The canonical bytes of a document given as a JSON value.
pub fn canonical_json(doc: &Value, kind: Kind) -> Result<Vec<u8>, CoreError> {
    let mut out = Vec::with_capacity(1024);
    write_value(doc, kind, &mut out)?;
    Ok(out)
}

/// The canonical bytes of a document given as JSON text: through the tape, or when that
/// gives up, through a `Value`.
pub fn canonical_json_bytes(doc: &[u8], kind: Kind) -> Result<Vec<u8>, CoreError> {
    let mut out = Vec::with_capacity(doc.len());
    match tape::walk_text(doc, kind, &mut out) {
        Ok(_) => Ok(out),
        Err(_) => canonical_json_reference_bytes(doc, kind),
    }
}

/// FNV-1a 64 of the canonical bytes of JSON text, hashed as they are written (never stored).
pub fn canonical_fnv1a_64(doc: &[u8], kind: Kind) -> Result<u64, CoreError> {
    match tape::walk_text(doc, kind, Fnv::new()) {
        Ok(fnv) => Ok(fnv.finish()),
        Err(_) => Ok(write_value(&parse(doc)?, kind, Fnv::new())?.finish()),
    }
}

/// `canonical_json_bytes` through `serde_json::Value` only (the reference walk).
pub fn canonical_json_reference_bytes(doc: &[u8], kind: Kind) -> Result<Vec<u8>, CoreError> {
    canonical_json(&parse(doc)?, kind)
}

/// The JSON type of a value, as error messages name it.
pub fn type_name(v: &Value) -> &'static str {
    use input::Input;
    value::Values.shape(value::Node::Value(v)).name()
}

/// Parse JSON text (UTF-8) into a value; text that is not JSON is an invalid template.
pub fn parse(doc: &[u8]) -> Result<Value, CoreError> {
    serde_json::from_slice(doc).map_err(|e| CoreError::template("", format!("invalid JSON: {e}")))
}

/// Walk a JSON value into `out` (the reference walk: its errors are the errors).
pub fn write_value<S: Sink>(doc: &Value, kind: Kind, out: S) -> Result<S, CoreError> {
    let mut scratch = Scratch::default();
    walk(
        value::Values,
        value::Node::Value(doc),
        kind,
        &mut scratch,
        out,
    )
    .map_err(|fail| fail.into_error().unwrap_or_else(gave_up))
}

/// A give-up from the reference walk, which never gives up: reported all the same.
#[cold]
fn gave_up() -> CoreError {
    CoreError::template("", "internal error: the reference walk gave up")
}

#[cfg(test)]
mod tests;
