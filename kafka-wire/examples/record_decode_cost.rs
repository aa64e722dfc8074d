//! Decodes the codec benchmark's ~1 MiB record batch (8,738 records of a 10-byte key and a
//! 100-byte value) `N` times with one decoder, for instruction counts under
//! `valgrind --tool=callgrind` (a loaded machine makes wall times unreliable; instructions,
//! the allocator's included, are not): divide the total by `N` after subtracting a run with
//! `N = 0` (the setup).
//!
//! `cargo run --release -p kafka-wire --example record_decode_cost -- DECODER CODEC N`, where
//! DECODER is `kwire` (owning `RecordBatch`), `kwire-view` (`BatchView`, every record's key,
//! value and headers touched) or `kafka-protocol`, and CODEC is `none`, `lz4` or `snappy`.

use std::hint::black_box;
use std::process::ExitCode;

use bytes::Bytes;
use kafka_wire::protocol::records::{BatchView, Compression, DecodeOptions, Record, RecordBatch};

fn batch(compression: Compression) -> Result<Bytes, String> {
    let records = (0..8_738)
        .map(|i| {
            let mut value =
                format!(r#"{{"id":{i},"user":"u{:04}","event":"page_view","path":"/p/{}""#, i % 997, i % 89);
            while value.len() < 99 {
                value.push(' ');
            }
            value.push('}');
            Record {
                timestamp_delta: i64::from(i),
                offset_delta: i,
                ..Record::new(Some(Bytes::from(format!("key-{i:06}"))), Some(Bytes::from(value)))
            }
        })
        .collect();
    RecordBatch::new(0, 1_750_000_000_000, compression, records).to_bytes().map_err(|e| e.to_string())
}

fn run(decoder: &str, bytes: &Bytes, n: usize) -> Result<usize, String> {
    let opts = DecodeOptions::default();
    let mut seen = 0;
    for _ in 0..n {
        match decoder {
            "kwire" => {
                let b = RecordBatch::decode(black_box(bytes).clone(), &opts).map_err(|e| e.to_string())?;
                seen += black_box(b).records.len();
            }
            "kwire-view" => {
                let view = BatchView::parse(black_box(bytes), &opts).map_err(|e| e.to_string())?;
                for r in view.records() {
                    let r = r.map_err(|e| e.to_string())?;
                    black_box((
                        view.header.offset_of(&r),
                        view.header.timestamp_of(&r),
                        r.key,
                        r.value,
                        r.headers,
                    ));
                    seen += 1;
                }
            }
            "kafka-protocol" => {
                let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut black_box(bytes).clone())
                    .map_err(|e| e.to_string())?;
                seen += black_box(set).records.len();
            }
            other => return Err(format!("unknown decoder {other}")),
        }
    }
    Ok(seen)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [decoder, codec, n] = args.as_slice() else {
        eprintln!("usage: record_decode_cost kwire|kwire-view|kafka-protocol none|lz4|snappy N");
        return ExitCode::FAILURE;
    };
    let codec = match codec.as_str() {
        "none" => Compression::None,
        "lz4" => Compression::Lz4,
        "snappy" => Compression::Snappy,
        other => {
            eprintln!("unknown codec {other}");
            return ExitCode::FAILURE;
        }
    };
    let result = n
        .parse::<usize>()
        .map_err(|e| format!("N: {e}"))
        .and_then(|n| batch(codec).and_then(|bytes| run(decoder, &bytes, n)));
    match result {
        Ok(seen) => {
            println!("{seen} records decoded");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
