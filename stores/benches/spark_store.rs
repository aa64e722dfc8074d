//! Loading a Spark checkpoint store (issue 12, "Speed"): a checkpoint of 10,000 committed batches
//! with 1,000 partitions each must load in well under 50 ms, because only the newest committed
//! batch is read (two folder listings, then `offsets/9999` and `commits/9999`), never every file.
//!
//! `SparkStore::load` on that checkpoint (folder listings, file reads and parsing included), and
//! for comparison on a checkpoint of one batch of 1,000 partitions: the difference is the cost
//! of listing 20,000 names. Numbers: README.md ("The seeds on Spark").
//!
//!     cargo bench -p kwire-stores --bench spark_store

use std::hint::black_box;
use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};
use kwire_stores::SparkStore;

/// Writes `batches` committed batches of `partitions` partitions of one Kafka source.
fn checkpoint(dir: &Path, batches: u64, partitions: i32) {
    std::fs::create_dir_all(dir.join("offsets")).expect("bench dir");
    std::fs::create_dir_all(dir.join("commits")).expect("bench dir");
    let meta = r#"{"batchWatermarkMs":0,"batchTimestampMs":1764600000000,"conf":{"spark.sql.shuffle.partitions":"200"}}"#;
    for n in 0..batches {
        let parts: Vec<String> =
            (0..partitions).map(|p| format!("\"{p}\":{}", n * 1000 + p as u64)).collect();
        let text = format!("v1\n{meta}\n{{\"events\":{{{}}}}}", parts.join(","));
        std::fs::write(dir.join("offsets").join(n.to_string()), text).expect("write offsets");
        std::fs::write(dir.join("commits").join(n.to_string()), "v1\n{\"nextBatchWatermarkMs\":0}")
            .expect("write commit");
    }
}

fn load(c: &mut Criterion) {
    let root = std::env::temp_dir().join(format!("kwire-bench-spark-store-{}", std::process::id()));
    let mut group = c.benchmark_group("spark_store_load");
    for batches in [1u64, 10_000] {
        let dir = root.join(format!("ckpt-{batches}"));
        checkpoint(&dir, batches, 1000);
        let store = SparkStore::new(&dir);
        assert_eq!(store.load().expect("loads").len(), 1000);
        group.bench_function(format!("{batches}_batches_x_1000_partitions"), |b| {
            b.iter(|| black_box(store.load().expect("loads")));
        });
    }
    group.finish();
    let _ = std::fs::remove_dir_all(&root);
}

criterion_group!(benches, load);
criterion_main!(benches);
