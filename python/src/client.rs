//! `kwire.Client` and `kwire.decode`: the CLI's commands as methods. Each network call releases
//! the GIL while it runs (other Python threads go on); every Client has its own runtime and
//! connection, made by its first call.

use std::ffi::CString;
use std::sync::Arc;
use std::time::Duration;

use kwire::api::{PlanOptions, Session, Settings};
use kwire::exit::Failure;
use pyo3::exceptions::PyUserWarning;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict};

use crate::errors::to_py_err;
use crate::json::to_python;
use crate::plan::Plan;

#[pyclass(module = "kwire", frozen)]
#[derive(Debug)]
pub struct Client {
    session: Arc<Session>,
}

/// A network call with the GIL released, its document or failure made Python's.
fn call<T: Send>(py: Python<'_>, work: impl FnOnce() -> Result<T, Failure> + Send) -> PyResult<T> {
    py.detach(work).map_err(|f| to_py_err(py, &f))
}

/// A config value as the properties file would spell it: `True` is `true`.
pub(crate) fn property_value(value: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(b) = value.cast::<PyBool>() {
        return Ok(if b.is_true() { "true" } else { "false" }.to_owned());
    }
    if let Ok(s) = value.extract::<String>() {
        return Ok(s);
    }
    Ok(value.str()?.to_string())
}

#[pymethods]
impl Client {
    /// `bootstrap` as `--bootstrap-server`; `config` the Kafka client properties `-X` and
    /// `--command-config` take (security.protocol, sasl.*, ssl.*, ...); `timeout` in seconds per
    /// request, as `--timeout`; `zookeeper` for the `zk` store; `spark_sink`,
    /// `spark_sink_compact_interval` and `spark_sink_retention` as `--spark-sink`,
    /// `--spark-sink-compact-interval` and `--spark-sink-retention` (a `spark:` store's commits
    /// also write that file sink's log entry; the retention is Spark's time string, `"7d"`).
    #[new]
    #[pyo3(signature = (bootstrap, config = None, *, timeout = 30.0, zookeeper = None, spark_sink = None, spark_sink_compact_interval = 10, spark_sink_retention = None))]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments, one per CLI option
    fn new(
        py: Python<'_>,
        bootstrap: String,
        config: Option<&Bound<'_, PyDict>>,
        timeout: f64,
        zookeeper: Option<String>,
        spark_sink: Option<std::path::PathBuf>,
        spark_sink_compact_interval: u32,
        spark_sink_retention: Option<String>,
    ) -> PyResult<Self> {
        if spark_sink_compact_interval == 0 {
            return Err(to_py_err(
                py,
                &Failure::new(kwire::exit::Exit::USAGE, "spark_sink_compact_interval: at least 1"),
            ));
        }
        let spark_sink_retention = spark_sink_retention
            .map(|r| r.parse::<kwire::api::SparkSinkRetention>())
            .transpose()
            .map_err(|e| {
                to_py_err(py, &Failure::new(kwire::exit::Exit::USAGE, format!("spark_sink_retention: {e}")))
            })?;
        let mut properties = Vec::new();
        for (key, value) in config.iter().flat_map(|c| c.iter()) {
            properties.push((key.extract::<String>()?, property_value(&value)?));
        }
        let timeout = Duration::try_from_secs_f64(timeout).map_err(|_| {
            to_py_err(
                py,
                &Failure::new(
                    kwire::exit::Exit::USAGE,
                    format!("timeout: {timeout} is not a number of seconds"),
                ),
            )
        })?;
        let (session, warnings) = Session::open(Settings {
            bootstrap,
            properties,
            timeout,
            zookeeper,
            spark_sink,
            spark_sink_compact_interval,
            spark_sink_retention,
        })
        .map_err(|f| to_py_err(py, &f))?;
        for warning in warnings {
            let text = CString::new(warning.replace('\0', " ")).unwrap_or_default();
            PyErr::warn(py, &py.get_type::<PyUserWarning>(), &text, 1)?;
        }
        Ok(Self { session: Arc::new(session) })
    }

    /// `kwire metadata [TOPIC...] --format json`: brokers, controller, topics and partitions.
    #[pyo3(signature = (topics = None))]
    fn metadata(&self, py: Python<'_>, topics: Option<Vec<String>>) -> PyResult<Py<PyAny>> {
        let topics = topics.unwrap_or_default();
        let doc = call(py, || self.session.metadata(&topics))?;
        to_python(py, &doc)
    }

    /// `kwire offsets TOPIC... --at AT --format json`: per partition the log range and the
    /// offset at `at` (earliest, latest, max-timestamp, epoch millis or RFC 3339).
    #[pyo3(signature = (topics, at = "latest"))]
    #[allow(clippy::needless_pass_by_value)] // PyO3 extracts a Python list as an owned Vec
    fn offsets(&self, py: Python<'_>, topics: Vec<String>, at: &str) -> PyResult<Py<PyAny>> {
        let doc = call(py, || self.session.offsets(&topics, at))?;
        to_python(py, &doc)
    }

    /// `kwire group describe GROUP --store STORE --format json`: state, members, and per
    /// partition the stored offset against the log (lag, consumable, lost).
    #[pyo3(signature = (group, store = "kafka", topics = None))]
    fn describe_group(
        &self,
        py: Python<'_>,
        group: &str,
        store: &str,
        topics: Option<Vec<String>>,
    ) -> PyResult<Py<PyAny>> {
        let topics = topics.unwrap_or_default();
        let doc = call(py, || self.session.describe_group(group, store, &topics))?;
        to_python(py, &doc)
    }

    /// `kwire plan`: the group's next batch. Raises `AnomalyError` (its `.plan` says which
    /// partitions) when an anomaly met a `fail` policy, `NotAuthorized` (its `.plan` has a row
    /// with an `error` for each refused topic or partition) when an ACL refused some.
    #[pyo3(signature = (group, topics, store = "kafka", start = "earliest", on_out_of_range = "fail", max_per_partition = None, max_total = None))]
    #[allow(clippy::too_many_arguments)]
    fn plan(
        &self,
        py: Python<'_>,
        group: String,
        topics: Vec<String>,
        store: &str,
        start: &str,
        on_out_of_range: &str,
        max_per_partition: Option<u64>,
        max_total: Option<u64>,
    ) -> PyResult<Plan> {
        let options = PlanOptions {
            group,
            topics,
            store: store.to_owned(),
            start: start.to_owned(),
            on_out_of_range: on_out_of_range.to_owned(),
            max_per_partition,
            max_total,
        };
        let planned = call(py, || self.session.plan(&options))?;
        let failure = planned.failure.as_ref().map(|f| to_py_err(py, f));
        let plan = Plan::new(py, Arc::clone(&self.session), options.group, options.store, planned)?;
        match failure {
            None => Ok(plan),
            Some(err) => {
                err.value(py).setattr("plan", Py::new(py, plan)?)?;
                Err(err)
            }
        }
    }

    /// `kwire commit --group GROUP --store STORE TOPIC:PARTITION=OFFSET... --format json`:
    /// `offsets` maps (topic, partition) to the offset to store.
    #[pyo3(signature = (group, offsets, store = "kafka", force = false))]
    fn commit(
        &self,
        py: Python<'_>,
        group: &str,
        offsets: std::collections::BTreeMap<(String, i32), i64>,
        store: &str,
        force: bool,
    ) -> PyResult<Py<PyAny>> {
        let offsets: Vec<(String, i32, i64)> = offsets.into_iter().map(|((t, p), o)| (t, p, o)).collect();
        let doc = call(py, || self.session.commit(group, store, &offsets, force))?;
        to_python(py, &doc)
    }
}

/// `kwire decode`: one request (or response, `request=False`) body of `api` at `version` as
/// JSON with Kafka's field names; `frame=True` for a whole size-prefixed frame with its header.
#[pyfunction]
#[pyo3(signature = (api, version, data, request = true, frame = false))]
pub fn decode(
    py: Python<'_>,
    api: &str,
    version: i16,
    data: &[u8],
    request: bool,
    frame: bool,
) -> PyResult<Py<PyAny>> {
    let doc = kwire::api::decode(api, version, data, request, frame).map_err(|f| to_py_err(py, &f))?;
    to_python(py, &doc)
}
