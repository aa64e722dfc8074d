"""A typed user of the package (checked with `mypy --strict` by python/tests): every method of
kwire.Client and kwire.Plan, and kwire.decode.

    python typed_user.py BOOTSTRAP GROUP TOPIC [--commit] [--decode-hex HEX]

Prints the topic's partitions and log ends, the group's lag (or that it has none), the next
batch as Spark's offsets, and (with --commit) commits it.
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Dict, List, Optional

import kwire


def lag_by_partition(client: kwire.Client, group: str, topic: str) -> Optional[Dict[int, Optional[int]]]:
    try:
        described = client.describe_group(group, store="kafka", topics=[topic])
    except kwire.NotFound:
        return None
    partitions: List[Dict[str, Any]] = described["partitions"]
    return {int(p["partition"]): p["lag"] for p in partitions}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("bootstrap")
    parser.add_argument("group")
    parser.add_argument("topic")
    parser.add_argument("--commit", action="store_true")
    parser.add_argument("--decode-hex")
    args = parser.parse_args(argv)

    client = kwire.Client(args.bootstrap, {"client.id": "typed-user"}, timeout=10.0)
    meta = client.metadata([args.topic])
    print("partitions:", [p["partition"] for p in meta["topics"][0]["partitions"]])
    ends = client.offsets([args.topic], at="latest")
    print("log ends:", {p["partition"]: p["offset"] for p in ends["partitions"]})
    print("lag:", lag_by_partition(client, args.group, args.topic))

    try:
        plan: kwire.Plan = client.plan(args.group, [args.topic], start="earliest",
                                       on_out_of_range="fail", max_per_partition=1000, max_total=None)
    except kwire.AnomalyError as e:
        for entry in e.plan.anomalies:
            print("anomaly:", entry["partition"], entry["anomaly"]["message"])
        return e.exit_code
    print("records:", plan.records, "failed:", plan.failed, "group:", plan.group, "store:", plan.store)
    print("ranges:", [(r["partition"], r["from"], r["until"]) for r in plan.ranges])
    print("anomalies:", len(plan.anomalies))
    print("assign:", json.dumps(plan.spark_assign()))
    print("startingOffsets:", json.dumps(plan.spark_starting_offsets()))
    print("endingOffsets:", json.dumps(plan.spark_ending_offsets()))
    print("plan document keys:", sorted(plan.document))
    if args.commit:
        done = plan.commit()
        print("committed:", [(c["partition"], c["committed"]) for c in done["committed"]])
        first = plan.ranges[0] if plan.ranges else None
        if first is not None:
            again = client.commit(args.group, {(args.topic, int(first["partition"])): int(first["until"])})
            print("committed again:", again["committed"][0]["status"])
    if args.decode_hex:
        decoded = kwire.decode("Metadata", 12, bytes.fromhex(args.decode_hex), request=True, frame=True)
        print("decoded:", decoded["api"], decoded["version"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
