//! A pipelined reader of offset ranges: every leader is fetched from at once, and the next
//! Fetch to a broker is on the wire while the previous response is being handed out.
//!
//! ```text
//!   per broker (a "lane": the partitions metadata says it leads)
//!
//!   idle ──send──► in flight ──answer──► decoded into chunks, queued ──► handed out by next()
//!     ▲                                        │
//!     └──────── sent again at once when at most this one response is still undelivered
//! ```
//!
//! Bounds: a lane has at most one request in flight, and sends it only while at most one of its
//! responses is undelivered (queued, or the chunk the caller is working on: a chunk counts as
//! consumed when `next` is called again). So a lane holds at most two responses' worth of
//! records, each no more than `max_bytes` (`fetch.max.bytes`) — nor more than its partitions ×
//! `partition_max_bytes` (`max.partition.fetch.bytes`), except that a broker always sends the
//! first batch of the first partition with data whole. Records are slices of the response (or
//! of a batch's decompressed buffer), so a response's memory is freed when its last chunk is
//! dropped. Decompressed, a response holds at most its share of
//! [`FetchOptions::max_decompressed_bytes`] (the budget over twice the lanes reading) plus one
//! batch: decoding stops at the compressed batch after the share is spent — after the first
//! batch, so reading always moves on — and the partitions it stopped ask for about as many
//! compressed bytes as fitted next round (growing back to `max.partition.fetch.bytes` as
//! responses fit again). [`read_all`](Fetcher::read_all), which keeps every record anyway, has
//! no such budget.
//!
//! Each round to a broker goes through [`Client::route_by_leader`] with the broker's fetch
//! session (KIP-227), so a partition whose leader moved is refreshed and re-sent within the
//! round, and every round after it is sent to the new leader. A partition is in at most one
//! request at a time and its chunks are queued in offset order, so no record is lost or doubled
//! across leader changes.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

use crate::cluster::client::Client;
use crate::cluster::router::{PartitionResults, TopicPartition};
use crate::error::{BrokerRef, ClientError};
use crate::fetch::answer::{apply_answer, LeaderData};
use crate::fetch::fetched::FetchedPartition;
use crate::fetch::offsets::LogRange;
use crate::fetch::progress::{stalled, Progress, Want};
use crate::fetch::ranges::{FetchOptions, FetchRange};
use crate::fetch::unpack::Unpacked;
use kafka_wire::protocol::ErrorCode;

/// What one response brought for one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedChunk {
    /// This response's records of the partition (in offset order, inside the range), and where
    /// reading goes on next ([`FetchedPartition::next_offset`]) with the log bounds the response
    /// reported.
    pub fetched: FetchedPartition,
    /// The range is complete: this is the partition's last chunk (see [`Client::fetch_range`]
    /// for when a range is complete).
    pub complete: bool,
}

/// A broker lane: the node id a partition is read from — its leader, or the preferred read
/// replica its leader named (KIP-392) — `None` while no leader is known (the round refreshes
/// metadata).
type Lane = Option<i32>;

#[derive(Debug, Default)]
struct LaneState {
    in_flight: bool,
    /// This lane's responses whose chunks are not all consumed yet.
    undelivered: usize,
}

#[derive(Debug)]
struct Reading {
    progress: Progress,
    in_flight: bool,
    /// Which [`Fetcher::add`] of the partition this is: an answer to a round sent for an
    /// earlier one (the partition was removed and added again meanwhile) is dropped.
    added: u64,
}

/// One queued item; `closes` is set on the last item of a lane's response.
#[derive(Debug)]
struct Ready {
    partition: TopicPartition,
    outcome: Result<FetchedChunk, ClientError>,
    closes: Option<Lane>,
}

/// A finished round: the lane, the partitions it asked for, and the answers.
#[derive(Debug)]
struct Round {
    lane: Lane,
    /// The partitions asked for, each with the [`Reading::added`] it was asked for.
    asked: Vec<(TopicPartition, u64)>,
    answers: PartitionResults<LeaderData>,
    /// The log's bounds for each partition answered OFFSET_OUT_OF_RANGE, looked up inside the
    /// round's task so that taking the round in never waits (and `next` stays cancel-safe).
    out_of_range_logs: PartitionResults<LogRange>,
}

/// Reads offset ranges from the partition leaders, pipelined (see the module docs).
///
/// ```no_run
/// # use std::sync::Arc;
/// # use kafka_client::{Client, ClientConfig, FetchOptions, FetchRange, Fetcher, TopicPartition};
/// # async fn run(client: Arc<Client>) {
/// let ranges = vec![FetchRange::new(TopicPartition::new("events", 0), 0, 1_000)];
/// let mut fetcher = Fetcher::new(client, &ranges, FetchOptions::default());
/// while let Some((partition, chunk)) = fetcher.next().await {
///     match chunk {
///         Ok(chunk) => println!("{partition}: {} records", chunk.fetched.records.len()),
///         Err(e) => eprintln!("{partition}: {e}"),
///     }
/// }
/// # }
/// ```
#[derive(Debug)]
pub struct Fetcher {
    client: Arc<Client>,
    options: FetchOptions,
    /// Set by [`Fetcher::read_all`]: no round may outlive it, and what is unread then fails.
    deadline: Option<Instant>,
    reading: BTreeMap<TopicPartition, Reading>,
    lanes: HashMap<Lane, LaneState>,
    rounds: JoinSet<Round>,
    /// What each running round asked for, to fail its partitions if its task ends abnormally.
    running: HashMap<tokio::task::Id, (Lane, Vec<(TopicPartition, u64)>)>,
    ready: VecDeque<Ready>,
    /// The lane whose response's last item `next` returned: consumed at the next call.
    handed_out: Option<Lane>,
    /// Counts [`Fetcher::add`] calls, to tell a partition's readings apart.
    adds: u64,
}

impl Fetcher {
    /// Reads each range `[from, until)`; nothing is sent until [`next`](Self::next) is called.
    /// `options.timeout` bounds each round (its retries included): a partition that gets no
    /// answer that long fails. A negative `from`, `until < from` or a partition given twice is
    /// that partition's first item, [`ClientError::InvalidArgument`]; an empty range is one
    /// complete chunk without records.
    pub fn new(client: Arc<Client>, ranges: &[FetchRange], options: FetchOptions) -> Self {
        let mut fetcher = Self {
            client,
            options,
            deadline: None,
            reading: BTreeMap::new(),
            lanes: HashMap::new(),
            rounds: JoinSet::new(),
            running: HashMap::new(),
            ready: VecDeque::new(),
            handed_out: None,
            adds: 0,
        };
        let mut given: std::collections::HashSet<&TopicPartition> = std::collections::HashSet::new();
        for range in ranges {
            let tp = &range.partition;
            if !given.insert(tp) {
                fetcher.reading.remove(tp);
                let message = format!("{tp} is given more than one range");
                fetcher.queue(tp.clone(), Err(ClientError::InvalidArgument { message }), None);
                continue;
            }
            fetcher.start(range, false);
        }
        fetcher
    }

    /// A fetcher with nothing to read yet, for partitions [`add`](Self::add)ed and
    /// [`remove`](Self::remove)d as they come and go (a consumer's assignment, paused
    /// partitions, seeks); partitions given to [`follow`](Self::follow) are read until removed.
    pub fn empty(client: Arc<Client>, options: FetchOptions) -> Self {
        Self::new(client, &[], options)
    }

    /// Reads `range` from now on, in place of any range of its partition being read (whose
    /// queued chunks and in-flight answer are dropped, as [`remove`](Self::remove) does). A
    /// negative `from` or `until < from` is the partition's next item,
    /// [`ClientError::InvalidArgument`].
    pub fn add(&mut self, range: &FetchRange) {
        self.remove(&range.partition);
        self.start(range, false);
    }

    /// Reads `partition` from `from` on, past the end of its log (each Fetch waits up to
    /// [`FetchOptions::max_wait`](crate::FetchOptions) at the broker for new records), until it
    /// is [`remove`](Self::remove)d; in place of any range of it being read, as
    /// [`add`](Self::add) does. A negative `from` is the partition's next item,
    /// [`ClientError::InvalidArgument`].
    pub fn follow(&mut self, partition: &TopicPartition, from: i64) {
        self.remove(partition);
        self.start(&FetchRange::new(partition.clone(), from, i64::MAX), true);
    }

    /// Stops reading `partition`: its queued chunks are dropped and an answer already on the
    /// way is ignored, so [`next`](Self::next) returns nothing more of it. Whether it was read.
    pub fn remove(&mut self, partition: &TopicPartition) -> bool {
        let was_read = self.reading.remove(partition).is_some();
        let before = self.ready.len();
        let mut closed: Vec<Lane> = Vec::new();
        self.ready.retain(|ready| {
            let keep = ready.partition != *partition;
            if !keep {
                closed.extend(ready.closes);
            }
            keep
        });
        // A dropped item that closed a response: that response is consumed.
        for lane in closed {
            if let Some(state) = self.lanes.get_mut(&lane) {
                state.undelivered = state.undelivered.saturating_sub(1);
            }
        }
        was_read || self.ready.len() != before
    }

    /// The partitions being read (added and neither complete, failed nor removed).
    pub fn partitions(&self) -> impl Iterator<Item = &TopicPartition> {
        self.reading.keys()
    }

    fn start(&mut self, range: &FetchRange, follows: bool) {
        let tp = &range.partition;
        if range.from < 0 || range.until < range.from {
            let message = format!("[{}, {}) is not a range of offsets of {tp}", range.from, range.until);
            self.queue(tp.clone(), Err(ClientError::InvalidArgument { message }), None);
            return;
        }
        let mut progress = Progress::new(range.from, range.until, self.options.partition_max_bytes);
        progress.follows = follows;
        if progress.position >= progress.until {
            let fetched = progress.fetched;
            self.queue(tp.clone(), Ok(FetchedChunk { fetched, complete: true }), None);
        } else {
            self.adds += 1;
            self.reading.insert(tp.clone(), Reading { progress, in_flight: false, added: self.adds });
        }
    }

    /// The next chunk of records, or a partition's error (its last item), in offset order per
    /// partition; `None` when every range is complete or failed. Before a response's first
    /// chunk is returned, the next request to its broker is already sent; calling `next` again
    /// says the previous chunk is consumed. Cancel-safe: a `next` dropped before it returns (a
    /// `select!` that took another branch) loses nothing; its answers wait for the next call.
    pub async fn next(&mut self) -> Option<(TopicPartition, Result<FetchedChunk, ClientError>)> {
        if let Some(lane) = self.handed_out.take() {
            if let Some(state) = self.lanes.get_mut(&lane) {
                state.undelivered = state.undelivered.saturating_sub(1);
            }
        }
        loop {
            self.send_rounds();
            if let Some(ready) = self.ready.pop_front() {
                self.handed_out = ready.closes;
                return Some((ready.partition, ready.outcome));
            }
            let finished = match self.backoff_ends() {
                None => self.rounds.join_next_with_id().await,
                Some(wake) if self.rounds.is_empty() => {
                    tokio::time::sleep_until(wake).await;
                    continue;
                }
                Some(wake) => tokio::select! {
                    finished = self.rounds.join_next_with_id() => finished,
                    () = tokio::time::sleep_until(wake) => continue,
                },
            };
            match finished {
                Some(Ok((id, round))) => {
                    self.running.remove(&id);
                    self.take_round(round);
                }
                Some(Err(e)) => {
                    let Some((lane, asked)) = self.running.remove(&e.id()) else { continue };
                    self.finish_lane_round(lane);
                    for (tp, added) in asked {
                        if self.reading.get(&tp).is_some_and(|r| r.added == added) {
                            self.reading.remove(&tp);
                            let e = ClientError::Protocol {
                                broker: BrokerRef { node_id: lane, addr: "leader".to_owned() },
                                message: format!("the fetch of {tp} ended without an answer: {e}"),
                            };
                            self.queue(tp, Err(e), None);
                        }
                    }
                }
                None => {
                    // Nothing in flight and nothing could be sent: only a passed deadline
                    // leaves partitions unread here, and send_rounds failed them already.
                    if self.ready.is_empty() {
                        return None;
                    }
                }
            }
        }
    }

    /// Reads every range to its end within `options.timeout` overall, as
    /// [`Client::fetch_range`] does: one result per partition, its records concatenated.
    pub async fn read_all(mut self) -> PartitionResults<FetchedPartition> {
        self.deadline = Some(crate::deadline::deadline_after(self.options.timeout));
        // Every record is kept to the end: a decompressed budget would only add rounds.
        self.options.max_decompressed_bytes = usize::MAX;
        let mut results: PartitionResults<FetchedPartition> = BTreeMap::new();
        let mut partial: BTreeMap<TopicPartition, FetchedPartition> = BTreeMap::new();
        while let Some((tp, outcome)) = self.next().await {
            match outcome {
                Ok(chunk) => {
                    let so_far = partial
                        .entry(tp.clone())
                        .or_insert_with(|| FetchedPartition { records: Vec::new(), ..chunk.fetched.clone() });
                    let FetchedPartition { mut records, next_offset, log_start, high_watermark, last_stable } =
                        chunk.fetched;
                    so_far.records.append(&mut records);
                    so_far.next_offset = next_offset;
                    so_far.log_start = log_start;
                    so_far.high_watermark = high_watermark;
                    so_far.last_stable = last_stable;
                    if chunk.complete {
                        if let Some(done) = partial.remove(&tp) {
                            results.insert(tp, Ok(done));
                        }
                    }
                }
                Err(e) => {
                    partial.remove(&tp);
                    results.insert(tp, Err(e));
                }
            }
        }
        results
    }

    /// When the first partition waiting out a refetch's backoff may be asked again (at the
    /// deadline at the latest, which fails it instead); `None` when none waits.
    fn backoff_ends(&self) -> Option<tokio::time::Instant> {
        let now = Instant::now();
        let first = self
            .reading
            .values()
            .filter(|r| !r.in_flight)
            .filter_map(|r| r.progress.backoff_until(now))
            .min()?;
        let wake = self.deadline.map_or(first, |d| first.min(d));
        Some(tokio::time::Instant::from_std(wake))
    }

    fn queue(
        &mut self,
        partition: TopicPartition,
        outcome: Result<FetchedChunk, ClientError>,
        closes: Option<Lane>,
    ) {
        self.ready.push_back(Ready { partition, outcome, closes });
    }

    /// Sends a round to every lane that is idle, holds at most one undelivered response, and
    /// leads partitions not in flight. Past the deadline, those partitions fail instead.
    fn send_rounds(&mut self) {
        let now = Instant::now();
        if self.deadline.is_some_and(|d| now >= d) {
            let idle: Vec<TopicPartition> =
                self.reading.iter().filter(|(_, r)| !r.in_flight).map(|(tp, _)| tp.clone()).collect();
            for tp in idle {
                if let Some(r) = self.reading.remove(&tp) {
                    let e = stalled(&tp, &r.progress);
                    self.queue(tp, Err(e), None);
                }
            }
            return;
        }
        let metadata = self.client.cached_metadata();
        let mut by_lane: BTreeMap<Lane, Vec<TopicPartition>> = BTreeMap::new();
        for (tp, r) in &self.reading {
            // In flight, or waiting out a refetch's backoff (`next` wakes for it).
            if r.in_flight || !r.progress.fetchable(now) {
                continue;
            }
            let lane = metadata.as_ref().and_then(|m| {
                let partition =
                    m.topic(&tp.topic)?.partitions.iter().find(|p| p.partition == tp.partition)?;
                self.client.fetch_target(tp, partition, m)
            });
            by_lane.entry(lane).or_default().push(tp.clone());
        }
        let timeout = match self.deadline {
            Some(d) => d.saturating_duration_since(now),
            None => self.options.timeout,
        };
        for (lane, asked) in by_lane {
            let state = self.lanes.entry(lane).or_default();
            if state.in_flight || state.undelivered > 1 {
                continue;
            }
            state.in_flight = true;
            let mut requested: HashMap<TopicPartition, Want> = HashMap::with_capacity(asked.len());
            let mut asked_readings = Vec::with_capacity(asked.len());
            for tp in &asked {
                if let Some(r) = self.reading.get_mut(tp) {
                    r.in_flight = true;
                    requested.insert(tp.clone(), r.progress.want());
                    asked_readings.push((tp.clone(), r.added));
                }
            }
            let client = Arc::clone(&self.client);
            let options = self.options;
            let task_asked = asked_readings.clone();
            let handle = self.rounds.spawn(async move {
                let started = Instant::now();
                let answers = client.fetch_round(&asked, &requested, &options, timeout).await;
                let out_of_range: Vec<TopicPartition> = answers
                    .iter()
                    .filter(|(_, a)| {
                        matches!(a, Err(ClientError::Kafka { code: ErrorCode::OFFSET_OUT_OF_RANGE, .. }))
                    })
                    .map(|(tp, _)| tp.clone())
                    .collect();
                let out_of_range_logs = if out_of_range.is_empty() {
                    BTreeMap::new()
                } else {
                    let left = timeout.saturating_sub(started.elapsed()).max(Duration::from_secs(1));
                    client.log_ranges(&out_of_range, left).await
                };
                Round { lane, asked: task_asked, answers, out_of_range_logs }
            });
            self.running.insert(handle.id(), (lane, asked_readings));
        }
    }

    fn finish_lane_round(&mut self, lane: Lane) {
        if let Some(state) = self.lanes.get_mut(&lane) {
            state.in_flight = false;
        }
    }

    /// Takes a finished round in: each partition's records become a chunk (queued in the
    /// order the partitions were asked for), a complete range leaves the reading set, an error
    /// is the partition's last item. An offset out of range is reported with the log's bounds.
    fn take_round(&mut self, round: Round) {
        self.finish_lane_round(round.lane);
        // Each lane holds up to two decoded responses (see the module docs): this one's share
        // of the decompressed budget.
        let lanes = self
            .lanes
            .iter()
            .filter(|(lane, s)| s.in_flight || s.undelivered > 0 || **lane == round.lane)
            .count();
        let budget = self.options.max_decompressed_bytes;
        let mut unpacked = Unpacked::new(budget / (2 * lanes.max(1)), budget);
        let mut answers = round.answers;
        // Stalled partitions decoded first, as the request put them first: one the share left
        // out last round is unpacked first now.
        let mut asked = round.asked;
        asked.sort_by_key(|(tp, _)| std::cmp::Reverse(self.reading.get(tp).map_or(0, |r| r.progress.stalls)));
        let mut queued = 0usize;
        let mut out_of_range: Vec<(TopicPartition, ClientError)> = Vec::new();
        for (tp, added) in asked {
            // Removed, or removed and added again, since the round was sent.
            let Some(r) = self.reading.get_mut(&tp).filter(|r| r.added == added) else { continue };
            r.in_flight = false;
            let Some(answer) = answers.remove(&tp) else { continue };
            let p = &mut r.progress;
            let (isolation, decode) = (self.options.isolation, &self.options.decode);
            match answer.and_then(|data| apply_answer(&tp, p, data, isolation, decode, &mut unpacked)) {
                Ok(()) => {
                    self.client.leader_confirms_end(&tp, p, self.options.isolation);
                    let complete = p.done(self.options.isolation);
                    let records = std::mem::take(&mut p.fetched.records);
                    if records.is_empty() && !complete {
                        continue;
                    }
                    let fetched = FetchedPartition { records, next_offset: p.position, ..p.fetched.clone() };
                    if complete {
                        self.reading.remove(&tp);
                    }
                    self.queue(tp, Ok(FetchedChunk { fetched, complete }), None);
                    queued += 1;
                }
                Err(ClientError::Kafka { code: ErrorCode::OFFSET_OUT_OF_RANGE, .. }) => {
                    let log =
                        round.out_of_range_logs.get(&tp).and_then(|r| r.as_ref().ok()).map(LogRange::bounds);
                    if p.retry_out_of_range(log, Instant::now()) {
                        // The log holds the position: the next round asks for it again.
                        continue;
                    }
                    out_of_range.push((tp.clone(), p.out_of_range_error(&tp, log)));
                    self.reading.remove(&tp);
                }
                // Read again from the failed batch; the records before it wait for that round.
                Err(e) if e.is_checksum_mismatch() && p.retry_corrupt_batch(Instant::now()) => {}
                Err(e) => {
                    self.reading.remove(&tp);
                    self.queue(tp, Err(e), None);
                    queued += 1;
                }
            }
        }
        for (tp, e) in out_of_range {
            self.queue(tp, Err(e), None);
            queued += 1;
        }
        if queued > 0 {
            if let Some(last) = self.ready.back_mut() {
                last.closes = Some(round.lane);
            }
            self.lanes.entry(round.lane).or_default().undelivered += 1;
        }
    }
}
