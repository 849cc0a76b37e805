package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bftlog/bftlog/testutil/node"
)

// matrixRow is one client's result for one capability.
type matrixRow struct {
	client, capability string
	ok                 bool
	detail             string
}

// TestKafkaClientMatrix runs four independent Kafka client implementations — librdkafka
// (kcat), franz-go, kafka-python and segmentio/kafka-go — through one gateway: metadata,
// produce with keys and headers in every codec the client has, fetch, a consumer group with
// commits (checked on chain), and admin create/delete topic where the client has it. It prints
// the matrix (the table of docs/kafka.md) and fails on any capability that does not work; then,
// per API key, the range the gateway advertises and the versions each client sent (recorded by
// the gateway's OnRequest hook).
func TestKafkaClientMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	kcat, err := exec.LookPath("kcat")
	require.NoError(t, err)
	n := node.StartSingle(t, "alice")
	gw, sent := startRecordingGateway(t, n, "alice")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var rows []matrixRow
	add := func(client, capability string, err error, detail string) {
		rows = append(rows, matrixRow{client: client, capability: capability, ok: err == nil, detail: detail})
		if err != nil {
			rows[len(rows)-1].detail = err.Error()
		}
	}
	codecs := []string{"none", "gzip", "snappy", "lz4", "zstd"}

	// franz-go: every capability, admin with kmsg requests.
	adm := must(kgo.NewClient(kgo.SeedBrokers(gw.Addr())))
	defer adm.Close()
	create := kmsg.NewPtrCreateTopicsRequest()
	create.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "m-franz", NumPartitions: 2, ReplicationFactor: -1}}
	cres, err := create.RequestWith(ctx, adm)
	if err == nil {
		err = kerr.ErrorForCode(cres.Topics[0].ErrorCode)
	}
	add("franz-go", "admin create topic", err, "2 partitions")
	mreq := kmsg.NewPtrMetadataRequest()
	mreq.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("m-franz")}}
	mres, err := mreq.RequestWith(ctx, adm)
	if err == nil && (len(mres.Topics) != 1 || len(mres.Topics[0].Partitions) != 2) {
		err = fmt.Errorf("metadata: %+v", mres.Topics)
	}
	add("franz-go", "metadata", err, "")
	codec := map[string]kgo.CompressionCodec{"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(), "lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression()}
	for _, c := range codecs {
		cl := must(kgo.NewClient(kgo.SeedBrokers(gw.Addr()), kgo.ProducerBatchCompression(codec[c])))
		r := cl.ProduceSync(ctx, &kgo.Record{Topic: "m-franz", Key: []byte("k-" + c), Value: []byte("v-" + c), Headers: []kgo.RecordHeader{{Key: "codec", Value: []byte(c)}}})
		cl.Close()
		add("franz-go", "produce "+c, r.FirstErr(), "")
	}
	consumer := must(kgo.NewClient(kgo.SeedBrokers(gw.Addr()), kgo.ConsumerGroup("m-franz-group"), kgo.ConsumeTopics("m-franz"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit()))
	// Every record compared byte for byte with what was produced (key, value, its one header),
	// each once; a poll error fails the row.
	got := map[string]bool{}
	var fetchErr error
	pollCtx, pollCancel := context.WithTimeout(ctx, time.Minute)
	for len(got) < len(codecs) && fetchErr == nil {
		fs := consumer.PollFetches(pollCtx)
		fs.EachError(func(topic string, p int32, err error) {
			fetchErr = errors.Join(fetchErr, fmt.Errorf("poll %s/%d: %w", topic, p, err))
		})
		fs.EachRecord(func(r *kgo.Record) {
			if len(r.Headers) != 1 || r.Headers[0].Key != "codec" {
				fetchErr = errors.Join(fetchErr, fmt.Errorf("offset %d/%d: headers %v", r.Partition, r.Offset, r.Headers))
				return
			}
			c := string(r.Headers[0].Value)
			if _, ok := codec[c]; !ok || got[c] || !bytes.Equal(r.Key, []byte("k-"+c)) || !bytes.Equal(r.Value, []byte("v-"+c)) {
				fetchErr = errors.Join(fetchErr, fmt.Errorf("offset %d/%d: key %q value %q codec %q (read before: %v)", r.Partition, r.Offset, r.Key, r.Value, c, got[c]))
				return
			}
			got[c] = true
		})
	}
	pollCancel()
	add("franz-go", "fetch", fetchErr, fmt.Sprintf("%d records, keys, values and headers equal", len(got)))
	err = consumer.CommitUncommittedOffsets(ctx)
	consumer.Close()
	if err == nil {
		err = chainCommittedSum(n, "m-franz-group", len(codecs))
	}
	add("franz-go", "consumer group with commits", err, "")
	del := kmsg.NewPtrDeleteTopicsRequest()
	// Names in both fields: v0-v5 carry TopicNames, v6+ (the version franz-go picks) Topics.
	del.TopicNames = []string{"m-franz"}
	del.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr("m-franz")}}
	dres, err := del.RequestWith(ctx, adm)
	if err == nil {
		err = kerr.ErrorForCode(dres.Topics[0].ErrorCode)
	}
	add("franz-go", "admin delete topic", err, "")

	// kcat (librdkafka 2.0): no admin commands; the topic comes from the CLI.
	createTopic(n, "alice", "m-kcat", 2)
	run := func(stdin string, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, kcat, append([]string{"-b", gw.Addr()}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return string(out), fmt.Errorf("%v: %s", err, out)
		}
		return string(out), nil
	}
	out, err := run("", "-L", "-t", "m-kcat")
	if err == nil && !strings.Contains(out, "2 partitions") {
		err = fmt.Errorf("kcat -L: %s", out)
	}
	add("kcat", "metadata", err, "")
	for _, c := range codecs {
		_, err := run("k-"+c+":v-"+c+"\n", "-P", "-t", "m-kcat", "-K", ":", "-H", "codec="+c, "-z", c)
		add("kcat", "produce "+c, err, "")
	}
	out, err = run("", "-C", "-t", "m-kcat", "-o", "beginning", "-e", "-q", "-f", "%k=%s %h\n")
	if err == nil {
		for _, c := range codecs {
			if !strings.Contains(out, "k-"+c+"=v-"+c+" codec="+c) {
				err = fmt.Errorf("record of %s missing: %s", c, out)
			}
		}
	}
	add("kcat", "fetch", err, "")
	out, err = run("", "-G", "m-kcat-group", "-X", "auto.offset.reset=earliest", "-e", "-q", "-f", "%s\n", "m-kcat")
	if err == nil && strings.Count(out, "v-") != len(codecs) {
		err = fmt.Errorf("group read %d records: %s", strings.Count(out, "v-"), out)
	}
	if err == nil {
		err = chainCommittedSum(n, "m-kcat-group", len(codecs))
	}
	add("kcat", "consumer group with commits", err, "")
	rows = append(rows, matrixRow{client: "kcat", capability: "admin create topic", ok: true, detail: "n/a: kcat has no admin commands"},
		matrixRow{client: "kcat", capability: "admin delete topic", ok: true, detail: "n/a: kcat has no admin commands"})

	// kafka-python 2.0.2 (Debian's python3-kafka, /usr/bin/python3). Its group row reads the
	// committed offsets back with OffsetFetch, which the gateway answers from the commits it has
	// admitted; so the script waits after that row (a line on its stdin) while the group's
	// offsets are read from the chain, before its admin rows delete the group.
	py := exec.CommandContext(ctx, "/usr/bin/python3", "testdata/kafka_python_matrix.py", gw.Addr(), "m-python")
	var stderr bytes.Buffer
	py.Stderr = &stderr
	pyIn, err := py.StdinPipe()
	require.NoError(t, err)
	pyOut, err := py.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, py.Start())
	chainChecked := false
	sc := bufio.NewScanner(pyOut)
	for sc.Scan() {
		var r struct {
			Capability string `json:"capability"`
			OK         bool   `json:"ok"`
			Detail     string `json:"detail"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r), sc.Text())
		if r.Capability == "version" {
			continue
		}
		if r.Capability == "consumer group with commits" {
			if r.OK {
				if err := chainCommittedSum(n, "py-matrix-group", len(codecs)); err != nil {
					r.OK, r.Detail = false, r.Detail+"; "+err.Error()
				} else {
					r.Detail += "; on chain too"
				}
			}
			chainChecked = true
			_, err := pyIn.Write([]byte("\n"))
			require.NoError(t, err)
		}
		rows = append(rows, matrixRow{client: "kafka-python", capability: r.Capability, ok: r.OK, detail: r.Detail})
	}
	require.NoError(t, sc.Err())
	require.NoError(t, py.Wait(), "kafka-python matrix: %s", stderr.String())
	require.True(t, chainChecked, "kafka-python's group row never came: %s", stderr.String())

	// segmentio/kafka-go, the Go client many services use (kafka_go_matrix_test.go).
	rows = append(rows, kafkaGoMatrix(ctx, n, gw.Addr(), "m-kafka-go", codecs)...)

	sort.SliceStable(rows, func(i, j int) bool { return rows[i].client < rows[j].client })
	var table strings.Builder
	for _, r := range rows {
		mark := "pass"
		if !r.ok {
			mark = "FAIL"
		}
		fmt.Fprintf(&table, "%-13s %-30s %s %s\n", r.client, r.capability, mark, r.detail)
	}
	t.Logf("Kafka client matrix through the gateway:\n%s", table.String())
	adv, err := advertisedVersions(ctx, adm)
	require.NoError(t, err)
	t.Logf("Request versions each client sent (client ids: kcat rdkafka, franz-go kgo, kafka-python py-matrix and kafka-python-*, kafka-go kafka-go-matrix):\n%s",
		versionTable(adv, sent, []versionColumn{
			{"kcat", func(id string) bool { return id == "rdkafka" }},
			{"franz-go", func(id string) bool { return id == "kgo" }},
			{"kafka-python", func(id string) bool { return id == "py-matrix" || strings.HasPrefix(id, "kafka-python") }},
			{"kafka-go", func(id string) bool { return id == kafkaGoClientID }},
		}))
	for _, r := range rows {
		require.True(t, r.ok, "%s: %s: %s", r.client, r.capability, r.detail)
	}
	// Every client has every row, and kafka-python its admin client's three more (consumer
	// groups, legacy AlterConfigs, ACLs); franz-go's kadm has its own tests (kafka_admin_test.go).
	require.Len(t, rows, 4*(5+len(codecs))+3, "every client has every row")
}
