//! Python objects as an [`Input`] of the core's walker: `template_hash(dict)` and
//! `canonical_json(dict)` walk the dict, lists, strs, ints, floats, bools and Nones
//! themselves, with no `serde_json::Value` in between.
//!
//! Anything else (another mapping, a non-str key, a str that is not valid UTF-8, an int
//! beyond 64 bits, a value the walk refuses) makes the walk give up, and the caller takes
//! the conversion path (`convert`), which raises exactly the error it always raised. The
//! input never fails itself: it marks the walk as given up and answers something harmless.
//!
//! Safety: values are borrowed pointers into the document, which the caller keeps alive;
//! the GIL is held and no Python code runs during the walk (no `__str__`, `__eq__` or
//! `items()` is called), so nothing is freed or changed under it.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::ptr::addr_of_mut;

use cliques_core::canonical::{self, Input, Number, Scratch, Shape, Sink};
use cliques_core::Kind;
use pyo3::ffi;
use pyo3::prelude::*;

/// A borrowed Python object of the document; a member name also carries its UTF-8 text
/// (found once, when the members are listed).
#[derive(Clone, Copy, Debug)]
pub struct Obj {
    o: *mut ffi::PyObject,
    text: *const u8,
    len: usize,
}

impl Obj {
    fn new(o: *mut ffi::PyObject) -> Self {
        Obj {
            o,
            text: std::ptr::null(),
            len: 0,
        }
    }
}

/// The document's objects, read under the GIL for `'t`.
#[derive(Clone, Copy)]
struct PyObjects<'t> {
    gave_up: &'t Cell<bool>,
    _doc: PhantomData<&'t ()>,
}

impl PyObjects<'_> {
    #[cold]
    fn give_up(&self) {
        // SAFETY: the GIL is held.
        unsafe { ffi::PyErr_Clear() };
        self.gave_up.set(true);
    }
}

/// The UTF-8 text of a str (`None`: not a str, or not encodable).
///
/// SAFETY: `o` is alive for `'t` and the GIL is held.
unsafe fn utf8<'t>(o: *mut ffi::PyObject) -> Option<&'t str> {
    if ffi::Py_TYPE(o) != addr_of_mut!(ffi::PyUnicode_Type) && ffi::PyUnicode_Check(o) == 0 {
        return None;
    }
    let mut size: ffi::Py_ssize_t = 0;
    let data = ffi::PyUnicode_AsUTF8AndSize(o, &mut size);
    if data.is_null() {
        return None;
    }
    let bytes = std::slice::from_raw_parts(data.cast::<u8>(), size as usize);
    // CPython's UTF-8 encoding of a str is valid UTF-8.
    Some(std::str::from_utf8_unchecked(bytes))
}

impl<'t> Input<'t> for PyObjects<'t> {
    type Node = Obj;

    #[inline]
    fn shape(&self, n: Obj) -> Shape {
        let o = n.o;
        // SAFETY: see the module doc.
        unsafe {
            let t = ffi::Py_TYPE(o);
            if t == addr_of_mut!(ffi::PyUnicode_Type) {
                return Shape::Str;
            }
            if t == addr_of_mut!(ffi::PyDict_Type) {
                return Shape::Object(ffi::PyDict_Size(o) as usize);
            }
            if t == addr_of_mut!(ffi::PyList_Type) {
                return Shape::List(ffi::PyList_Size(o) as usize);
            }
            if o == ffi::Py_None() {
                return Shape::Null;
            }
            if o == ffi::Py_True() {
                return Shape::Bool(true);
            }
            if o == ffi::Py_False() {
                return Shape::Bool(false);
            }
            if t == addr_of_mut!(ffi::PyLong_Type) || t == addr_of_mut!(ffi::PyFloat_Type) {
                return Shape::Num;
            }
            // Subclasses, and tuples, in the order `convert` tries them.
            if ffi::PyUnicode_Check(o) != 0 {
                return Shape::Str;
            }
            if ffi::PyDict_Check(o) != 0 {
                return Shape::Object(ffi::PyDict_Size(o) as usize);
            }
            if ffi::PyList_Check(o) != 0 {
                return Shape::List(ffi::PyList_Size(o) as usize);
            }
            if ffi::PyLong_Check(o) != 0 || ffi::PyFloat_Check(o) != 0 {
                return Shape::Num;
            }
            if ffi::PyTuple_Check(o) != 0 {
                return Shape::List(ffi::PyTuple_Size(o) as usize);
            }
        }
        self.give_up();
        Shape::Null
    }

    #[inline]
    fn text(&self, n: Obj) -> &'t str {
        if !n.text.is_null() {
            // SAFETY: a member name's text, checked UTF-8 when the members were listed.
            return unsafe {
                std::str::from_utf8_unchecked(std::slice::from_raw_parts(n.text, n.len))
            };
        }
        // SAFETY: see the module doc.
        match unsafe { utf8(n.o) } {
            Some(s) => s,
            None => {
                self.give_up();
                ""
            }
        }
    }

    fn number(&self, n: Obj) -> Number<'t> {
        let o = n.o;
        // SAFETY: see the module doc.
        unsafe {
            if ffi::PyFloat_Check(o) != 0 {
                return Number::Float(ffi::PyFloat_AsDouble(o));
            }
            let mut overflow = 0;
            let v = ffi::PyLong_AsLongLongAndOverflow(o, &mut overflow);
            if overflow == 0 && (v != -1 || ffi::PyErr_Occurred().is_null()) {
                return Number::Int(v);
            }
            if overflow > 0 {
                ffi::PyErr_Clear();
                let u = ffi::PyLong_AsUnsignedLongLong(o);
                if ffi::PyErr_Occurred().is_null() {
                    return Number::Literal(Cow::Owned(u.to_string()));
                }
            }
        }
        // Beyond 64 bits: `convert` writes it through `str()`, which may run Python code.
        self.give_up();
        Number::Int(0)
    }

    fn members(&self, n: Obj) -> impl Iterator<Item = (Obj, Obj)> + 't {
        let this = *self;
        let mut pos: ffi::Py_ssize_t = 0;
        std::iter::from_fn(move || {
            let (mut k, mut v) = (std::ptr::null_mut(), std::ptr::null_mut());
            // SAFETY: `n` is a dict (the walker asks only objects for members).
            if unsafe { ffi::PyDict_Next(n.o, &mut pos, &mut k, &mut v) } == 0 {
                return None;
            }
            // Every key is checked here, even those of members the walk leaves out.
            let mut key = Obj::new(k);
            match unsafe { utf8(k) } {
                Some(text) => (key.text, key.len) = (text.as_ptr(), text.len()),
                None => this.give_up(),
            }
            Some((key, Obj::new(v)))
        })
    }

    fn elements(&self, n: Obj) -> impl Iterator<Item = Obj> + 't {
        let o = n.o;
        // SAFETY: the walker asks only lists (list or tuple objects) for elements.
        let (list, len) = unsafe {
            if ffi::PyList_Check(o) != 0 {
                (true, ffi::PyList_Size(o))
            } else {
                (false, ffi::PyTuple_Size(o))
            }
        };
        (0..len).map(move |i| {
            // SAFETY: `i` is in bounds; the items are borrowed.
            Obj::new(unsafe {
                if list {
                    ffi::PyList_GetItem(o, i)
                } else {
                    ffi::PyTuple_GetItem(o, i)
                }
            })
        })
    }
}

thread_local! {
    static SCRATCH: RefCell<Scratch<Obj>> = RefCell::default();
}

/// Walk a document given as Python objects into `out`; `None` when the walk gives up or
/// finds an error (the caller then converts, and the core reports the exact error).
pub fn walk<S: Sink>(doc: &Bound<'_, PyAny>, kind: Kind, out: S) -> Option<S> {
    let gave_up = Cell::new(false);
    let input = PyObjects {
        gave_up: &gave_up,
        _doc: PhantomData,
    };
    let root = Obj::new(doc.as_ptr());
    let run = |scratch: &mut Scratch<Obj>| canonical::walk(input, root, kind, scratch, out);
    let result = SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut scratch) => run(&mut scratch),
        Err(_) => run(&mut Scratch::default()),
    });
    match result {
        Ok(out) if !gave_up.get() => Some(out),
        _ => None,
    }
}
