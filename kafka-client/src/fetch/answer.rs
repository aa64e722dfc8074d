//! A leader's answer for one partition taken into its range, sans-IO: the records and log
//! bounds (`unpack.rs`), a record set that does not decode as the partition's
//! [`ClientError::Records`], and what the partition asks for next round — the rounds it made
//! no progress (such partitions go first) and its `partition_max_bytes`, in compressed bytes
//! on the wire: doubled after a batch cut short, shrunk to what fitted when the decompressed
//! budget stopped it (never below [`MIN_PARTITION_BYTES`]), grown back to
//! `max.partition.fetch.bytes` as responses fit again. No socket, no clock.

use kafka_vocab::{Isolation, TopicPartition};
use kafka_wire::protocol::messages::FetchPartitionResponse;
use kafka_wire::protocol::records::DecodeOptions;

use crate::error::{BrokerRef, ClientError};

use super::progress::Progress;
use super::unpack::{apply_response, Unpacked};

/// A leader's answer for one partition, decoded after the merge so a bad record set fails
/// only its own partition.
#[derive(Debug)]
pub(super) struct LeaderData {
    pub(super) broker: BrokerRef,
    pub(super) version: i16,
    /// `None`: nothing new — an incremental session response left the partition out, or its
    /// preferred read replica answered an error and the leader is asked next.
    pub(super) response: Option<FetchPartitionResponse>,
    /// `broker` is the partition's preferred read replica, not its leader.
    pub(super) from_replica: bool,
}

/// The smallest per-partition request the decompressed budget shrinks a partition to: a
/// broker sends a first batch whole whatever the limit, so smaller only costs rounds.
pub(super) const MIN_PARTITION_BYTES: i32 = 4 * 1024;

/// Takes one leader's answer for `p` into it: its records and log bounds, the position moved
/// past every complete batch read. A partition that made no progress goes first next round,
/// with double the bytes if what it got was a batch cut short; a record set that does not
/// decode is the partition's error. A partition `unpacked` stopped asks next round for about
/// the bytes that fitted; one that moved on grows back to `max.partition.fetch.bytes`
/// ([`Progress::partition_max_bytes`]).
pub(super) fn apply_answer(
    tp: &TopicPartition,
    p: &mut Progress,
    data: LeaderData,
    isolation: Isolation,
    decode: &DecodeOptions,
    unpacked: &mut Unpacked,
) -> Result<(), ClientError> {
    let before = p.position;
    let Some(response) = &data.response else { return Ok(()) };
    p.bounds_from = if data.from_replica { data.broker.node_id } else { None };
    let cut = apply_response(p, response, isolation, decode, unpacked).map_err(|e| ClientError::Records {
        partition: tp.clone(),
        offset: e.offset,
        broker: data.broker,
        version: data.version,
        source: Box::new(e.source),
    })?;
    if let Some(read) = cut {
        // The records unpack to more than the response could hold: ask for about as many
        // compressed bytes as fitted (nothing fitted: the budget went to the partitions before
        // it, and it goes first next round with what it asked for).
        if read > 0 {
            p.max_bytes = i32::try_from(read).unwrap_or(i32::MAX).max(MIN_PARTITION_BYTES);
        }
        p.stalls = if p.position == before { p.stalls + 1 } else { 0 };
        return Ok(());
    }
    if p.position == before {
        p.stalls += 1;
        // Only a batch cut short (larger than the limit: brokers before Fetch v3 send a
        // partial one) needs more bytes; a partition left empty because the response was full
        // keeps `max.partition.fetch.bytes` and goes first next round.
        if response.records.as_ref().is_some_and(|r| !r.is_empty()) {
            p.max_bytes = p.max_bytes.saturating_mul(2).min(i32::MAX / 2);
        }
    } else {
        p.stalls = 0;
        // Back towards `max.partition.fetch.bytes` after the budget shrank it.
        if p.max_bytes < p.partition_max_bytes {
            p.max_bytes = p.max_bytes.saturating_mul(2).min(p.partition_max_bytes);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fetch::ranges::FetchOptions;
    #[cfg(feature = "lz4")]
    use crate::fetch::test_support::{answer, compressible, offsets, rounds_of};
    use crate::fetch::test_support::{data, progress, response, tp};
    #[cfg(feature = "lz4")]
    use kafka_wire::protocol::DecodeErrorKind;

    #[test]
    fn a_follower_at_its_high_watermark_short_of_the_range_does_not_end_it() {
        let r = response(&[data(0, 3, -1, false)], &[], 3);
        let replica = |from_replica| LeaderData {
            broker: BrokerRef { node_id: Some(3), addr: "127.0.0.1:9003".to_owned() },
            version: 12,
            response: Some(r.clone()),
            from_replica,
        };
        let o = FetchOptions::default();
        let mut p = progress(0, 10);
        apply_answer(&tp(), &mut p, replica(true), o.isolation, &o.decode, &mut Unpacked::unbounded())
            .unwrap();
        assert_eq!(p.position, 3);
        assert!(!p.done(Isolation::ReadUncommitted));
        assert_eq!(p.at_replica_end(Isolation::ReadUncommitted), Some(3));
        // The same bounds from the leader end the range.
        let mut p = progress(0, 10);
        apply_answer(&tp(), &mut p, replica(false), o.isolation, &o.decode, &mut Unpacked::unbounded())
            .unwrap();
        assert!(p.done(Isolation::ReadUncommitted));
        assert_eq!(p.at_replica_end(Isolation::ReadUncommitted), None);
        // `until` reached through a follower is the end.
        let mut p = progress(0, 3);
        apply_answer(&tp(), &mut p, replica(true), o.isolation, &o.decode, &mut Unpacked::unbounded())
            .unwrap();
        assert!(p.done(Isolation::ReadUncommitted));
        assert_eq!(p.at_replica_end(Isolation::ReadUncommitted), None);
    }

    #[cfg(feature = "lz4")]
    #[test]
    fn a_response_is_unpacked_up_to_its_share_and_the_partition_then_asks_for_what_fitted() {
        // Four batches of ≈ 30 KB decompressed each (≈ 100 bytes on the wire); the response's
        // share is 50 KB: two batches are read (the second passes the share), the rest waits.
        let r = response(
            &[compressible(0, 3), compressible(3, 3), compressible(6, 3), compressible(9, 3)],
            &[],
            12,
        );
        let wire_two: usize = {
            let mut buf = Vec::new();
            compressible(0, 3).encode(&mut buf).unwrap();
            compressible(3, 3).encode(&mut buf).unwrap();
            buf.len()
        };
        let options = FetchOptions::default();
        let (isolation, decode) = (options.isolation, &options.decode);
        let mut p = progress(0, 12);
        let mut share = Unpacked::new(50_000, usize::MAX);
        apply_answer(&tp(), &mut p, answer(r), isolation, decode, &mut share).unwrap();
        assert_eq!(offsets(&p), vec![0, 1, 2, 3, 4, 5]);
        assert_eq!((p.position, p.stalls), (6, 0));
        assert_eq!(
            p.max_bytes,
            i32::try_from(wire_two).unwrap().max(MIN_PARTITION_BYTES),
            "asks for what fitted"
        );

        // A second partition of the same response gets nothing: no progress, it goes first next
        // round, and keeps what it asked for (no doubling: nothing was cut short by the broker).
        let mut q = progress(0, 12);
        let asked = q.max_bytes;
        apply_answer(
            &tp(),
            &mut q,
            answer(response(&[compressible(0, 3)], &[], 12)),
            isolation,
            decode,
            &mut share,
        )
        .unwrap();
        assert!(q.fetched.records.is_empty());
        assert_eq!((q.position, q.stalls, q.max_bytes), (0, 1, asked));

        // The next response, with a fresh share, reads on; the request grows back towards
        // max.partition.fetch.bytes once a response fits.
        let shrunk = p.max_bytes;
        let rest = response(&[compressible(6, 3), compressible(9, 3)], &[], 12);
        apply_answer(&tp(), &mut p, answer(rest), isolation, decode, &mut Unpacked::new(1 << 20, usize::MAX))
            .unwrap();
        assert_eq!(p.position, 12);
        assert_eq!(p.max_bytes, (shrunk * 2).min(options.partition_max_bytes));
    }

    #[cfg(feature = "lz4")]
    #[test]
    fn a_streamed_batch_past_the_absolute_cap_is_an_error_naming_partition_and_offset() {
        let batch = compressible(700, 40);
        let options = FetchOptions {
            decode: DecodeOptions { max_decompressed_size: 150_000, ..DecodeOptions::default() },
            ..FetchOptions::default()
        };
        let (rounds, error) = rounds_of(&batch, &options, 100_000);
        let error = error.expect("the batch passes the 150 KB cap");
        let ClientError::Records { partition, offset, source, .. } = &error else { panic!("{error}") };
        assert_eq!((partition, *offset), (&tp(), 700));
        assert_eq!(source.kind, DecodeErrorKind::DecompressedTooLarge { max: 150_000 });
        let text = error.to_string();
        assert!(text.contains("t-0") && text.contains("offset 700") && text.contains("150000"), "{text}");
        // What came before the cap was passed came once, in order.
        let read: Vec<i64> = rounds.concat();
        assert_eq!(read, (700..700 + read.len() as i64).collect::<Vec<_>>());
    }
}
