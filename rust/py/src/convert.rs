//! Python objects to Rust data, under the GIL: JSON-like documents to `serde_json::Value`
//! (without Python's `json` module) and label mappings to pairs.

use cliques_core::canonical::MAX_DEPTH;
use cliques_core::error::{path_text, Step};
use cliques_core::CoreError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyMapping, PyString, PyTuple};
use serde_json::{Map, Number, Value};

use crate::py_err;

/// Convert a document built from dict, list (or tuple), str, int, float, bool and None.
/// Other mappings are read through `.items()`. Errors name the path of the bad value.
pub fn to_value(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    let mut path = Vec::new();
    convert(obj, &mut path)
}

/// A label set: a mapping of str to str, or None (no labels).
pub fn to_labels(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<(String, String)>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    let mut push = |k: Bound<'_, PyAny>, v: Bound<'_, PyAny>| -> PyResult<()> {
        let (Ok(k), Ok(v)) = (k.cast::<PyString>(), v.cast::<PyString>()) else {
            return Err(py_err(CoreError::wrong_type(
                "",
                format!(
                    "labels must map str to str, got {}: {}",
                    type_name(&k),
                    type_name(&v)
                ),
            )));
        };
        out.push((k.to_str()?.to_owned(), v.to_str()?.to_owned()));
        Ok(())
    };
    if let Ok(dict) = obj.cast::<PyDict>() {
        for (k, v) in dict.iter() {
            push(k, v)?;
        }
    } else if let Ok(mapping) = obj.cast::<PyMapping>() {
        for item in mapping.items()?.iter() {
            let (k, v) = item.extract::<(Bound<'_, PyAny>, Bound<'_, PyAny>)>()?;
            push(k, v)?;
        }
    } else {
        return Err(py_err(CoreError::wrong_type(
            "",
            format!("labels must be a mapping or None, got {}", type_name(obj)),
        )));
    }
    Ok(out)
}

/// The Python type name of an object, for messages.
pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".to_string())
}

/// A document of the wrong Python type at `path`.
fn wrong_type(path: &[Step], message: String) -> PyErr {
    py_err(CoreError::wrong_type(path_text(path), message))
}

/// A document that is not a valid template at `path`.
fn invalid(path: &[Step], message: String) -> PyErr {
    py_err(CoreError::template(path_text(path), message))
}

/// Values deeper than this are not converted (they become `null`).
///
/// That bounds the recursion (a dict may even contain itself) without changing any outcome:
/// the core refuses every value kept deeper than `MAX_DEPTH` path segments, and a value at
/// `MAX_DEPTH + 3` lies inside a non-empty list or struct at `MAX_DEPTH + 1`, which is kept.
const CONVERT_DEPTH: usize = MAX_DEPTH + 2;

fn convert(obj: &Bound<'_, PyAny>, path: &mut Vec<Step>) -> PyResult<Value> {
    if path.len() > CONVERT_DEPTH {
        return Ok(Value::Null);
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(s.to_str()?.to_owned()));
    }
    if let Ok(dict) = obj.cast::<PyDict>() {
        let mut map = Map::with_capacity(dict.len());
        for (k, v) in dict.iter() {
            member(&mut map, &k, &v, path)?;
        }
        return Ok(Value::Object(map));
    }
    if let Ok(list) = obj.cast::<PyList>() {
        return elements(list.iter(), list.len(), path);
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if let Ok(i) = obj.cast::<PyInt>() {
        return int(i, path);
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        let x = f.value();
        return Number::from_f64(x)
            .map(Value::Number)
            .ok_or_else(|| invalid(path, "number out of range".to_owned()));
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        return elements(t.iter(), t.len(), path);
    }
    if let Ok(mapping) = obj.cast::<PyMapping>() {
        let items = mapping.items()?;
        let mut map = Map::with_capacity(items.len());
        for item in items.iter() {
            let (k, v) = item.extract::<(Bound<'_, PyAny>, Bound<'_, PyAny>)>()?;
            member(&mut map, &k, &v, path)?;
        }
        return Ok(Value::Object(map));
    }
    Err(wrong_type(
        path,
        format!(
            "unsupported type {}: expected dict, list, str, int, float, bool or None",
            type_name(obj)
        ),
    ))
}

fn member(
    map: &mut Map<String, Value>,
    k: &Bound<'_, PyAny>,
    v: &Bound<'_, PyAny>,
    path: &mut Vec<Step>,
) -> PyResult<()> {
    let Ok(key) = k.cast::<PyString>() else {
        return Err(wrong_type(
            path,
            format!("object keys must be str, got {}", type_name(k)),
        ));
    };
    let key = key.to_str()?.to_owned();
    path.push(Step::Key(key.clone()));
    let value = convert(v, path)?;
    path.pop();
    map.insert(key, value);
    Ok(())
}

fn elements<'py>(
    items: impl Iterator<Item = Bound<'py, PyAny>>,
    len: usize,
    path: &mut Vec<Step>,
) -> PyResult<Value> {
    let mut out = Vec::with_capacity(len);
    for (i, item) in items.enumerate() {
        path.push(Step::Index(i));
        out.push(convert(&item, path)?);
        path.pop();
    }
    Ok(Value::Array(out))
}

fn int(i: &Bound<'_, PyInt>, path: &[Step]) -> PyResult<Value> {
    if let Ok(v) = i.extract::<i64>() {
        return Ok(Value::Number(v.into()));
    }
    if let Ok(v) = i.extract::<u64>() {
        return Ok(Value::Number(v.into()));
    }
    // Beyond 64 bits: exact, through its decimal text (serde_json keeps the digits).
    let text = i.str()?.to_str()?.to_owned();
    serde_json::from_str::<Number>(&text)
        .map(Value::Number)
        .map_err(|e| invalid(path, format!("invalid integer: {e}")))
}
