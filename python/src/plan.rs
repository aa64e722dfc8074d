//! `kwire.Plan`: one `plan` call's result. `.document` is `kwire plan --format json`'s document;
//! the Spark options come from the same plan (`--format spark`), and `.commit()` stores `until`
//! of every planned partition in one write.

use std::sync::Arc;

use kwire::api::{Planned, Session};
use kwire::exit::Failure;
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::errors::to_py_err;
use crate::json::to_python;

#[pyclass(module = "kwire", frozen)]
#[derive(Debug)]
pub struct Plan {
    session: Arc<Session>,
    group: String,
    store: String,
    /// `kwire plan --format json`'s document.
    #[pyo3(get)]
    document: Py<PyAny>,
    /// `--format spark`'s document, `None` when an anomaly or an ACL stopped the plan.
    spark: Option<Py<PyAny>>,
    ending: Vec<(String, i32, i64)>,
    failure: Option<Failure>,
}

impl Plan {
    pub fn new(
        py: Python<'_>,
        session: Arc<Session>,
        group: String,
        store: String,
        planned: Planned,
    ) -> PyResult<Self> {
        Ok(Self {
            session,
            group,
            store,
            document: to_python(py, &planned.document)?,
            spark: planned.spark.as_ref().map(|s| to_python(py, s)).transpose()?,
            ending: planned.ending,
            failure: planned.failure,
        })
    }

    /// The document's partitions that pass `keep`, as the document holds them.
    fn partitions<'py>(
        &self,
        py: Python<'py>,
        keep: impl Fn(&Bound<'py, PyAny>) -> PyResult<bool>,
    ) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for entry in self.document.bind(py).get_item("partitions")?.try_iter()? {
            let entry = entry?;
            if keep(&entry)? {
                out.append(entry)?;
            }
        }
        Ok(out)
    }

    /// A key of the Spark document, or the failure (anomaly, ACL) that stopped the plan.
    fn spark_item(&self, py: Python<'_>, key: &str) -> PyResult<Py<PyAny>> {
        match (&self.spark, &self.failure) {
            (Some(spark), _) => Ok(spark.bind(py).get_item(key)?.unbind()),
            (None, Some(failure)) => Err(to_py_err(py, failure)),
            (None, None) => {
                Err(to_py_err(py, &Failure::new(kwire::exit::Exit::ANOMALY, "the plan has no Spark offsets")))
            }
        }
    }
}

#[pymethods]
impl Plan {
    /// The group the plan is for.
    #[getter]
    fn group(&self) -> &str {
        &self.group
    }

    /// The store the plan read (and `.commit()` writes).
    #[getter]
    fn store(&self) -> &str {
        &self.store
    }

    /// Records in the batch: the sum of every range.
    #[getter]
    fn records(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(self.document.bind(py).get_item("records")?.unbind())
    }

    /// The partitions with a range to read (`from`, `until`, `records`, ...), as the document
    /// lists them.
    #[getter]
    fn ranges<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.partitions(py, |e| Ok(!e.get_item("from")?.is_none()))
    }

    /// The partitions with an anomaly (`anomaly` names it with its numbers; `action` says what
    /// the policy did).
    #[getter]
    fn anomalies<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.partitions(py, |e| Ok(!e.get_item("anomaly")?.is_none()))
    }

    /// Whether an anomaly met a `fail` policy or an ACL refused some partitions (then nothing
    /// may be read or committed).
    #[getter]
    fn failed(&self) -> bool {
        self.failure.is_some()
    }

    /// spark.read's `assign` option: `{topic: [partition, ...]}` (pass it as `json.dumps`).
    fn spark_assign(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.spark_item(py, "assign")
    }

    /// spark.read's `startingOffsets`: `{topic: {"partition": from}}` (pass it as `json.dumps`).
    fn spark_starting_offsets(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.spark_item(py, "startingOffsets")
    }

    /// spark.read's `endingOffsets`: `{topic: {"partition": until}}` (pass it as `json.dumps`).
    fn spark_ending_offsets(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.spark_item(py, "endingOffsets")
    }

    /// Stores `until` of every planned partition in one write (`kwire commit`), after the
    /// batch's output is durable; returns `kwire commit --format json`'s document.
    #[pyo3(signature = (force = false))]
    fn commit(&self, py: Python<'_>, force: bool) -> PyResult<Py<PyAny>> {
        if let Some(failure) = &self.failure {
            return Err(to_py_err(py, failure));
        }
        let doc = py
            .detach(|| self.session.commit(&self.group, &self.store, &self.ending, force))
            .map_err(|f| to_py_err(py, &f))?;
        to_python(py, &doc)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Plan(group={:?}, store={:?}, records={}, ranges={}, anomalies={})",
            self.group,
            self.store,
            self.records(py)?,
            self.ranges(py)?.len(),
            self.anomalies(py)?.len()
        ))
    }
}
