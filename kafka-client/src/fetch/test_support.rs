//! What the tests of the sans-IO fetch files share: record batches and Fetch responses built
//! briefly (data, transaction markers, highly compressible batches), a range read from offset
//! `from` (inclusive) to `until` (exclusive), and rounds of one batch fed to a range.

use bytes::Bytes;

use kafka_vocab::{Isolation, TopicPartition};
use kafka_wire::protocol::messages::fetch::AbortedTransaction;
use kafka_wire::protocol::messages::FetchPartitionResponse;
use kafka_wire::protocol::records::{
    BatchAttributes, Compression, ControlRecordKey, ControlRecordType, DecodeOptions, EndTransactionMarker,
    Record, RecordBatch,
};
use kafka_wire::protocol::{DecodeError, TaggedFields};

use crate::fetch::progress::Progress;
use crate::fetch::unpack::{apply_response, Unpacked};
#[cfg(feature = "lz4")]
use crate::{
    error::{BrokerRef, ClientError},
    fetch::answer::{apply_answer, LeaderData},
    fetch::ranges::FetchOptions,
};

/// A data batch of `n` records from `base`, each value `v<offset>`, timestamps from 1,000.
pub(crate) fn data(base: i64, n: i32, producer_id: i64, transactional: bool) -> RecordBatch {
    let records = (0..n)
        .map(|i| Record {
            offset_delta: i,
            timestamp_delta: i64::from(i),
            ..Record::new(None, Some(Bytes::from(format!("v{}", base + i64::from(i)))))
        })
        .collect();
    let mut b = RecordBatch::new(base, 1_000, Compression::None, records);
    b.producer_id = producer_id;
    b.producer_epoch = 0;
    b.attributes.is_transactional = transactional;
    b
}

/// A transaction marker (a control batch) of `producer_id` at `offset`.
pub(crate) fn marker(offset: i64, producer_id: i64, kind: ControlRecordType) -> RecordBatch {
    let key = ControlRecordKey { version: 0, kind }.to_bytes();
    let value = EndTransactionMarker { version: 0, coordinator_epoch: 0 }.to_bytes();
    let mut b = RecordBatch::new(offset, 1_000, Compression::None, vec![Record::new(Some(key), Some(value))]);
    b.producer_id = producer_id;
    b.producer_epoch = 0;
    b.attributes = BatchAttributes { is_control: true, is_transactional: true, ..b.attributes };
    b
}

/// A partition's response holding `batches`, the aborted transactions `(producer_id,
/// first_offset)`, and `high_watermark` as both the high watermark and the last stable offset.
pub(crate) fn response(
    batches: &[RecordBatch],
    aborted: &[(i64, i64)],
    high_watermark: i64,
) -> FetchPartitionResponse {
    let mut records = Vec::new();
    for b in batches {
        b.encode(&mut records).unwrap();
    }
    FetchPartitionResponse {
        high_watermark,
        last_stable_offset: Some(high_watermark),
        log_start_offset: Some(0),
        aborted_transactions: Some(
            aborted
                .iter()
                .map(|&(producer_id, first_offset)| AbortedTransaction {
                    producer_id,
                    first_offset,
                    tagged_fields: TaggedFields::default(),
                })
                .collect(),
        ),
        records: Some(Bytes::from(records)),
        ..FetchPartitionResponse::default()
    }
}

/// `response` applied to `p` with the default decode limits and no decompressed budget.
pub(crate) fn read_into(
    p: &mut Progress,
    response: &FetchPartitionResponse,
    isolation: Isolation,
) -> Result<Option<usize>, DecodeError> {
    apply_response(p, response, isolation, &DecodeOptions::default(), &mut Unpacked::unbounded())
        .map_err(|e| e.source)
}

/// The partition the tests read.
pub(crate) fn tp() -> TopicPartition {
    TopicPartition::new("t", 0)
}

/// A range `[from, until)`, asking 1 MiB per round (the default
/// `max.partition.fetch.bytes`).
pub(crate) fn progress(from: i64, until: i64) -> Progress {
    Progress::new(from, until, 1 << 20)
}

/// The offsets of the records `p` took so far.
pub(crate) fn offsets(p: &Progress) -> Vec<i64> {
    p.fetched.records.iter().map(|r| r.offset).collect()
}

/// 0–2 plain; 3–4 producer 7, aborted at 5; 6–7 producer 8, committed at 8; 9 plain;
/// 10–11 producer 7 again, committed at 12.
pub(crate) fn mixed_log() -> FetchPartitionResponse {
    response(
        &[
            data(0, 3, -1, false),
            data(3, 2, 7, true),
            marker(5, 7, ControlRecordType::Abort),
            data(6, 2, 8, true),
            marker(8, 8, ControlRecordType::Commit),
            data(9, 1, -1, false),
            data(10, 2, 7, true),
            marker(12, 7, ControlRecordType::Commit),
        ],
        &[(7, 3)],
        13,
    )
}

/// An lz4 batch of `n` records of 10,000 `x` each: ≈ 100 bytes on the wire per 10 KB.
#[cfg(feature = "lz4")]
pub(crate) fn compressible(base: i64, n: i32) -> RecordBatch {
    let mut b = data(base, n, -1, false);
    for r in &mut b.records {
        r.value = Some(Bytes::from(vec![b'x'; 10_000]));
    }
    b.attributes.compression = Compression::Lz4;
    b
}

/// One partition's answer in a leader's response.
#[cfg(feature = "lz4")]
pub(crate) fn answer(response: FetchPartitionResponse) -> LeaderData {
    LeaderData {
        broker: BrokerRef { node_id: Some(1), addr: "b1".to_owned() },
        version: 12,
        response: Some(response),
        from_replica: false,
    }
}

/// Rounds of `batch` (the broker sends it whole each time the position is inside it) until
/// the range is read or an error: the offsets each round added, and the error.
#[cfg(feature = "lz4")]
pub(crate) fn rounds_of(
    batch: &RecordBatch,
    options: &FetchOptions,
    budget: usize,
) -> (Vec<Vec<i64>>, Option<ClientError>) {
    let until = batch.next_offset();
    let mut p = progress(0, until);
    let mut rounds = Vec::new();
    while p.position < until && rounds.len() < 100 {
        let r = response(std::slice::from_ref(batch), &[], until);
        let mut share = Unpacked::new(budget / 2, budget);
        let result = apply_answer(&tp(), &mut p, answer(r), options.isolation, &options.decode, &mut share);
        rounds.push(p.fetched.records.drain(..).map(|r| r.offset).collect());
        if let Err(e) = result {
            return (rounds, Some(e));
        }
    }
    (rounds, None)
}
