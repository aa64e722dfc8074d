//! `kwire.Consumer` and `kwire.Message`: a consumer-group member with confluent-kafka's names
//! (`subscribe`, `poll`, `consume`, `commit`, `assignment`, `close`; a message's `topic()`,
//! `partition()`, `offset()`, `key()`, `value()`, `timestamp()`, `headers()`), over
//! `kwire::api::GroupConsumer`. Each call releases the GIL while it waits. What the start
//! checks find (a partition starting on an anomaly, with its numbers) and partitions lost are
//! Python `UserWarning`s; a start the out-of-range policy refuses raises `AnomalyError`.

use std::ffi::CString;
use std::sync::Mutex;
use std::time::Duration;

use kwire::api::{ConsumedRecord, GroupConsumer, Settings};
use kwire::exit::{Exit, Failure};
use pyo3::exceptions::PyUserWarning;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::client::property_value;
use crate::errors::to_py_err;

/// confluent-kafka's `TIMESTAMP_NOT_AVAILABLE`, `TIMESTAMP_CREATE_TIME`, `TIMESTAMP_LOG_APPEND_TIME`.
const TIMESTAMP_NOT_AVAILABLE: i32 = 0;
const TIMESTAMP_CREATE_TIME: i32 = 1;
const TIMESTAMP_LOG_APPEND_TIME: i32 = 2;
/// `timeout=None` or negative (wait for ever) as a bound the clock can add.
const FOR_EVER: Duration = Duration::from_secs(365 * 24 * 3600);

#[pyclass(module = "kwire", frozen)]
#[derive(Debug)]
pub struct Message {
    record: ConsumedRecord,
}

#[pymethods]
impl Message {
    fn topic(&self) -> &str {
        &self.record.topic
    }

    fn partition(&self) -> i32 {
        self.record.partition
    }

    fn offset(&self) -> i64 {
        self.record.offset
    }

    /// `None` for a null key.
    fn key<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.record.key.as_deref().map(|k| PyBytes::new(py, k))
    }

    /// `None` for a null value (a tombstone).
    fn value<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.record.value.as_deref().map(|v| PyBytes::new(py, v))
    }

    /// `(type, milliseconds since the epoch)`: type 1 create time, 2 log append time, 0 none.
    fn timestamp(&self) -> (i32, i64) {
        match self.record.timestamp {
            None => (TIMESTAMP_NOT_AVAILABLE, 0),
            Some(ms) if self.record.log_append_time => (TIMESTAMP_LOG_APPEND_TIME, ms),
            Some(ms) => (TIMESTAMP_CREATE_TIME, ms),
        }
    }

    /// `[(key, value)]` in the order written, `None` when the record has none (as confluent-kafka).
    fn headers<'py>(&self, py: Python<'py>) -> Option<Vec<(String, Option<Bound<'py, PyBytes>>)>> {
        (!self.record.headers.is_empty()).then(|| {
            self.record
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.as_deref().map(|v| PyBytes::new(py, v))))
                .collect()
        })
    }

    /// Always `None`: errors are raised, never handed out as messages.
    #[allow(clippy::unused_self)] // a method in Python, as confluent-kafka's Message.error()
    fn error(&self) -> Option<Py<PyAny>> {
        None
    }

    fn __repr__(&self) -> String {
        format!("<kwire.Message {}-{}@{}>", self.record.topic, self.record.partition, self.record.offset)
    }
}

#[pyclass(module = "kwire", frozen)]
#[derive(Debug)]
pub struct Consumer {
    /// `None` once closed.
    member: Mutex<Option<GroupConsumer>>,
}

fn closed() -> Failure {
    Failure::new(Exit::USAGE, "the consumer is closed")
}

fn seconds(timeout: Option<f64>) -> Result<Duration, Failure> {
    let Some(timeout) = timeout.filter(|t| *t >= 0.0) else { return Ok(FOR_EVER) };
    Duration::try_from_secs_f64(timeout)
        .map(|d| d.min(FOR_EVER))
        .map_err(|_| Failure::new(Exit::USAGE, format!("timeout: {timeout} is not a number of seconds")))
}

fn warn_all(py: Python<'_>, notices: Vec<String>) -> PyResult<()> {
    for notice in notices {
        let text = CString::new(notice.replace('\0', " ")).unwrap_or_default();
        PyErr::warn(py, &py.get_type::<PyUserWarning>(), &text, 1)?;
    }
    Ok(())
}

impl Consumer {
    /// Runs `work` on the open member with the GIL released.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        work: impl FnOnce(&mut GroupConsumer) -> Result<T, Failure> + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            let mut member = self.member.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            work(member.as_mut().ok_or_else(closed)?)
        })
        .map_err(|f| to_py_err(py, &f))
    }
}

#[pymethods]
impl Consumer {
    /// `config` as confluent-kafka's: `bootstrap.servers` and `group.id` required, then any
    /// client key (security.protocol, sasl.*, ssl.*, client.id) and consumer key
    /// (`auto.offset.reset` — `latest` unless given —, `group.protocol`, `group.instance.id`,
    /// `enable.auto.commit` — on unless given —, `auto.commit.interval.ms`,
    /// `session.timeout.ms`, `partition.assignment.strategy`, `isolation.level`, and
    /// `kwire.offset.out.of.range`: what a commit the log cannot honour turns into); `timeout`
    /// in seconds per request. Connects at once.
    #[new]
    #[pyo3(signature = (config, *, timeout = 30.0))]
    fn new(py: Python<'_>, config: &Bound<'_, PyDict>, timeout: f64) -> PyResult<Self> {
        let mut bootstrap = None;
        let mut properties = Vec::new();
        for (key, value) in config.iter() {
            let key = key.extract::<String>()?;
            let value = property_value(&value)?;
            if key == "bootstrap.servers" {
                bootstrap = Some(value);
            } else {
                properties.push((key, value));
            }
        }
        let Some(bootstrap) = bootstrap else {
            return Err(to_py_err(py, &Failure::new(Exit::USAGE, "bootstrap.servers is required")));
        };
        let timeout = seconds(Some(timeout)).map_err(|f| to_py_err(py, &f))?;
        let settings = Settings {
            bootstrap,
            properties,
            timeout,
            zookeeper: None,
            spark_sink: None,
            spark_sink_compact_interval: 10,
            spark_sink_retention: None,
        };
        let (member, warnings) =
            py.detach(|| GroupConsumer::open(settings)).map_err(|f| to_py_err(py, &f))?;
        warn_all(py, warnings)?;
        Ok(Self { member: Mutex::new(Some(member)) })
    }

    /// Joins the group reading `topics`; one name starting with `^` is a regular expression.
    #[allow(clippy::needless_pass_by_value)] // PyO3 extracts a Python list as an owned Vec
    fn subscribe(&self, py: Python<'_>, topics: Vec<String>) -> PyResult<()> {
        self.with(py, |m| m.subscribe(&topics))
    }

    /// The next message, waiting up to `timeout` seconds (`None` or negative, as
    /// confluent-kafka's `-1`: for ever); `None` if none came.
    #[pyo3(signature = (timeout = None))]
    fn poll(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<Message>> {
        let timeout = seconds(timeout).map_err(|f| to_py_err(py, &f))?;
        let (record, notices) = self.with(py, |m| m.poll(timeout))?;
        warn_all(py, notices)?;
        Ok(record.map(|record| Message { record }))
    }

    /// Up to `num_messages` messages, waiting up to `timeout` seconds for the first.
    #[pyo3(signature = (num_messages = 1, timeout = None))]
    fn consume(&self, py: Python<'_>, num_messages: usize, timeout: Option<f64>) -> PyResult<Vec<Message>> {
        let timeout = seconds(timeout).map_err(|f| to_py_err(py, &f))?;
        let (records, notices) = self.with(py, |m| m.consume(num_messages.max(1), timeout))?;
        warn_all(py, notices)?;
        Ok(records.into_iter().map(|record| Message { record }).collect())
    }

    /// Commits, waiting for the coordinator: with no `offsets`, the position after the last
    /// message returned of every partition still owned; else `offsets`, a list of
    /// `(topic, partition, next offset)`. A partition not owned raises `UsageError` before
    /// anything is sent; a refused commit raises `ClusterError`.
    #[pyo3(signature = (offsets = None))]
    #[allow(clippy::needless_pass_by_value)]
    fn commit(&self, py: Python<'_>, offsets: Option<Vec<(String, i32, i64)>>) -> PyResult<()> {
        self.with(py, |m| m.commit(offsets.as_deref()))
    }

    /// `[(topic, partition)]` the member owns now.
    fn assignment(&self, py: Python<'_>) -> PyResult<Vec<(String, i32)>> {
        self.with(py, |m| Ok(m.assignment()))
    }

    /// Commits what was returned (with `enable.auto.commit`) and leaves the group. Closing
    /// again does nothing; any other call after it raises `UsageError`.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| {
            let mut member = self.member.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            match member.take() {
                Some(mut m) => m.close(),
                None => Ok(()),
            }
        })
        .map_err(|f| to_py_err(py, &f))
    }
}
