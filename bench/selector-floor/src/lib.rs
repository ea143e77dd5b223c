//! The least work a label-selector filter over a `list` of `dict`s can do through
//! CPython's public C API: walk the list, and make one `PyDict_GetItemWithError` per item.
//! `run.py` times these against `cliques._core.Selector.filter`.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};

/// Read every item of the list and nothing else; the number of items read.
#[pyfunction]
fn walk(list: &Bound<'_, PyList>) -> usize {
    let mut seen = 0;
    for i in 0..list.len() {
        // SAFETY: the GIL is held and `list` is a live list; the item is only compared
        // with null.
        let item = unsafe { ffi::PyList_GetItem(list.as_ptr(), i as ffi::Py_ssize_t) };
        if !item.is_null() {
            seen += 1;
        }
    }
    seen
}

/// Walk the list and look `key` up in every item (dicts with `str` keys only); the number of
/// items that have the key.
#[pyfunction]
fn walk_and_lookup(list: &Bound<'_, PyList>, key: &Bound<'_, PyString>) -> PyResult<usize> {
    let mut hits = 0;
    for i in 0..list.len() {
        // SAFETY: the GIL is held, `list` is a live list and `key` is held. An index past
        // the end gives null and an error, returned before the lookup.
        let item = unsafe { ffi::PyList_GetItem(list.as_ptr(), i as ffi::Py_ssize_t) };
        if item.is_null() {
            return Err(PyErr::fetch(list.py()));
        }
        // SAFETY: `item` is borrowed from the list without a reference of its own, which is
        // sound only while no Python code runs: true of the benchmark's label sets (dicts
        // with `str` keys only; `Selector.filter` itself holds each item). An item that is
        // not a dict makes the lookup fail with an error. The value is only compared with null.
        let value = unsafe { ffi::PyDict_GetItemWithError(item, key.as_ptr()) };
        if !value.is_null() {
            hits += 1;
        } else if let Some(err) = PyErr::take(list.py()) {
            return Err(err);
        }
    }
    Ok(hits)
}

#[pymodule]
fn selector_floor(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(walk, m)?)?;
    m.add_function(wrap_pyfunction!(walk_and_lookup, m)?)?;
    Ok(())
}
