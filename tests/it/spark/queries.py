"""One Spark session that runs Structured Streaming queries on request, for tests/it/spark_store.rs.

Reads commands from stdin, one JSON object per line, and answers each with one JSON line on
stdout (Spark's own logs go to stderr):

  {"op": "run", "topic": T, "checkpoint": DIR, "output": DIR, "fail_on_data_loss": true}
      runs the query Kafka(subscribe T, startingOffsets earliest) -> JSON files in DIR, with
      trigger(availableNow=True): every record available at the start, then it stops.
      Answers {"ok": true} or {"ok": false, "error": "<the exception's text>"}.
      Optional: "compact_interval": N (the file sink log's
      spark.sql.streaming.fileSink.log.compactInterval, default Spark's 10),
      "max_offsets_per_trigger": N (more than one batch per run) and "retention": DURATION
      (the file sink's retention option, Spark's time string).
  {"op": "compact", "path": DIR, "batch": N, "retention": DURATION, "compact_interval": N}
      Spark's own compaction of a file sink's log: the FileStreamSinkLog of DIR/_spark_metadata,
      with that retention, adds batch N (a compaction batch) with no files of its own, as
      Spark's sink does for a batch that wrote none. Answers {"ok": true, "retention_ms": MS}.
  {"op": "read", "path": DIR}
      spark.read.json(DIR): reads a file sink's folder through its _spark_metadata log.
      Answers {"ok": true, "values": [...every record's value...]} or {"ok": false, "error": ...}.
  {"op": "batch_loop", "args": [ARG, ...]}
      runs examples/pyspark/batch_loop.py's loop with those command-line arguments in this
      session. Answers {"ok": true, "records": N, "rounds": [...per-round timings...]}.
  {"op": "quit"}

One JVM for every query of a test keeps the Spark tests to seconds per query, not tens.
"""

import contextlib
import io
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "pyspark"))
import batch_loop  # noqa: E402  (the example, run in this session)

from pyspark.sql import SparkSession


def compact(spark: SparkSession, cmd: dict) -> int:
    """Spark's FileStreamSinkLog(retention).add(batch, no files) on DIR's sink log."""
    jvm = spark._jvm
    spark.conf.set("spark.sql.streaming.fileSink.log.compactInterval", str(cmd["compact_interval"]))
    millis = jvm.org.apache.spark.util.Utils.timeStringAsMs(cmd["retention"])
    # Option[Long] built in the JVM: py4j would pass a small Python int as an Integer, which
    # the sink log's Long unboxing rejects.
    retention = spark._jsparkSession.sql(f"SELECT CAST({int(millis)} AS BIGINT)").head().toSeq().headOption()
    package = "org.apache.spark.sql.execution.streaming" + ("" if spark.version.startswith("3.") else ".sinks")
    log_class = jvm
    for part in (package + ".FileStreamSinkLog").split("."):
        log_class = getattr(log_class, part)
    metadata = os.path.join(cmd["path"], "_spark_metadata")
    log = log_class(1, spark._jsparkSession, metadata, retention)
    if not log.add(cmd["batch"], spark.sparkContext._gateway.new_array(jvm.java.lang.Object, 0)):
        raise RuntimeError(f"Spark's sink log already has batch {cmd['batch']}")
    return int(millis)


def main() -> None:
    jars = os.environ["KWIRE_SPARK_JARS"]
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("kwire-spark-store-tests")
        .config("spark.jars", jars)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "512m")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    bootstrap = os.environ["KWIRE_BOOTSTRAP"]
    print(json.dumps({"ok": True, "ready": True, "spark": spark.version}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["op"] == "quit":
            break
        if cmd["op"] == "batch_loop":
            rounds = io.StringIO()
            try:
                with contextlib.redirect_stderr(rounds):
                    records = batch_loop.run_loop(spark, batch_loop.options(cmd["args"]))
                answer = {"ok": True, "records": records,
                          "rounds": [json.loads(l) for l in rounds.getvalue().splitlines() if l.startswith("{")]}
            except (Exception, SystemExit) as e:
                answer = {"ok": False, "error": str(e)}
            print(json.dumps(answer), flush=True)
            continue
        if cmd["op"] == "compact":
            try:
                answer = {"ok": True, "retention_ms": compact(spark, cmd)}
            except Exception as e:
                answer = {"ok": False, "error": str(e)}
            print(json.dumps(answer), flush=True)
            continue
        if cmd["op"] == "read":
            try:
                rows = spark.read.json(cmd["path"]).select("value").collect()
                answer = {"ok": True, "values": [r["value"] for r in rows]}
            except Exception as e:  # the test records Spark's own error text
                answer = {"ok": False, "error": str(e)}
            print(json.dumps(answer), flush=True)
            continue
        try:
            # The sink log reads it when the query starts; every run sets it (or Spark's default).
            spark.conf.set("spark.sql.streaming.fileSink.log.compactInterval", str(cmd.get("compact_interval", 10)))
            reader = (
                spark.readStream.format("kafka")
                .option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", cmd["topic"])
                .option("startingOffsets", "earliest")
                .option("failOnDataLoss", "true" if cmd.get("fail_on_data_loss", True) else "false")
            )
            if cmd.get("max_offsets_per_trigger"):
                reader = reader.option("maxOffsetsPerTrigger", str(cmd["max_offsets_per_trigger"]))
            df = reader.load()
            writer = df.selectExpr("CAST(value AS STRING) AS value", "topic", "partition", "offset").writeStream
            if cmd.get("retention"):
                writer = writer.option("retention", cmd["retention"])
            query = (
                writer.format("json")
                .option("path", cmd["output"])
                .option("checkpointLocation", cmd["checkpoint"])
                .trigger(availableNow=True)
                .start()
            )
            query.awaitTermination()
            answer = {"ok": True}
        except Exception as e:  # the test records Spark's own error text
            answer = {"ok": False, "error": str(e)}
        print(json.dumps(answer), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
