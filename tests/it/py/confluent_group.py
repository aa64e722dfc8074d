"""Two librdkafka consumers (confluent-kafka) in one group: both subscribe and wait until each
has partitions, then a producer writes `n` records across the topic's partitions, the two
consume them all and commit synchronously. argv: bootstrap, topic, group, n, partitions.
Prints one JSON line: each member's assignment and count; any failure raises."""
import json
import sys
import time

from confluent_kafka import Consumer, Producer

bootstrap, topic, group, n, partitions = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
config = {
    "bootstrap.servers": bootstrap,
    "group.id": group,
    "auto.offset.reset": "earliest",
    "enable.auto.commit": False,
}
members = [Consumer(dict(config, **{"client.id": f"member-{i}"})) for i in range(2)]
for m in members:
    m.subscribe([topic])
deadline = time.monotonic() + 90
while not all(m.assignment() for m in members):
    if time.monotonic() > deadline:
        raise SystemExit(f"no assignment for both members: {[m.assignment() for m in members]}")
    for m in members:
        m.poll(0.2)
assignments = [sorted(p.partition for p in m.assignment()) for m in members]

producer = Producer({"bootstrap.servers": bootstrap})
for i in range(n):
    producer.produce(topic, value=f"group-{i}".encode(), partition=i % partitions)
if producer.flush(60) != 0:
    raise SystemExit("records left unsent")

counts = [0, 0]
deadline = time.monotonic() + 90
while sum(counts) < n:
    if time.monotonic() > deadline:
        raise SystemExit(f"consumed {counts} of {n}")
    for i, m in enumerate(members):
        msg = m.poll(0.2)
        if msg is not None and msg.error() is None:
            counts[i] += 1
for m in members:
    m.commit(asynchronous=False)
for m in members:
    m.close()
print(json.dumps({"assignments": assignments, "counts": counts}))
