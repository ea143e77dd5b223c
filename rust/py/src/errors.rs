//! `TemplateError`: how an invalid template crosses into Python. A `ValueError` whose
//! message is `"<path>: <message>"` as always, with the two parts as `.path` (the JSON
//! path, `""` for the document as a whole) and `.message`.

use cliques_core::CoreError;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

pyo3::create_exception!(
    cliques._core,
    TemplateError,
    PyValueError,
    "An invalid template: `.path` is the JSON path of the offending value (empty for the \
     document as a whole), `.message` says what is wrong there; `str()` is \
     `<path>: <message>`."
);

/// A `TemplateError` at `path`.
pub fn template_error(path: &str, message: &str) -> PyErr {
    let text = if path.is_empty() {
        message.to_owned()
    } else {
        format!("{path}: {message}")
    };
    let err = TemplateError::new_err(text);
    Python::attach(|py| {
        let value = err.value(py);
        // Setting attributes on a fresh exception instance does not fail.
        let _ = value.setattr("path", path);
        let _ = value.setattr("message", message);
    });
    err
}

/// `result.or_template_error()?`: a core error as a `TemplateError`.
pub trait OrTemplateError<T> {
    fn or_template_error(self) -> PyResult<T>;
}

impl<T> OrTemplateError<T> for Result<T, CoreError> {
    fn or_template_error(self) -> PyResult<T> {
        self.map_err(|e| template_error(&e.path, &e.message))
    }
}
