//! Loading a file offset store (issue 19, finding 3: loads were quadratic in the entries, 10k /
//! 20k / 40k / 80k entries took 0.43 / 1.65 / 6.3 / 18 s and 1.6 M did not finish in 60 s).
//!
//! `FileStore::load` of a compact document of N entries (`{"topic":"topic-K","partition":P,
//! "offset":O}`, 1,000 partitions per topic, like the files: 1.6 M entries are 87 MB),
//! file read included: N = 10k, 20k, 40k, 80k and 1.6 M. Linear means the time per entry stays
//! flat as N grows. Numbers: kafka-wire/README.md ("File store").
//!
//!     cargo bench -p kwire-stores --bench file_store

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kwire_stores::FileStore;

#[path = "../tests/support/compact_document.rs"]
mod compact_document;
use compact_document::compact_document;

fn load(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("kwire-bench-file-store-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("bench dir");
    let mut group = c.benchmark_group("file_store_load");
    for n in [10_000usize, 20_000, 40_000, 80_000, 1_600_000] {
        let path: PathBuf = dir.join(format!("offsets-{n}.json"));
        std::fs::write(&path, compact_document(n)).expect("write the document");
        let store = FileStore::new(&path).timeout(Duration::from_secs(600));
        assert_eq!(store.load("g").expect("loads").len(), n);
        group.throughput(Throughput::Elements(n as u64));
        if n > 100_000 {
            group.sample_size(10).measurement_time(Duration::from_secs(20));
        }
        group.bench_function(format!("{n}_entries"), |b| {
            b.iter(|| black_box(store.load("g").expect("loads")));
        });
    }
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, load);
criterion_main!(benches);
