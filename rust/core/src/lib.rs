//! cliques core: pure Rust, no Python. The `cliques._core` extension (rust/py) wraps it.
//!
//! - [`canonical`]: the canonical form of a pod template (docs/hashing.md), guided by the
//!   generated [`schema`] table, with [`quantity`] and number normalization;
//! - [`fnv`]: FNV-1a and `SafeEncodeString` (a leaf);
//! - [`hash`]: the template hash;
//! - [`diff`]: which parts of two templates differ, and whether a pod takes it in place;
//! - [`bucket`]: spreading objects over shards;
//! - [`selector`]: Kubernetes label selectors;
//! - [`indices`]: planning which member indices to create and remove.
//!
//! Every fallible operation returns [`CoreError`] ([`error`]), which carries the kind of the
//! problem, its JSON path and its message; the binding raises it as a Python exception.

pub mod bucket;
pub mod canonical;
pub mod decimal;
pub mod diff;
pub mod error;
pub mod fnv;
pub mod hash;
pub mod indices;
pub mod json;
pub mod quantity;
pub mod schema;
mod schema_gen;
pub mod selector;

pub use bucket::bucket_of;
pub use canonical::{canonical_json, canonical_json_bytes};
pub use diff::{in_place, resize_path, template_diff};
pub use error::{CoreError, ErrorKind};
pub use hash::{fnv1a_32, fnv1a_64, template_hash, template_hash_bytes, HASH_ALGORITHM_VERSION};
pub use indices::{plan_indices, Plan};
pub use schema::Kind;
pub use selector::Selector;
