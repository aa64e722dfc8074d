//! [`ProducerConfig`]: how a [`Producer`](crate::Producer) batches, bounds and sends, and the
//! check of a configuration that cannot work. Below the producer's other files, which all read it.

use std::time::Duration;

use crate::error::ClientError;
use crate::producer::produce::Acks;
use kafka_wire::protocol::records::Compression;

/// How a [`Producer`](crate::Producer) batches, bounds and sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerConfig {
    /// Replicas that must have a batch before the leader answers; [`Acks::All`] by default, and
    /// required by idempotence.
    pub acks: Acks,
    /// The codec for each batch (it must be compiled in); none by default.
    pub compression: Compression,
    /// How long a batch that is not full waits for more records (5 ms, Java's default since
    /// Kafka 4.0).
    pub linger: Duration,
    /// Bytes of records (key, value, headers and a 21-byte overhead each) after which a batch
    /// is closed and sent; 16 KiB by default. A larger record gets a batch of its own.
    pub batch_size: usize,
    /// Bytes of memory the producer's batches may hold, buffered or in flight (32 MiB by
    /// default); a [`send`](crate::Producer::send) that would pass it waits until batches
    /// complete. Counted as allocated, not estimated: each batch's buffer as it grows (from
    /// 16 KiB, doubling up to `batch_size`), and with compression room for the compressed
    /// copy made while the batch is sealed (up to the codec's worst case, given back once the
    /// batch is sealed). The compressor's working state is set aside in it too, once: batches
    /// are compressed one at a time, each taking at most
    /// [`compressor_memory`](kafka_wire::protocol::records::compression::compressor_memory)
    /// (400 KiB gzip, 40 KiB snappy, 200 KiB lz4, 1.5 MiB zstd). So it must hold that and one
    /// full batch with its room; [`Producer::new`](crate::Producer::new) refuses a smaller one.
    /// Not counted: the request being written to a connection.
    pub buffer_memory: usize,
    /// Produce requests in flight per broker (5 by default, the most idempotence allows).
    pub max_in_flight: usize,
    /// Bytes of batches one produce request carries (Java's `max.request.size`, 1 MiB): a
    /// request to a broker takes batches while they fit, and always at least one. It also
    /// bounds a record — a larger one fails at once — and keeps requests under the brokers'
    /// `socket.request.max.bytes`, which closes the connection on a larger one.
    pub max_request_size: usize,
    /// Write each batch exactly once and in order per partition despite retries (KIP-98); on
    /// by default. Needs `acks` = all and a broker from Kafka 0.11.
    pub idempotence: bool,
    /// The longest a record may take from `send` to its result, retries included (120 s);
    /// past it the record fails with [`ClientError::DeadlineExceeded`].
    pub delivery_timeout: Duration,
    /// How long the first send to a topic waits for the topic to appear in the brokers'
    /// metadata before it fails with [`ClientError::UnknownTopic`] (librdkafka's
    /// `topic.metadata.propagation.max.ms`, 30 s): a topic created a moment ago is not yet
    /// known to every broker.
    pub topic_propagation: Duration,
    /// How long a Produce request waits for its answer before its batches are retried (on a
    /// new connection, within `delivery_timeout`), and the `timeout_ms` it asks the broker to
    /// wait for the replicas. `None` (the default): the client's `request_timeout`. It must
    /// leave room for a retry inside `delivery_timeout`, as Java requires
    /// `delivery.timeout.ms ≥ linger.ms + request.timeout.ms`: an answer lost on the way (a
    /// proxy dropping it, a connection that stalls) is otherwise never retried.
    pub request_timeout: Option<Duration>,
    /// Kafka's `transactional.id`: makes the producer transactional (see
    /// [`init_transactions`](crate::Producer::init_transactions)); records can then only be sent
    /// inside a transaction. Needs idempotence. `None` by default.
    pub transactional_id: Option<String>,
    /// The longest a transaction may stay open before its coordinator aborts it (Kafka's
    /// `transaction.timeout.ms`, 60 s), and the deadline of each transactional call's retries.
    pub transaction_timeout: Duration,
}

impl Default for ProducerConfig {
    fn default() -> Self {
        Self {
            acks: Acks::All,
            compression: Compression::None,
            linger: Duration::from_millis(5),
            batch_size: 16 * 1024,
            buffer_memory: 32 * 1024 * 1024,
            max_in_flight: 5,
            max_request_size: 1024 * 1024,
            idempotence: true,
            delivery_timeout: Duration::from_secs(120),
            topic_propagation: Duration::from_secs(30),
            request_timeout: None,
            transactional_id: None,
            transaction_timeout: Duration::from_secs(60),
        }
    }
}

impl ProducerConfig {
    pub(super) fn check(&self) -> Result<(), ClientError> {
        let bad = |message: String| Err(ClientError::InvalidArgument { message });
        if self.idempotence && self.acks != Acks::All {
            return bad("an idempotent producer needs acks=all (set idempotence=false for fewer acks)".into());
        }
        if self.idempotence && !(1..=5).contains(&self.max_in_flight) {
            return bad(format!(
                "an idempotent producer allows 1 to 5 requests in flight per broker, not {}",
                self.max_in_flight
            ));
        }
        if self.max_in_flight == 0
            || self.batch_size == 0
            || self.buffer_memory == 0
            || self.max_request_size == 0
        {
            return bad(
                "max_in_flight, batch_size, buffer_memory and max_request_size must be positive".into()
            );
        }
        if let Some(id) = &self.transactional_id {
            if id.is_empty() {
                return bad("transactional_id must not be empty".into());
            }
            if !self.idempotence {
                return bad("a transactional producer is idempotent (set idempotence=true)".into());
            }
            if self.transaction_timeout.is_zero() {
                return bad("transaction_timeout must be positive".into());
            }
        }
        if !self.compression.is_available() {
            return bad(format!("{} is not compiled into this build", self.compression.name()));
        }
        Ok(())
    }
}
