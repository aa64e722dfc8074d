//! The hostile-input comparison's other half (issue 3): the `kafka-protocol` crate on the two
//! inputs that `tests/hostile_input.rs` shows kwire refusing in microseconds. It reserves
//! capacity for the claimed element count and the process aborts, so this is an example run on
//! its own, never a test:
//!
//! ```text
//! cargo run --release -p kafka-wire --example kafka_protocol_abort -- list-offsets   # or record-batch
//! ```
//!
//! The exit status is the abort's (134, SIGABRT) with "memory allocation of … bytes failed".

use bytes::Bytes;
use kafka_protocol::protocol::Decodable as _;
use kafka_wire::protocol::records::{Compression, RecordBatch};

fn main() {
    let which = std::env::args().nth(1).unwrap_or_default();
    match which.as_str() {
        "list-offsets" => {
            // 7 bytes: ListOffsets v1 response, `topics` array length 0x7fffffff.
            let mut body = Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff, 0, 0, 0]);
            let out = kafka_protocol::messages::ListOffsetsResponse::decode(&mut body, 1);
            println!("kafka-protocol returned: {:?}", out.map(|_| "a response"));
        }
        "record-batch" => {
            // 61 bytes: an empty batch whose record_count claims 0x7fffffff, CRC recomputed.
            let empty = RecordBatch::new(0, 1_750_000_000_000, Compression::None, Vec::new());
            let mut bytes = empty.to_bytes().expect("encodes").to_vec();
            bytes[57..61].copy_from_slice(&0x7fff_ffff_i32.to_be_bytes());
            let crc = crc32c::crc32c(&bytes[21..]);
            bytes[17..21].copy_from_slice(&crc.to_be_bytes());
            let out = kafka_protocol::records::RecordBatchDecoder::decode(&mut Bytes::from(bytes));
            println!("kafka-protocol returned: {:?}", out.map(|_| "a record set"));
        }
        _ => {
            eprintln!("usage: kafka_protocol_abort list-offsets|record-batch");
            std::process::exit(2);
        }
    }
}
