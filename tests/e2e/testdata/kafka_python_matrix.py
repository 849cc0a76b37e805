"""kafka-python against a bftlog Kafka gateway: one line of JSON per capability.

Usage: kafka_python_matrix.py BOOTSTRAP TOPIC
Each line is {"capability": ..., "ok": bool, "detail": ...}; the Go test decides.
After the consumer group's row (group py-matrix-group, committed offsets summing to the records
sent) the script reads one line from stdin before the admin rows delete the group: the Go test
checks the commits on chain meanwhile. With stdin at its end (e.g. </dev/null) it goes straight on.
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
sys.stdin.readline()  # the Go test has read the group's committed offsets on chain


def groups_admin():
    listed = dict(admin.list_consumer_groups())
    if listed.get("py-matrix-group") != "consumer":
        return False, "list_consumer_groups: %s" % listed
    d = admin.describe_consumer_groups(["py-matrix-group"])[0]
    if d.state != "Empty" or d.members:
        return False, "describe_consumer_groups: state %s, %d members" % (d.state, len(d.members))
    offsets = admin.list_consumer_group_offsets("py-matrix-group")
    if sum(o.offset for o in offsets.values()) != len(sent):
        return False, "list_consumer_group_offsets: %s" % offsets
    deleted = admin.delete_consumer_groups(["py-matrix-group"])
    if [e.__name__ for _, e in deleted] != ["NoError"]:
        return False, "delete_consumer_groups: %s" % deleted
    gone = "py-matrix-group" not in dict(admin.list_consumer_groups())
    return gone, "listed, described (Empty), offsets, deleted"


attempt("admin consumer groups", groups_admin)


def alter_configs():
    from kafka.admin import ConfigResource, ConfigResourceType
    admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": "3600000"})])
    res = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    got = {c[0]: c[1] for c in res[0].resources[0][4]}
    return got.get("retention.ms") == "3600000", "retention.ms %s after AlterConfigs" % got.get("retention.ms")


attempt("admin alter configs", alter_configs)


def acls():
    from kafka.admin import ACLFilter, ACLOperation, ACLPermissionType, ResourcePatternFilter, ResourceType, ACLResourcePatternType
    f = ACLFilter(principal=None, host="*", operation=ACLOperation.ANY, permission_type=ACLPermissionType.ANY,
                  resource_pattern=ResourcePatternFilter(ResourceType.TOPIC, topic, ACLResourcePatternType.ANY))
    found, err = admin.describe_acls(f)
    return err.__name__ == "NoError" and found == [], "describe_acls: %d ACLs, %s" % (len(found), err.__name__)


attempt("admin describe acls", acls)


def delete():
    admin.delete_topics([topic])
    return True, "deleted"


attempt("admin delete topic", delete)
admin.close()
