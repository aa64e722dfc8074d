//! The exceptions: `kwire.KwireError` and one subclass per exit code of the CLI
//! (`src/exit.rs`), each with the class attributes `kind` (the code's name, e.g. `not_found`) and
//! `exit_code` (what the CLI would have exited with). The message is the CLI's one line.

use kwire::exit::{Exit, Failure};
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyType;

pyo3::create_exception!(
    kwire,
    KwireError,
    PyException,
    "A kwire operation failed: `.kind` and `.exit_code` say how, as the CLI's exit codes do."
);
pyo3::create_exception!(kwire, UsageError, KwireError, "A malformed argument or setting (exit 1).");
pyo3::create_exception!(
    kwire,
    ClusterError,
    KwireError,
    "The cluster could not be reached, or answered with an error or malformed bytes (exit 2)."
);
pyo3::create_exception!(
    kwire,
    AnomalyError,
    KwireError,
    "An offset anomaly met a `fail` policy (exit 3); `.plan` holds the plan that says which."
);
pyo3::create_exception!(
    kwire,
    NotFound,
    KwireError,
    "A named topic, partition or group does not exist (exit 4)."
);
pyo3::create_exception!(kwire, Refused, KwireError, "A write was refused; nothing was written (exit 5).");
pyo3::create_exception!(
    kwire,
    StoreError,
    KwireError,
    "The offset store is unreadable, corrupt, or did not read back what was written (exit 6)."
);
pyo3::create_exception!(
    kwire,
    PartialWrite,
    KwireError,
    "The store took some partitions and refused others (exit 7)."
);
pyo3::create_exception!(kwire, Unsupported, KwireError, "The broker is too old for what was asked (exit 8).");
pyo3::create_exception!(kwire, SecurityError, KwireError, "The connection's security failed (exit 9).");
pyo3::create_exception!(
    kwire,
    NotAuthorized,
    KwireError,
    "An ACL refused the request (exit 10); `.document` holds a partial answer's authorized rows."
);

/// Each exit code's exception class.
fn class_of(py: Python<'_>, exit: Exit) -> Bound<'_, PyType> {
    match exit {
        Exit::USAGE => py.get_type::<UsageError>(),
        Exit::ANOMALY => py.get_type::<AnomalyError>(),
        Exit::NOT_FOUND => py.get_type::<NotFound>(),
        Exit::REFUSED => py.get_type::<Refused>(),
        Exit::STORE => py.get_type::<StoreError>(),
        Exit::PARTIAL => py.get_type::<PartialWrite>(),
        Exit::UNSUPPORTED => py.get_type::<Unsupported>(),
        Exit::SECURITY => py.get_type::<SecurityError>(),
        Exit::NOT_AUTHORIZED => py.get_type::<NotAuthorized>(),
        Exit::CLUSTER => py.get_type::<ClusterError>(),
        _ => py.get_type::<KwireError>(),
    }
}

/// The exception of a failure, with the CLI's message. A `NotAuthorized` always has `.plan`
/// (`None` here) and `.document`: the partial answer's document (every authorized row, a row with an `error` for
/// each refused one), or `None` when the call showed nothing.
pub fn to_py_err(py: Python<'_>, failure: &Failure) -> PyErr {
    let err = PyErr::from_type(class_of(py, failure.exit), failure.message.clone());
    if failure.exit == Exit::NOT_AUTHORIZED {
        let document = match &failure.document {
            Some(doc) => crate::json::to_python(py, doc),
            None => Ok(py.None()),
        };
        // A document that cannot become Python's is left out; the exception still says why.
        if let Ok(document) = document {
            let _ = err.value(py).setattr("document", document);
        }
        // `Client.plan` sets the plan of the authorized partitions.
        let _ = err.value(py).setattr("plan", py.None());
    }
    err
}

/// Adds the classes to the module, each with its `kind` and `exit_code`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let base = py.get_type::<KwireError>();
    base.setattr("kind", "error")?;
    base.setattr("exit_code", 2)?;
    m.add("KwireError", base)?;
    // COMMAND is `kwire chaos run`'s, which the package does not run: it has no class of its own.
    for (exit, _) in Exit::ALL.iter().filter(|(e, _)| *e != Exit::OK && *e != Exit::COMMAND) {
        let class = class_of(py, *exit);
        class.setattr("kind", exit.kind())?;
        class.setattr("exit_code", exit.value())?;
        m.add(class.name()?, class)?;
    }
    Ok(())
}
