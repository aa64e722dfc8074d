//! A `serde_json::Value` as the Python value `json.loads` would make of its text: dict (keys in
//! the document's order), list, str, int, float, bool, None.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use pyo3::IntoPyObjectExt as _;
use serde_json::Value;

pub fn to_python(py: Python<'_>, value: &Value) -> PyResult<Py<PyAny>> {
    match value {
        Value::Null => Ok(py.None()),
        Value::Bool(b) => b.into_py_any(py),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_py_any(py),
            (None, Some(u)) => u.into_py_any(py),
            (None, None) => n.as_f64().unwrap_or(f64::NAN).into_py_any(py),
        },
        Value::String(s) => s.into_py_any(py),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_python(py, item)?)?;
            }
            Ok(list.into_any().unbind())
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (key, item) in map {
                dict.set_item(key, to_python(py, item)?)?;
            }
            Ok(dict.into_any().unbind())
        }
    }
}
