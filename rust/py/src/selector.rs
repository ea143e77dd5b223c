//! `cliques._core.Selector`: a label selector compiled once, matched many times.
//!
//! A `dict` label set is matched in place: only the selector's keys are looked up
//! (`PyDict_GetItemWithError` with interned keys) and a value is compared through its UTF-8
//! view, so nothing is copied or allocated per label set.

use cliques_core::selector::{Operator, Selector as CoreSelector};
use cliques_core::CoreError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyMapping, PyString, PyTuple};

use crate::convert::{to_labels, to_value, type_name};
use crate::{py_err, OrRaise};

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
/// whether a value object makes its requirement hold is remembered for the value objects
/// met (held, so that their addresses cannot be reused), starting with the interned values
/// themselves: a small set-associative table per requirement, indexed by address bits
/// (several ways per set, so that a few frequent values whose addresses collide do not take
/// turns in one slot), so that a value seen before costs a comparison or two, without
/// reading the value at all.
struct Memo<'py> {
    steps: Vec<Step<'py>>,
    /// The value objects in the tables, held so that their addresses cannot be reused.
    held: Vec<Bound<'py, PyString>>,
    learn: bool,
    py: Python<'py>,
}

/// What `Memo` knows of one requirement.
struct Step<'py> {
    /// The key to look up (the dict's own object once learnt).
    key: Bound<'py, PyString>,
    learned: bool,
    /// Whether the requirement reads the value (`=`, `!=`, `in`, `notin`) ...
    reads_value: bool,
    /// ... and whether it holds when the key is absent (or its value not listed).
    negate: bool,
    /// The value table: addresses of `str` objects kept alive for as long as the table
    /// lives (null for a free slot) ...
    seen: [*mut ffi::PyObject; SEEN],
    /// ... and whether the requirement holds when the label's value is that object.
    holds: [bool; SEEN],
}

/// Sets of `Memo`'s value table per requirement (a power of two), and ways per set.
const SETS: usize = 16;
const WAYS: usize = 4;
const SEEN: usize = SETS * WAYS;

/// The first slot of the set of an object address (objects are 16-byte aligned, so the
/// low bits are skipped).
#[inline(always)]
fn seen_set(p: *mut ffi::PyObject) -> usize {
    let a = (p as usize as u64) >> 4;
    (a.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SETS.trailing_zeros())) as usize * WAYS
}

impl<'py> Memo<'py> {
    /// The memo for `compiled`, whose interned values must outlive it (the table holds
    /// their addresses without a reference of its own).
    fn new(py: Python<'py>, compiled: &[Compiled], learn: bool) -> Self {
        Memo {
            steps: compiled
                .iter()
                .map(|c| {
                    let reads_value = !matches!(c.op, Operator::Exists | Operator::DoesNotExist);
                    let negate = matches!(
                        c.op,
                        Operator::DoesNotExist | Operator::NotEquals | Operator::NotIn
                    );
                    let mut step = Step {
                        key: c.key.bind(py).clone(),
                        learned: !learn,
                        reads_value,
                        negate,
                        seen: [std::ptr::null_mut(); SEEN],
                        holds: [false; SEEN],
                    };
                    if reads_value {
                        // An interned value is listed (one whose set is full is found by
                        // `decide` instead). They are held by `compiled`, which outlives the
                        // memo, so their addresses stay theirs.
                        for x in &c.interned {
                            if let Some(i) = step.free_slot(x.as_ptr()) {
                                step.seen[i] = x.as_ptr();
                                step.holds[i] = !negate;
                            }
                        }
                    }
                    step
                })
                .collect(),
            held: Vec::new(),
            learn,
            py,
        }
    }
}

impl<'py> Step<'py> {
    /// A free slot in the set of `v`, if any (a full set keeps what it has: values met
    /// once, such as those built per label set, would only push out values met again and
    /// again).
    fn free_slot(&self, v: *mut ffi::PyObject) -> Option<usize> {
        let set = seen_set(v);
        (set..set + WAYS).find(|&i| self.seen[i].is_null())
    }

    /// The slot of `v` in the table, if it is there.
    #[inline(always)]
    fn find(&self, v: *mut ffi::PyObject) -> Option<usize> {
        let set = seen_set(v);
        (set..set + WAYS).find(|&i| self.seen[i] == v)
    }

    /// Take `dict`'s own object for the key (known to be in it), once.
    #[inline(never)]
    fn learn_key(&mut self, dict: Borrowed<'_, 'py, PyDict>) {
        self.learned = true;
        let Ok(want) = self.key.to_str() else {
            return;
        };
        for (k, _) in dict.iter() {
            if let Ok(k) = k.cast_into_exact::<PyString>() {
                if k.to_str().is_ok_and(|t| t == want) {
                    self.key = k;
                    return;
                }
            }
        }
    }

    /// Whether the requirement holds for the value `v` (a live object, kept alive by the
    /// caller, found under the key) when `v` is not in the table: a `str` is required; then
    /// the value is one of the interned values, or its text is compared. The outcome is
    /// remembered if `v`'s set has a free slot.
    #[inline(never)]
    fn decide(
        &mut self,
        req: &Compiled,
        v: *mut ffi::PyObject,
        held: &mut Vec<Bound<'py, PyString>>,
        learn: bool,
        py: Python<'py>,
    ) -> PyResult<bool> {
        // SAFETY: `v` is a live object and the GIL is held.
        let is_str = unsafe {
            ffi::Py_TYPE(v) == std::ptr::addr_of_mut!(ffi::PyUnicode_Type)
                || ffi::PyUnicode_Check(v) != 0
        };
        if !is_str {
            return Err(not_str(py, v));
        }
        let listed = !self.reads_value || req.interned.iter().any(|x| x.as_ptr() == v) || {
            // SAFETY: `v` is a live str and the GIL is held; the view is dropped before
            // `v` is.
            let text = unsafe { utf8(py, v)? };
            req.values.iter().any(|x| x.as_bytes() == text)
        };
        let holds = listed != self.negate;
        if let Some(i) = self.free_slot(v).filter(|_| learn) {
            // SAFETY: `v` is a live str; `held` takes a reference of its own, so that the
            // address stays its own for as long as the table lives.
            held.push(unsafe { Bound::from_borrowed_ptr(py, v).cast_into_unchecked() });
            self.seen[i] = v;
            self.holds[i] = holds;
        }
        Ok(holds)
    }
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
    /// `!=` and `notin` match a label set without the key). The caller keeps `dict` (a live
    /// `dict` or subclass) alive.
    #[inline(always)]
    fn matches_dict<'py>(&self, dict: *mut ffi::PyObject, memo: &mut Memo<'py>) -> PyResult<bool> {
        let Memo {
            steps,
            held,
            learn,
            py,
        } = memo;
        let (learn, py) = (*learn, *py);
        for (req, step) in self.compiled.iter().zip(steps.iter_mut()) {
            // SAFETY: the GIL is held, `dict` is alive and the key is held by `step`. The
            // value found is borrowed from the dict and used before any Python code can run
            // again (pointer comparisons, type checks and `PyUnicode_AsUTF8AndSize` run none;
            // a value remembered by `Memo` is first made an owned reference).
            let v = unsafe { ffi::PyDict_GetItemWithError(dict, step.key.as_ptr()) };
            if v.is_null() {
                // SAFETY: the GIL is held.
                if unsafe { !ffi::PyErr_Occurred().is_null() } {
                    return Err(PyErr::fetch(py));
                }
                if !step.negate {
                    return Ok(false);
                }
                continue;
            }
            // A value in the table is a `str` the table keeps alive, so its address is its
            // own: the outcome is the one remembered, and the value need not be read (nor
            // its type checked).
            let holds = match step.find(v) {
                Some(i) => step.holds[i],
                None => step.decide(req, v, held, learn, py)?,
            };
            if !step.learned {
                // SAFETY: `dict` is a live dict and the GIL is held (the value is a `str`:
                // the key is learnt only where it was before).
                step.learn_key(unsafe { Borrowed::from_ptr(py, dict).cast_unchecked() });
            }
            if !holds {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Whether one label set (a mapping, or None for no labels) matches. Another mapping
    /// than a `dict` is read into pairs first. The caller keeps `labels` alive.
    #[inline(always)]
    fn matches_one<'py>(
        &self,
        labels: Borrowed<'_, 'py, PyAny>,
        memo: &mut Memo<'py>,
    ) -> PyResult<bool> {
        if labels.is_exact_instance_of::<PyDict>() || labels.is_instance_of::<PyDict>() {
            return self.matches_dict(labels.as_ptr(), memo);
        }
        self.matches_other(labels)
    }

    /// `matches_one` for a label set that is not a `dict`.
    #[inline(never)]
    fn matches_other(&self, labels: Borrowed<'_, '_, PyAny>) -> PyResult<bool> {
        if labels.is_none() {
            return Ok(self.inner.matches(&[] as &[(String, String)]));
        }
        Ok(self
            .inner
            .matches(&to_labels(Some(&labels.to_owned()))?[..]))
    }
}

/// The error for a label value `v` (a live object) that is not a `str`.
#[cold]
#[inline(never)]
fn not_str(py: Python<'_>, v: *mut ffi::PyObject) -> PyErr {
    // SAFETY: `v` is a live object and the GIL is held.
    let v = unsafe { Borrowed::from_ptr(py, v) };
    py_err(CoreError::wrong_type(
        "",
        format!("labels must map str to str, got str: {}", type_name(&v)),
    ))
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
                    return Err(py_err(CoreError::wrong_type(
                        "",
                        format!(
                            "a selector is a mapping, a str or None, got {}",
                            type_name(s)
                        ),
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
            return Err(py_err(CoreError::wrong_type(
                "",
                format!(
                    "label_sets must be a sequence of mappings, got {}",
                    type_name(label_sets)
                ),
            )));
        }
        let mut out = Vec::new();
        let mut memo = Memo::new(label_sets.py(), &self.compiled, true);
        // A list is read item by item, each held while it is matched: matching may run
        // Python code (a key's `__eq__`, another mapping's methods) that changes the list,
        // and `PyList_GetItem` checks the index against the list as it is.
        if let Ok(list) = label_sets.cast::<PyList>() {
            let py = list.py();
            let mut i = 0;
            loop {
                // SAFETY: the GIL is held and `list` is a live list.
                let p = unsafe { ffi::PyList_GetItem(list.as_ptr(), i as ffi::Py_ssize_t) };
                if p.is_null() {
                    // Past the end (the only way it fails for a list): the error is dropped.
                    let err = PyErr::fetch(py);
                    if i >= list.len() {
                        break;
                    }
                    return Err(err);
                }
                // SAFETY: `p` is a live object borrowed from the list, made an owned reference
                // at once: it lives while it is matched, whatever the matching runs.
                let item = unsafe { Bound::from_borrowed_ptr(py, p) };
                if self.matches_one(item.as_borrowed(), &mut memo)? {
                    out.push(i);
                }
                i += 1;
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
