"""A librdkafka transactional producer (confluent-kafka): one transaction aborted, then one
committed. argv: bootstrap, topic, transactional id, records per transaction. Prints one JSON
line with what it did; any failure raises (exit status 1)."""
import json
import sys

from confluent_kafka import Producer

bootstrap, topic, transactional_id, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "linger.ms": 5})
producer.init_transactions(60)
delivered = {"aborted": 0, "committed": 0}


def counted(kind):
    def on_delivery(err, _msg):
        if err is None:
            delivered[kind] += 1

    return on_delivery


for kind, finish in (("aborted", producer.abort_transaction), ("committed", producer.commit_transaction)):
    producer.begin_transaction()
    for i in range(n):
        producer.produce(topic, value=f"{kind}-{i}".encode(), on_delivery=counted(kind))
    producer.flush(60)
    finish(60)
print(json.dumps({"delivered": delivered}))
