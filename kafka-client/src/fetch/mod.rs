//! Reading partitions: their offsets and log bounds (ListOffsets), exact offset ranges fetched
//! from the leaders, and the pipelined [`Fetcher`](crate::Fetcher).
//!
//! May import `cluster/`, `producer/produce.rs` (topic ids by name) and the shared files at the
//! crate's top; `admin.rs` takes its offset queries.
//!
//! Inside, the files that do IO drive the sans-IO ones (no socket, no clock, no tokio), never
//! the other way; each sans-IO file imports only the files after it here:
//!
//! - `fetcher.rs` (IO): the pipelined [`Fetcher`](crate::Fetcher); sends its rounds through
//!   `ranges.rs`.
//! - `ranges.rs` (IO): the public [`FetchRange`](crate::FetchRange) and
//!   [`FetchOptions`](crate::FetchOptions), [`Client::fetch_range`](crate::Client::fetch_range)'s
//!   loop, and the round both send (routing, fetch sessions, preferred read replicas).
//! - `offsets.rs` (IO): ListOffsets, the log bounds.
//! - `request.rs`: a Fetch request from the wanted partitions and the broker's session.
//! - `answer.rs`: a leader's answer for one partition taken in: its error, the next round's size.
//! - `unpack.rs`: the record data taken in: batches, aborted transactions, the decompressed budget.
//! - `streamed.rs`: a batch too large to unpack whole, read as it decompresses.
//! - `progress.rs`: a range being read, and when it is complete.
//! - `fetched.rs`: the public record and partition types; imports no file of `fetch/`.
//! - `test_support.rs` (tests only): the batches, responses and ranges their tests share.
//!
//! What the sans-IO files need of [`FetchOptions`](crate::FetchOptions) is handed to them as
//! values, so none of them imports `ranges.rs`.

mod answer;
pub(crate) mod fetched;
pub(crate) mod fetcher;
pub(crate) mod offsets;
mod progress;
pub(crate) mod ranges;
mod request;
mod streamed;
#[cfg(test)]
mod test_support;
mod unpack;
