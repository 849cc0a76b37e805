package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/bftlog/bftlog/testutil/node"
	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// idempotentBatch is n records as a Kafka idempotent producer's batch: producer id, epoch 0,
// base sequence seq.
func idempotentBatch(t *testing.T, n int, pid int64, seq int32) []byte {
	var recs []types.BatchRecord
	for i := 0; i < n; i++ {
		recs = append(recs, types.BatchRecord{Value: &types.Bytes{Data: []byte(fmt.Sprintf("seq %d record %d", seq, i))}})
	}
	raw, err := types.EncodeRecordBatch(recs, kbatch.CompressionNone)
	require.NoError(t, err)
	return kbatch.WithProducer(raw, pid, 0, seq)
}

// produceRaw sends one Produce request (acks=-1) with batch for partition 0 to the gateway at
// addr and returns Kafka's error code and the base offset.
func produceRaw(ctx context.Context, t *testing.T, addr, topic string, batch []byte) (int16, int64) {
	// Produce v13 names topics by ID: this request names its topic, as up to v12.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.MaxVersions(kversion.V4_0_0()))
	require.NoError(t, err)
	defer cl.Close()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = 0, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	res, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	p := res.Topics[0].Partitions[0]
	return p.ErrorCode, p.BaseOffset
}

// TestKafkaIdempotenceAcrossGateways: a Kafka idempotent producer's retry is answered with the
// original offsets, never appended twice, whichever gateway it reaches and after the first
// gateway restarts: the chain keeps the producer's last five batches. Five batches in flight
// are retried in another order; a gap is OUT_OF_ORDER_SEQUENCE.
func TestKafkaIdempotenceAcrossGateways(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	n := node.StartSingle(t, "alice")
	createTopic(n, "alice", "idem", 1)
	gw1, gw2 := startGateway(t, n, "alice"), startGateway(t, n, "alice")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const pid = 123456789
	var batches [][]byte
	var offsets []int64
	seq := int32(0)
	for i := 0; i < 5; i++ {
		b := idempotentBatch(t, i+1, pid, seq)
		code, off := produceRaw(ctx, t, gw1.Addr(), "idem", b)
		require.Zero(t, code, "batch %d", i)
		batches, offsets = append(batches, b), append(offsets, off)
		seq += int32(i + 1)
	}
	// The same five, retried through the other gateway in another order.
	for _, i := range []int{4, 2, 0, 3, 1} {
		code, off := produceRaw(ctx, t, gw2.Addr(), "idem", batches[i])
		require.Zero(t, code)
		require.Equal(t, offsets[i], off, "retry of batch %d through the other gateway", i)
	}
	// Gateway 1 restarts (a new process would be the same: nothing is kept in it).
	require.NoError(t, gw1.Close())
	gw3 := startGateway(t, n, "alice")
	code, off := produceRaw(ctx, t, gw3.Addr(), "idem", batches[3])
	require.Zero(t, code)
	require.Equal(t, offsets[3], off, "retry after a gateway restart")
	code, _ = produceRaw(ctx, t, gw3.Addr(), "idem", idempotentBatch(t, 1, pid, seq+7))
	require.Equal(t, kerr.OutOfOrderSequenceNumber.Code, code)

	var hw struct {
		Partitions []struct {
			HighWatermark string `json:"high_watermark"`
		} `json:"partitions"`
	}
	require.NoError(t, json.Unmarshal([]byte(n.MustCLI("", "query", "topics", "partitions", "idem", "-o", "json")), &hw))
	require.Equal(t, "15", hw.Partitions[0].HighWatermark, "1+2+3+4+5 records, each once")

	// librdkafka's idempotent producer with five requests in flight: 500 records, each once.
	kcat, err := exec.LookPath("kcat")
	require.NoError(t, err)
	var lines strings.Builder
	for i := 0; i < 500; i++ {
		fmt.Fprintf(&lines, "rdkafka-%d\n", i)
	}
	cmd := exec.CommandContext(ctx, kcat, "-b", gw3.Addr(), "-P", "-t", "idem", "-p", "0", "-X", "enable.idempotence=true",
		"-X", "max.in.flight.requests.per.connection=5", "-X", "batch.num.messages=20", "-X", "linger.ms=0")
	cmd.Stdin = strings.NewReader(lines.String())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	require.NoError(t, json.Unmarshal([]byte(n.MustCLI("", "query", "topics", "partitions", "idem", "-o", "json")), &hw))
	require.Equal(t, "515", hw.Partitions[0].HighWatermark, "kcat's 500 records, each once")
	t.Logf("5 idempotent batches (15 records) sent through gateway 1, all 5 retried through gateway 2 and one after a restart: same offsets, high watermark 15; kcat idempotent with 5 in flight: 500 records, 500 appended")
}
