//! Planning 1,000,000 partitions (1,000 topics × 1,000 partitions) on one core.
//! Target: under 150 ms per plan. Prints ns/partition and heap allocations per plan.
//! The third case plans into the previous plan ([`plan_into`]), as a streaming loop does.

// The counting allocator needs `unsafe impl GlobalAlloc`; it only forwards to `System`.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use offset_engine::{
    plan, plan_into, Limits, LogState, LogView, PartitionInput, PlanRequest, Stored, TopicPartition,
};

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const TOPICS: usize = 1_000;
const PARTITIONS_PER_TOPIC: usize = 1_000;
const N: usize = TOPICS * PARTITIONS_PER_TOPIC;

/// A cluster with every kind of partition: mostly in range, some new, some behind retention,
/// some ahead of the log, some gone.
fn inputs() -> Vec<PartitionInput> {
    let mut out = Vec::with_capacity(N);
    for t in 0..TOPICS {
        let topic: Arc<str> = Arc::from(format!("topic-{t:04}"));
        for p in 0..PARTITIONS_PER_TOPIC {
            let i = (t * PARTITIONS_PER_TOPIC + p) as i64;
            let log_start = i % 500;
            let hw = log_start + 10_000 + (i % 7_919);
            let stored = match i % 100 {
                0 => None,
                1 => Some(Stored::at(log_start / 2)),
                2 => Some(Stored::at(hw + 5)),
                _ => Some(Stored::at(log_start + (i % 9_973).min(hw - log_start))),
            };
            let log = if i % 1_000 == 999 {
                LogState::PartitionNotFound
            } else {
                LogState::Found(LogView::new(log_start, hw))
            };
            out.push(PartitionInput::new(
                TopicPartition { topic: Arc::clone(&topic), partition: p as i32 },
                stored,
                log,
            ));
        }
    }
    out
}

fn request(limits: Limits) -> PlanRequest {
    PlanRequest { limits, partitions: inputs(), ..PlanRequest::default() }
}

/// This thread's time on a CPU so far (user and kernel, page faults included), from Linux's
/// `/proc/thread-self/schedstat`; `None` elsewhere. On a loaded machine the wall clock also
/// counts the time spent waiting for a CPU; this does not.
fn cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    stat.split_whitespace().next()?.parse().ok().map(Duration::from_nanos)
}

fn report(name: &str, req: &PlanRequest) {
    report_with(name, || black_box(plan(black_box(req))));
}

fn report_reused(name: &str, req: &PlanRequest) {
    let mut reused = plan(req);
    report_with(name, || plan_into(black_box(req), black_box(&mut reused)));
}

/// Times `plan_once`; what it returns is dropped after the clock stops (as before there was a
/// reused case), so the fresh cases' figures leave out freeing the plan, and the reused case's
/// include freeing the previous plan's entries (`plan_into` clears them).
fn report_with<T>(name: &str, mut plan_once: impl FnMut() -> T) {
    // Best of 3, each plan dropped (or planned over) before the next, as in the criterion loop.
    let mut best = Duration::MAX;
    let mut best_cpu = Duration::MAX;
    let mut allocations = 0;
    for _ in 0..3 {
        // Reading the CPU time allocates: outside the counted span.
        let cpu_start = cpu_time();
        let before = ALLOCATIONS.load(Ordering::Relaxed);
        let start = Instant::now();
        let planned = plan_once();
        best = best.min(start.elapsed());
        allocations = ALLOCATIONS.load(Ordering::Relaxed) - before;
        if let (Some(a), Some(b)) = (cpu_start, cpu_time()) {
            best_cpu = best_cpu.min(b.saturating_sub(a));
        }
        drop(planned);
    }
    println!(
        "{name}: {:.1} ms per plan, {:.1} ns/partition (CPU time: {:.1} ms, {:.1} ns/partition), \
         {allocations} allocations per plan, {} bytes per entry",
        best.as_secs_f64() * 1e3,
        best.as_secs_f64() * 1e9 / N as f64,
        best_cpu.as_secs_f64() * 1e3,
        best_cpu.as_secs_f64() * 1e9 / N as f64,
        std::mem::size_of::<offset_engine::PlanEntry>(),
    );
}

fn bench(c: &mut Criterion) {
    let per_partition = request(Limits { max_per_partition: Some(5_000), ..Limits::default() });
    let with_total = request(Limits {
        max_per_partition: Some(5_000),
        max_per_batch: Some(1_000_000_000),
        time_budget: None,
    });
    report("plan_1m_partitions/per_partition_cap", &per_partition);
    report("plan_1m_partitions/per_partition_and_total_cap", &with_total);
    report_reused("plan_1m_partitions/per_partition_and_total_cap_into_previous_plan", &with_total);

    let mut group = c.benchmark_group("plan_1m_partitions");
    group.throughput(Throughput::Elements(N as u64));
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("per_partition_cap", |b| {
        b.iter(|| plan(black_box(&per_partition)));
    });
    group.bench_function("per_partition_and_total_cap", |b| {
        b.iter(|| plan(black_box(&with_total)));
    });
    let mut reused = plan(&with_total);
    group.bench_function("per_partition_and_total_cap_into_previous_plan", |b| {
        b.iter(|| plan_into(black_box(&with_total), black_box(&mut reused)));
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
