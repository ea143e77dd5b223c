//! The `cliques._core` extension module: thin pyo3 wrappers over `cliques_core`.
//!
//! JSON text is handed to the core with the GIL released; a document given as Python
//! objects is walked as it is (`pyinput`), or when that gives up, converted (`convert`) and
//! handed to the core. Every error is a `CoreError` (cliques_core::error), raised by
//! `py_err` as the Python exception of its kind.

mod convert;
mod pyinput;
mod selector;

use cliques_core::canonical::Fnv;
use cliques_core::{CoreError, ErrorKind, Kind};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt, PyMapping, PyString};

pyo3::create_exception!(
    cliques._core,
    TemplateError,
    PyValueError,
    "An invalid template: `.path` is the JSON path of the offending value (empty for the \
     document as a whole), `.message` says what is wrong there; `str()` is \
     `<path>: <message>`."
);

/// A core error as a Python exception whose message is the error's text: an invalid
/// template as `TemplateError` (with `.path` and `.message`), any other invalid value as
/// `ValueError`, a value of the wrong type as `TypeError`.
pub fn py_err(e: CoreError) -> PyErr {
    let text = e.to_string();
    match e.kind {
        ErrorKind::Value => PyValueError::new_err(text),
        ErrorKind::Type => PyTypeError::new_err(text),
        ErrorKind::Template => {
            let err = TemplateError::new_err(text);
            Python::attach(|py| {
                let value = err.value(py);
                // Setting attributes on a fresh exception instance does not fail.
                let _ = value.setattr("path", e.path);
                let _ = value.setattr("message", e.message);
            });
            err
        }
    }
}

/// `result.or_raise()?`: a core result as a Python one.
pub trait OrRaise<T> {
    fn or_raise(self) -> PyResult<T>;
}

impl<T> OrRaise<T> for Result<T, CoreError> {
    fn or_raise(self) -> PyResult<T> {
        self.map_err(py_err)
    }
}

/// What `canonical_json` and `template_hash` were given.
enum Doc<'py> {
    Bytes(Bound<'py, PyBytes>),
    Str(Bound<'py, PyString>),
    Mapping(Bound<'py, PyAny>),
}

impl<'py> Doc<'py> {
    fn from_py(doc: &Bound<'py, PyAny>) -> PyResult<Self> {
        if let Ok(b) = doc.cast::<PyBytes>() {
            Ok(Doc::Bytes(b.clone()))
        } else if let Ok(s) = doc.cast::<PyString>() {
            Ok(Doc::Str(s.clone()))
        } else if doc.cast::<PyMapping>().is_ok() {
            Ok(Doc::Mapping(doc.clone()))
        } else {
            Err(py_err(CoreError::wrong_type(
                "",
                format!(
                    "doc must be bytes, str or a mapping, got {}",
                    convert::type_name(doc)
                ),
            )))
        }
    }

    /// The canonical bytes (JSON text without the GIL).
    fn canonical(&self, py: Python<'_>, kind: Kind) -> PyResult<Vec<u8>> {
        match self {
            Doc::Bytes(b) => {
                let bytes = b.as_bytes();
                py.detach(|| cliques_core::canonical_json_bytes(bytes, kind))
            }
            Doc::Str(s) => {
                let text = s.to_str()?;
                py.detach(|| cliques_core::canonical_json_bytes(text.as_bytes(), kind))
            }
            Doc::Mapping(m) => {
                let mut out = Vec::with_capacity(1024);
                if pyinput::walk(m, kind, &mut out).is_some() {
                    return Ok(out);
                }
                let value = convert::to_value(m)?;
                py.detach(|| cliques_core::canonical_json(&value, kind))
            }
        }
        .or_raise()
    }

    /// The template hash (JSON text without the GIL); the canonical bytes are hashed as they
    /// are written, never stored.
    fn hash(&self, py: Python<'_>, kind: Kind) -> PyResult<String> {
        let fnv = match self {
            Doc::Bytes(b) => {
                let bytes = b.as_bytes();
                py.detach(|| cliques_core::canonical::canonical_fnv1a_64(bytes, kind))
            }
            Doc::Str(s) => {
                let text = s.to_str()?;
                py.detach(|| cliques_core::canonical::canonical_fnv1a_64(text.as_bytes(), kind))
            }
            Doc::Mapping(m) => match pyinput::walk(m, kind, Fnv::new()) {
                Some(fnv) => Ok(fnv.finish()),
                None => {
                    let value = convert::to_value(m)?;
                    py.detach(|| cliques_core::canonical::write_value(&value, kind, Fnv::new()))
                        .map(Fnv::finish)
                }
            },
        }
        .or_raise()?;
        Ok(cliques_core::hash::hash_of_fnv(fnv))
    }
}

fn parse_kind(kind: &str) -> PyResult<Kind> {
    kind.parse().or_raise()
}

/// The canonical JSON bytes of a PodTemplateSpec (or, with kind="PodSpec", a PodSpec) given
/// as JSON bytes, a JSON str or a mapping. Raises ValueError naming the JSON path of an
/// invalid value.
#[pyfunction]
#[pyo3(signature = (doc, kind = "PodTemplateSpec"))]
fn canonical_json<'py>(
    py: Python<'py>,
    doc: &Bound<'py, PyAny>,
    kind: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let kind = parse_kind(kind)?;
    let out = Doc::from_py(doc)?.canonical(py, kind)?;
    Ok(PyBytes::new(py, &out))
}

/// The template hash: FNV-1a 64 of the canonical bytes, in decimal, SafeEncodeString'd.
#[pyfunction]
#[pyo3(signature = (doc, kind = "PodTemplateSpec"))]
fn template_hash(py: Python<'_>, doc: &Bound<'_, PyAny>, kind: &str) -> PyResult<String> {
    let kind = parse_kind(kind)?;
    Doc::from_py(doc)?.hash(py, kind)
}

/// The paths at which two PodTemplateSpecs (or PodSpecs) differ in meaning, compared in
/// their canonical forms (`spec.containers[name=main].image`); empty when they mean the same.
/// Each document is JSON bytes, a JSON str or a mapping. Raises ValueError as canonical_json.
#[pyfunction]
#[pyo3(signature = (old, new, kind = "PodTemplateSpec"))]
fn template_diff(
    py: Python<'_>,
    old: &Bound<'_, PyAny>,
    new: &Bound<'_, PyAny>,
    kind: &str,
) -> PyResult<Vec<String>> {
    let kind = parse_kind(kind)?;
    let a = Doc::from_py(old)?.canonical(py, kind)?;
    let b = Doc::from_py(new)?.canonical(py, kind)?;
    cliques_core::diff::canonical_diff(&a, &b).or_raise()
}

/// Whether a change at exactly these paths (`template_diff`) can be made to a running pod
/// in place: each is a container's or an init container's image, or with `resize` (the
/// server serves `pods/resize`) a container's CPU or memory request or limit.
#[pyfunction]
#[pyo3(signature = (paths, resize = false))]
fn in_place(paths: Vec<String>, resize: bool) -> bool {
    cliques_core::in_place(&paths, resize)
}

/// Whether a path of `template_diff` is a container's CPU or memory request or limit, which
/// the `pods/resize` subresource may change.
#[pyfunction]
fn resize_path(path: &str) -> bool {
    cliques_core::resize_path(path)
}

/// `SafeEncodeString` of a number's decimal digits, as Kubernetes spells a hash.
#[pyfunction]
fn safe_encode(value: u64) -> String {
    cliques_core::hash::safe_encode(&value.to_string())
}

/// FNV-1a, 32 bit.
#[pyfunction]
fn fnv1a_32(data: &[u8]) -> u32 {
    cliques_core::fnv1a_32(data)
}

/// FNV-1a, 64 bit.
#[pyfunction]
fn fnv1a_64(data: &[u8]) -> u64 {
    cliques_core::fnv1a_64(data)
}

/// The bucket of an object: fnv1a_32(f"{namespace}/{name}") % buckets (buckets > 0).
#[pyfunction]
#[pyo3(signature = (namespace, name, buckets = 256))]
fn bucket_of(namespace: &str, name: &str, buckets: i128) -> PyResult<u32> {
    let buckets = match u32::try_from(buckets) {
        Ok(b) => b,
        Err(_) if buckets <= 0 => 0,
        Err(_) => {
            return Err(py_err(CoreError::new(
                "buckets",
                format!("must be at most {}", u32::MAX),
            )))
        }
    };
    cliques_core::bucket_of(namespace, name, buckets).or_raise()
}

/// Plan member indices: (create, remove). `create` is every index in range(desired) not in
/// use, lowest first, or in a random order fixed by `seed`; `remove` is every index in use
/// that is >= desired, highest first.
#[pyfunction]
#[pyo3(signature = (in_use, desired, *, seed = None))]
fn plan_indices(
    py: Python<'_>,
    in_use: &Bound<'_, PyAny>,
    desired: i128,
    seed: Option<&Bound<'_, PyInt>>,
) -> PyResult<(Vec<u64>, Vec<u64>)> {
    if desired < 0 {
        return Err(py_err(CoreError::new("desired", "must not be negative")));
    }
    let desired = u64::try_from(desired).unwrap_or(u64::MAX);
    let mut indices = Vec::new();
    for item in in_use.try_iter()? {
        let item = item?;
        let i = item.cast::<PyInt>().map_err(|_| {
            py_err(CoreError::wrong_type(
                "",
                format!("in_use must hold ints, got {}", convert::type_name(&item)),
            ))
        })?;
        match i.extract::<i128>() {
            Ok(v) if v < 0 => {
                return Err(py_err(CoreError::new(
                    "in_use",
                    format!("negative index {v}"),
                )))
            }
            Ok(v) => indices.push(u64::try_from(v).unwrap_or(u64::MAX)),
            Err(_) => indices.push(u64::MAX),
        }
    }
    // Any int is a seed: reduced modulo 2**64.
    let seed = match seed {
        None => None,
        Some(s) => Some(s.call_method1("__and__", (u64::MAX,))?.extract::<u64>()?),
    };
    let plan = py
        .detach(|| cliques_core::plan_indices(&indices, desired, seed))
        .or_raise()?;
    Ok((plan.create, plan.remove))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add(
        "HASH_ALGORITHM_VERSION",
        cliques_core::HASH_ALGORITHM_VERSION,
    )?;
    m.add_function(wrap_pyfunction!(canonical_json, m)?)?;
    m.add_function(wrap_pyfunction!(template_hash, m)?)?;
    m.add_function(wrap_pyfunction!(template_diff, m)?)?;
    m.add_function(wrap_pyfunction!(in_place, m)?)?;
    m.add_function(wrap_pyfunction!(resize_path, m)?)?;
    m.add_function(wrap_pyfunction!(safe_encode, m)?)?;
    m.add_function(wrap_pyfunction!(fnv1a_32, m)?)?;
    m.add_function(wrap_pyfunction!(fnv1a_64, m)?)?;
    m.add_function(wrap_pyfunction!(bucket_of, m)?)?;
    m.add_function(wrap_pyfunction!(plan_indices, m)?)?;
    m.add_class::<selector::Selector>()?;
    m.add("TemplateError", m.py().get_type::<TemplateError>())?;
    Ok(())
}
