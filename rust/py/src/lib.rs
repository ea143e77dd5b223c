//! The `cliques._core` extension module: thin pyo3 wrappers over `cliques_core`.
use pyo3::prelude::*;

/// FNV-1a 64 of `data`.
#[pyfunction]
fn fnv1a_64(data: &[u8]) -> u64 {
    cliques_core::fnv1a_64(data)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fnv1a_64, m)?)?;
    Ok(())
}
