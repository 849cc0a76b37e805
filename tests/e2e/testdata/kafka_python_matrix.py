"""kafka-python against a bftlog Kafka gateway: one line of JSON per capability.

Usage: kafka_python_matrix.py BOOTSTRAP TOPIC
Each line is {"capability": ..., "ok": bool, "detail": ...}; the Go test decides.
"""
import json
import sys
import time

import kafka
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

bootstrap, topic = sys.argv[1], sys.argv[2]
CODECS = [None, "gzip", "snappy", "lz4", "zstd"]


def report(capability, ok, detail=""):
    print(json.dumps({"capability": capability, "ok": bool(ok), "detail": str(detail)}), flush=True)


def attempt(capability, fn):
    try:
        ok, detail = fn()
    except Exception as e:  # any failure is a result, not a crash of the matrix
        ok, detail = False, "%s: %s" % (type(e).__name__, e)
    report(capability, ok, detail)
    return ok


report("version", True, kafka.__version__)
admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="py-matrix", request_timeout_ms=30000)


def create():
    admin.create_topics([NewTopic(name=topic, num_partitions=2, replication_factor=1)])
    return True, "2 partitions"


attempt("admin create topic", create)


def metadata():
    c = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        for _ in range(50):
            parts = c.partitions_for_topic(topic)
            if parts:
                return parts == {0, 1}, sorted(parts)
            time.sleep(0.2)
        return False, "topic not in metadata"
    finally:
        c.close()


attempt("metadata", metadata)

sent = []
for codec in CODECS:
    def produce(codec=codec):
        p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", compression_type=codec, linger_ms=5)
        try:
            key, value = ("k-%s" % codec).encode(), ("v-%s" % codec).encode()
            md = p.send(topic, key=key, value=value, headers=[("codec", str(codec).encode())]).get(timeout=60)
            sent.append((md.partition, md.offset, key, value, str(codec).encode()))
            return True, "partition %d offset %d" % (md.partition, md.offset)
        finally:
            p.close()

    attempt("produce %s" % (codec or "none"), produce)


def fetch():
    c = KafkaConsumer(bootstrap_servers=bootstrap, consumer_timeout_ms=10000, auto_offset_reset="earliest")
    try:
        c.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
        c.seek_to_beginning()
        got = {}
        for m in c:
            got[(m.partition, m.offset)] = (m.key, m.value, dict(m.headers).get("codec"))
            if len(got) == len(sent):
                break
        want = {(p, o): (k, v, h) for p, o, k, v, h in sent}
        return got == want, "%d of %d records, keys, values and headers equal" % (len(got), len(want))
    finally:
        c.close()


attempt("fetch", fetch)


def group():
    c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id="py-matrix-group", auto_offset_reset="earliest",
                      enable_auto_commit=False, consumer_timeout_ms=20000, session_timeout_ms=10000,
                      heartbeat_interval_ms=1000)
    try:
        n = 0
        for _ in c:
            n += 1
            if n == len(sent):
                break
        c.commit()
        committed = sum(c.committed(TopicPartition(topic, p)) or 0 for p in (0, 1))
        return n == len(sent) and committed == len(sent), "read %d, committed offsets sum %d" % (n, committed)
    finally:
        c.close()


attempt("consumer group with commits", group)


def delete():
    admin.delete_topics([topic])
    return True, "deleted"


attempt("admin delete topic", delete)
admin.close()
