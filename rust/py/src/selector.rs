//! `cliques._core.Selector`: a label selector compiled once, matched many times.

use cliques_core::selector::Selector as CoreSelector;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyMapping, PyString};

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
}

#[pymethods]
impl Selector {
    #[new]
    #[pyo3(signature = (spec = None))]
    fn new(spec: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
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
        Ok(Selector { inner })
    }

    /// Whether a label set (a mapping of str to str; None for no labels) matches.
    #[pyo3(signature = (labels))]
    fn matches(&self, labels: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        Ok(self.inner.matches(&to_labels(labels)?[..]))
    }

    /// The positions of the label sets that match, in order. The label sets are read first,
    /// then matched without holding the GIL.
    fn filter(&self, py: Python<'_>, label_sets: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
        if label_sets.is_instance_of::<PyString>() || label_sets.cast::<PyMapping>().is_ok() {
            return Err(PyTypeError::new_err(format!(
                "label_sets must be a sequence of mappings, got {}",
                type_name(label_sets)
            )));
        }
        let mut sets = Vec::new();
        for item in label_sets.try_iter()? {
            sets.push(to_labels(Some(&item?))?);
        }
        let inner = &self.inner;
        Ok(py.detach(|| {
            sets.iter()
                .enumerate()
                .filter(|(_, labels)| inner.matches(&labels[..]))
                .map(|(i, _)| i)
                .collect()
        }))
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
