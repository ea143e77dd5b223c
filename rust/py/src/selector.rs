//! `cliques._core.Selector`: a label selector compiled once, matched many times.
//!
//! A `dict` label set is matched in place: only the selector's keys are looked up
//! (`PyDict_GetItemWithError` with interned keys) and a value is compared through its UTF-8
//! view, so nothing is copied or allocated per label set.

use cliques_core::selector::{Operator, Selector as CoreSelector};
use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyMapping, PyString, PyTuple};

use crate::convert::{to_labels, to_value, type_name};
use crate::OrRaise;

/// A Kubernetes label selector with apimachinery semantics.
///
/// Built from a LabelSelector mapping (`matchLabels`, `matchExpressions`), from the string
/// form (`"app=web,tier in (a,b),!canary"`), or from None / `{}` / `""` (matches everything).
/// `str()` gives the canonical string form, usable as a `labelSelector` query parameter.
#[pyclass(module = "cliques._core", name = "Selector", frozen)]
pub struct Selector {
    inner: CoreSelector,
    /// The requirements again, ready to be looked up in a `dict`.
    compiled: Vec<Compiled>,
}

/// One requirement, keys and values as interned Python strings.
struct Compiled {
    key: Py<PyString>,
    op: Operator,
    /// The values (sorted), compared with the UTF-8 view of a label's value ...
    values: Vec<String>,
    /// ... unless the label's value is one of these very objects (interned literals, the
    /// common case), which matches without reading its text.
    interned: Vec<Py<PyString>>,
}

impl Compiled {
    fn all(py: Python<'_>, inner: &CoreSelector) -> Vec<Compiled> {
        inner
            .requirements()
            .iter()
            .map(|r| Compiled {
                key: PyString::intern(py, r.key()).unbind(),
                op: r.operator(),
                values: r.values().to_vec(),
                interned: r
                    .values()
                    .iter()
                    .map(|v| PyString::intern(py, v).unbind())
                    .collect(),
            })
            .collect()
    }
}

/// What one `filter` (or `matches`) call has learnt, per requirement, to look labels up
/// faster; the outcome of every lookup and comparison is the same with or without it, and
/// nothing is kept from one call to the next.
///
/// A dict finds a key fastest when it is the very object stored in it, so the first dict
/// that has a key lends its own (equal) key object for the following lookups: label sets
/// built by one program usually share their key objects. And since a `str` is immutable,
/// whether a value is listed is remembered for the value objects met (held, so that their
/// addresses cannot be reused), starting with the interned values themselves: a small
/// direct-mapped table per requirement, indexed by address bits, so that a value seen
/// before costs one comparison and no search.
struct Memo<'py> {
    keys: Vec<Bound<'py, PyString>>,
    learned: Vec<bool>,
    seen: Vec<[Seen<'py>; SEEN]>,
    learn: bool,
}

/// A slot of `Memo`'s value table: a value object and whether it is listed.
type Seen<'py> = Option<(Bound<'py, PyString>, bool)>;

/// Slots of `Memo`'s value table per requirement (a power of two).
const SEEN: usize = 16;

/// The slot of an object address: objects are 16-byte aligned, so the low bits are skipped.
#[inline]
fn seen_slot(p: *mut ffi::PyObject) -> usize {
    let a = p as usize;
    ((a >> 4) ^ (a >> 9)) & (SEEN - 1)
}

impl<'py> Memo<'py> {
    fn new(py: Python<'py>, compiled: &[Compiled], learn: bool) -> Self {
        Memo {
            keys: compiled.iter().map(|c| c.key.bind(py).clone()).collect(),
            learned: vec![!learn; compiled.len()],
            seen: compiled
                .iter()
                .map(|c| {
                    let mut table: [Seen<'py>; SEEN] = Default::default();
                    for v in &c.interned {
                        table[seen_slot(v.as_ptr())] = Some((v.bind(py).clone(), true));
                    }
                    table
                })
                .collect(),
            learn,
        }
    }

    /// Take `dict`'s own object for key `j` (known to be in it), once.
    fn learn_key(&mut self, j: usize, dict: Borrowed<'_, 'py, PyDict>) {
        self.learned[j] = true;
        let Ok(want) = self.keys[j].to_str() else {
            return;
        };
        for (k, _) in dict.iter() {
            if let Ok(k) = k.cast_into_exact::<PyString>() {
                if k.to_str().is_ok_and(|t| t == want) {
                    self.keys[j] = k;
                    return;
                }
            }
        }
    }

    /// Whether the value `v` (a live `str`) is one of requirement `j`'s values.
    #[inline]
    fn listed(
        &mut self,
        j: usize,
        req: &Compiled,
        v: Borrowed<'_, 'py, PyString>,
    ) -> PyResult<bool> {
        let slot = &mut self.seen[j][seen_slot(v.as_ptr())];
        if let Some((x, verdict)) = slot {
            if x.as_ptr() == v.as_ptr() {
                return Ok(*verdict);
            }
        }
        listed_slow(slot, req, v, self.learn)
    }
}

/// `Memo::listed` for a value not in its table: compare the text, remember the verdict.
#[cold]
fn listed_slow<'py>(
    slot: &mut Seen<'py>,
    req: &Compiled,
    v: Borrowed<'_, 'py, PyString>,
    learn: bool,
) -> PyResult<bool> {
    // SAFETY: `v` is a live str and the GIL is held; the view is dropped before `v` is.
    let text = unsafe { utf8(v.py(), v.as_ptr())? };
    let verdict = req.values.iter().any(|x| x.as_bytes() == text);
    if learn {
        *slot = Some((v.to_owned(), verdict));
    }
    Ok(verdict)
}

/// The UTF-8 view of a `str`.
///
/// # Safety
/// `s` is a live `str` (or subclass) object and the GIL is held; the view lives as long as `s`.
unsafe fn utf8<'a>(py: Python<'_>, s: *mut ffi::PyObject) -> PyResult<&'a [u8]> {
    let mut len: ffi::Py_ssize_t = 0;
    let data = ffi::PyUnicode_AsUTF8AndSize(s, &mut len);
    if data.is_null() {
        return Err(PyErr::fetch(py));
    }
    Ok(std::slice::from_raw_parts(data.cast::<u8>(), len as usize))
}

impl Selector {
    /// Whether a `dict` label set matches (the rules of the core's `Requirement::matches`:
    /// `!=` and `notin` match a label set without the key). The caller keeps `dict` alive.
    fn matches_dict<'py>(
        &self,
        dict: Borrowed<'_, 'py, PyDict>,
        memo: &mut Memo<'py>,
    ) -> PyResult<bool> {
        let py = dict.py();
        for (j, req) in self.compiled.iter().enumerate() {
            // SAFETY: the GIL is held, `dict` is alive and the key is an owned reference.
            // The value found is borrowed from the dict and used before any Python code can
            // run again (type checks, pointer comparisons and `PyUnicode_AsUTF8AndSize` run
            // none; a value remembered by `Memo` is first made an owned reference).
            let found = unsafe {
                let v = ffi::PyDict_GetItemWithError(dict.as_ptr(), memo.keys[j].as_ptr());
                if v.is_null() {
                    if !ffi::PyErr_Occurred().is_null() {
                        return Err(PyErr::fetch(py));
                    }
                    None
                } else {
                    let v = Borrowed::from_ptr(py, v);
                    match v.cast_exact::<PyString>().or_else(|_| v.cast::<PyString>()) {
                        Ok(v) => Some(v),
                        Err(_) => {
                            return Err(PyTypeError::new_err(format!(
                                "labels must map str to str, got str: {}",
                                type_name(&v)
                            )))
                        }
                    }
                }
            };
            if found.is_some() && !memo.learned[j] {
                memo.learn_key(j, dict);
            }
            let ok = match req.op {
                Operator::Exists => found.is_some(),
                Operator::DoesNotExist => found.is_none(),
                Operator::Equals | Operator::In => match found {
                    Some(v) => memo.listed(j, req, v)?,
                    None => false,
                },
                Operator::NotEquals | Operator::NotIn => match found {
                    Some(v) => !memo.listed(j, req, v)?,
                    None => true,
                },
            };
            if !ok {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Whether one label set (a mapping, or None for no labels) matches. Another mapping
    /// than a `dict` is read into pairs first. The caller keeps `labels` alive.
    fn matches_one<'py>(
        &self,
        labels: Borrowed<'_, 'py, PyAny>,
        memo: &mut Memo<'py>,
    ) -> PyResult<bool> {
        if let Ok(dict) = labels
            .cast_exact::<PyDict>()
            .or_else(|_| labels.cast::<PyDict>())
        {
            return self.matches_dict(dict, memo);
        }
        if labels.is_none() {
            return Ok(self.inner.matches(&[] as &[(String, String)]));
        }
        Ok(self
            .inner
            .matches(&to_labels(Some(&labels.to_owned()))?[..]))
    }
}

#[pymethods]
impl Selector {
    #[new]
    #[pyo3(signature = (spec = None))]
    fn new(py: Python<'_>, spec: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let inner = match spec {
            None => CoreSelector::everything(),
            Some(s) if s.is_none() => CoreSelector::everything(),
            Some(s) => {
                if let Ok(text) = s.cast::<PyString>() {
                    text.to_str()?.parse().or_raise()?
                } else if s.cast::<PyMapping>().is_ok() {
                    CoreSelector::from_label_selector(&to_value(s)?).or_raise()?
                } else {
                    return Err(PyTypeError::new_err(format!(
                        "a selector is a mapping, a str or None, got {}",
                        type_name(s)
                    )));
                }
            }
        };
        let compiled = Compiled::all(py, &inner);
        Ok(Selector { inner, compiled })
    }

    /// Whether a label set (a mapping of str to str; None for no labels) matches.
    #[pyo3(signature = (labels))]
    fn matches<'py>(&self, py: Python<'py>, labels: Option<&Bound<'py, PyAny>>) -> PyResult<bool> {
        match labels {
            Some(labels) => self.matches_one(
                labels.as_borrowed(),
                &mut Memo::new(py, &self.compiled, false),
            ),
            None => Ok(self.inner.matches(&[] as &[(String, String)])),
        }
    }

    /// The positions of the label sets that match, in order. Each `dict` is matched in
    /// place: only the selector's keys are looked up.
    fn filter<'py>(&self, label_sets: &Bound<'py, PyAny>) -> PyResult<Vec<usize>> {
        if label_sets.is_instance_of::<PyString>() || label_sets.cast::<PyMapping>().is_ok() {
            return Err(PyTypeError::new_err(format!(
                "label_sets must be a sequence of mappings, got {}",
                type_name(label_sets)
            )));
        }
        let mut out = Vec::new();
        let mut memo = Memo::new(label_sets.py(), &self.compiled, true);
        // A list is matched through a tuple copy of it: the tuple holds every label set, so
        // they are borrowed from it (no reference counting per label set), whatever runs.
        if let Ok(list) = label_sets.cast::<PyList>() {
            let tuple = list.to_tuple();
            for (i, item) in tuple.iter_borrowed().enumerate() {
                if self.matches_one(item, &mut memo)? {
                    out.push(i);
                }
            }
        } else if let Ok(tuple) = label_sets.cast::<PyTuple>() {
            for (i, item) in tuple.iter_borrowed().enumerate() {
                if self.matches_one(item, &mut memo)? {
                    out.push(i);
                }
            }
        } else {
            for (i, item) in label_sets.try_iter()?.enumerate() {
                if self.matches_one(item?.as_borrowed(), &mut memo)? {
                    out.push(i);
                }
            }
        }
        Ok(out)
    }

    /// Whether the selector has no requirement (it matches everything).
    fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    fn __str__(&self) -> String {
        self.inner.to_string()
    }

    fn __repr__(&self) -> String {
        // The canonical form holds no quote or backslash: keys and values are validated.
        format!("Selector('{}')", self.inner)
    }
}
