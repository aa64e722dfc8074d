//! `kwire._kwire`, the extension module of the Python package `kwire` (re-exported by
//! `kwire/__init__.py`): [`client::Client`] runs the CLI's commands through `kwire::api` and
//! returns their `--format json` documents as Python dicts; [`consumer::Consumer`] is a
//! consumer-group member with confluent-kafka's names; failures raise the exceptions of
//! [`errors`], one per exit code.

mod client;
mod consumer;
mod errors;
mod json;
mod plan;

use pyo3::prelude::*;

#[pymodule]
fn _kwire(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<client::Client>()?;
    m.add_class::<consumer::Consumer>()?;
    m.add_class::<consumer::Message>()?;
    m.add_class::<plan::Plan>()?;
    m.add_function(wrap_pyfunction!(client::decode, m)?)?;
    errors::register(m)?;
    Ok(())
}
