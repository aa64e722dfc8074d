"""A PySpark job whose offsets kwire manages: the batch loop of seed 004, done right.

Each round:
  1. kwire's plan (the Python package `kwire`, `Client.plan`) names the next batch: for every
     partition `[from, until)`, as spark.read's `assign` / `startingOffsets` / `endingOffsets`
     (`kwire.AnomalyError` when the stored offsets no longer fit the log: a recreated topic,
     retention past them; nothing is read);
  2. Spark reads exactly those ranges (`spark.read.format("kafka")`, a batch read: the work
     runs on the executors) and writes the output into a folder named after the ranges, so a
     batch read again after a crash overwrites its own earlier attempt;
  3. only once the output is durable, `Plan.commit()` stores `until` of *every* partition in
     one write (seed 004 kept only the last partition's offset, and lost the others).

A driver killed at any moment re-reads at most the batch it was in: every record at least
once, none skipped, and the stored offsets never go backwards (kwire refuses a commit outside
the log). Run it with scripts/spark (the pinned PySpark and the Kafka connector), with the
package installed into that Python (`pip install ./python`, or PYTHONPATH=python after
`scripts/python-test --build-only`):

  scripts/spark run examples/pyspark/batch_loop.py --topic events --group job \
      --store file:/var/lib/job/offsets.json --output /data/events --max-per-partition 10000

Per round it prints two JSON lines on stderr: before the commit, the offsets it is about to
store (`committing`: [topic, partition, until] per partition), and after it, records and the
milliseconds of kwire's plan, Spark's read + write, and kwire's commit.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from typing import Any, Optional

import kwire


def plan(client: kwire.Client, opts: argparse.Namespace) -> Optional[kwire.Plan]:
    """The next batch, or None when no partition has a record to read."""
    try:
        batch = client.plan(opts.group, opts.topic, store=opts.store, start=opts.start,
                            max_per_partition=opts.max_per_partition)
    except kwire.AnomalyError as e:
        # The stored offsets do not fit the log; each anomaly names its partition and numbers.
        found = "; ".join(f"{a['topic']}:{a['partition']}: {a['anomaly']['message']}" for a in e.plan.anomalies
                          if a["action"].startswith("fail"))
        raise SystemExit(f"kwire plan failed ({e.kind}, exit {e.exit_code}): {e}: {found}") from e
    return batch if batch.records > 0 else None


def batch_folder(output: str, batch: kwire.Plan) -> str:
    """The output folder of a batch, named after its ranges: a batch re-read after a crash
    lands in the same folder and replaces the attempt that was never committed."""
    key = json.dumps([batch.spark_starting_offsets(), batch.spark_ending_offsets()], sort_keys=True)
    return os.path.join(output, "batch-" + hashlib.sha256(key.encode()).hexdigest()[:16])


def read_and_write(spark: Any, opts: argparse.Namespace, batch: kwire.Plan) -> None:
    df = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", opts.bootstrap)
        .option("assign", json.dumps(batch.spark_assign()))
        .option("startingOffsets", json.dumps(batch.spark_starting_offsets()))
        .option("endingOffsets", json.dumps(batch.spark_ending_offsets()))
        .load()
    )
    out = df.selectExpr("topic", "partition", "offset", "CAST(key AS STRING) AS key",
                        "CAST(value AS STRING) AS value")
    # Spark's file committer writes _SUCCESS after every task's output is in place.
    out.write.mode("overwrite").json(batch_folder(opts.output, batch))


def commit(batch: kwire.Plan) -> None:
    """Stores `until` of every partition of the batch in one write (a store that takes only
    some raises kwire.PartialWrite, naming each partition). First says on stderr what it is
    about to store (one JSON line), so the log shows every commit attempted, even one a crash
    cut short."""
    print(json.dumps({"committing": [[r["topic"], r["partition"], r["until"]] for r in batch.ranges]}),
          file=sys.stderr, flush=True)
    batch.commit()


def run_loop(spark: Any, opts: argparse.Namespace) -> int:
    """Runs rounds until a plan has no records (or `opts.batches` rounds); returns the number
    of records read."""
    client = kwire.Client(opts.bootstrap)
    total = 0
    rounds = 0
    while opts.batches is None or rounds < opts.batches:
        t0 = time.monotonic()
        batch = plan(client, opts)
        t1 = time.monotonic()
        if batch is None:
            break
        read_and_write(spark, opts, batch)
        t2 = time.monotonic()
        commit(batch)
        t3 = time.monotonic()
        rounds += 1
        total += batch.records
        print(json.dumps({"records": batch.records, "plan_ms": round((t1 - t0) * 1000, 1),
                          "spark_ms": round((t2 - t1) * 1000, 1), "commit_ms": round((t3 - t2) * 1000, 1)}),
              file=sys.stderr, flush=True)
    return total


def options(argv: Optional[list[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--topic", action="append", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--store", default="kafka", help="kafka, zk, file:PATH or spark:PATH")
    p.add_argument("--output", required=True)
    p.add_argument("--start", default="earliest", choices=["earliest", "latest", "fail"])
    p.add_argument("--max-per-partition", type=int, default=10000)
    p.add_argument("--batches", type=int, default=None, help="stop after this many (default: when caught up)")
    p.add_argument("--bootstrap", default=os.environ.get("KWIRE_BOOTSTRAP"))
    opts = p.parse_args(argv)
    if not opts.bootstrap:
        p.error("--bootstrap or KWIRE_BOOTSTRAP is required")
    return opts


def main() -> None:
    from pyspark.sql import SparkSession

    opts = options()
    builder = SparkSession.builder.master(os.environ.get("SPARK_MASTER", "local[2]")).appName("kwire-batch-loop")
    if os.environ.get("KWIRE_SPARK_JARS"):
        builder = builder.config("spark.jars", os.environ["KWIRE_SPARK_JARS"])
    # No console progress bar: it would garble the per-round JSON lines on stderr.
    spark = (builder.config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("WARN")
    try:
        total = run_loop(spark, opts)
        print(json.dumps({"records": total}))
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
