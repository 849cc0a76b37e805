// Package e2e drives a real bftlogd process through its CLI.
package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/testutil/node"
	"github.com/bftlog/bftlog/x/topics/client/cli"
	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

type partitionsJSON struct {
	Partitions []struct {
		Partition     uint32 `json:"partition"`
		HighWatermark string `json:"high_watermark"`
		RecordCount   string `json:"record_count"`
	} `json:"partitions"`
}

func watermarks(t *testing.T, n *node.Node, topic string) []string {
	t.Helper()
	var ps partitionsJSON
	require.NoError(t, json.Unmarshal([]byte(n.MustCLI("", "query", "topics", "partitions", topic, "-o", "json")), &ps))
	out := make([]string, len(ps.Partitions))
	for i, p := range ps.Partitions {
		out[i] = p.HighWatermark
	}
	return out
}

// TestCLIProduceConsume builds bftlogd, starts it, produces 1,000 keyed records over several
// partitions with the CLI and consumes them back, comparing every key, value, header and offset.
func TestCLIProduceConsume(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real node")
	}
	n := node.StartSingle(t, "alice", "bob")
	const topic, partitions, total = "e2e.orders", 4, 1000

	out := createTopic(n, "alice", topic, partitions)
	require.Contains(t, out, "created topic "+topic)

	// 1,000 keyed records from a file, sent as several transactions (batch-records 300).
	var lines strings.Builder
	for i := 0; i < total; i++ {
		fmt.Fprintf(&lines, "user-%d:event %d with spaces\n", i%37, i)
	}
	file := filepath.Join(t.TempDir(), "records.txt")
	require.NoError(t, os.WriteFile(file, []byte(lines.String()), 0o644))
	res := n.CLI("", "tx", "topics", "produce", topic, "--file", file, "--key-separator", ":",
		"--header", "source=e2e", "--header", "trace=a=b", "--batch-records", "300", "--from", "bob", "-o", "json")
	require.NoError(t, res.Err, "stdout: %s\nstderr: %s", res.Stdout, res.Stderr)
	require.Contains(t, res.Stderr, "committed 1000/1000 records", "progress line for a multi-batch produce")
	var produced cli.ProduceOutput
	require.NoError(t, json.Unmarshal([]byte(lastLine(res.Stdout)), &produced))
	require.Equal(t, uint64(total), produced.Records)
	require.Len(t, produced.TxHashes, 4)

	// Expected placement: Kafka's partitioner on the key, offsets in produce order per partition.
	type want struct{ key, value string }
	expected := make([][]want, partitions)
	for i := 0; i < total; i++ {
		key := fmt.Sprintf("user-%d", i%37)
		p := types.KeyPartition([]byte(key), partitions)
		expected[p] = append(expected[p], want{key, fmt.Sprintf("event %d with spaces", i)})
	}
	used := 0
	for p := range expected {
		if len(expected[p]) > 0 {
			used++
		}
	}
	require.GreaterOrEqual(t, used, 3, "records should spread over several partitions")

	// Acknowledged offsets match what consume returns.
	ackCount := map[uint32]uint64{}
	for _, r := range produced.Results {
		require.Equal(t, ackCount[r.Partition], r.BaseOffset, "acknowledged base offsets are contiguous")
		ackCount[r.Partition] += uint64(r.Count)
	}

	consumed := n.MustCLI("", "query", "topics", "consume", topic, "--from-beginning", "-o", "json")
	got := make([][]cli.ConsumedRecord, partitions)
	sc := bufio.NewScanner(strings.NewReader(consumed))
	for sc.Scan() {
		var r cli.ConsumedRecord
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r), sc.Text())
		got[r.Partition] = append(got[r.Partition], r)
	}
	count, bob := 0, n.Address("bob")
	for p := uint32(0); p < partitions; p++ {
		require.Len(t, got[p], len(expected[p]), "partition %d", p)
		require.Equal(t, uint64(len(expected[p])), ackCount[p], "partition %d acknowledged", p)
		for i, r := range got[p] {
			require.Equal(t, uint64(i), r.Offset)
			require.NotNil(t, r.Key)
			require.Equal(t, expected[p][i].key, *r.Key)
			require.Equal(t, expected[p][i].value, *r.Value)
			require.Equal(t, []cli.JSONHeader{{Key: "source", Value: "e2e"}, {Key: "trace", Value: "a=b"}}, r.Headers)
			require.Equal(t, bob, r.Producer)
			require.NotZero(t, r.CreateTimeMs)
			require.NotZero(t, r.LogAppendTimeMs)
			count++
		}
	}
	require.Equal(t, total, count)

	// Text output with --partition/--offset/--max, like kafka-console-consumer.
	text := n.MustCLI("", "query", "topics", "consume", topic, "--partition", fmt.Sprint(types.KeyPartition([]byte("user-0"), partitions)),
		"--offset", "0", "--max", "1", "--print-key", "--print-offset", "--key-separator", "|")
	require.Equal(t, "Offset:0|user-0|event 0 with spaces\n", text)

	// A rejected produce names the error and code, and leaves every watermark unchanged.
	before := watermarks(t, n, topic)
	bad := n.CLI("", "tx", "topics", "produce", topic, "x", "--partition", "9", "--from", "bob")
	require.Error(t, bad.Err)
	require.Contains(t, bad.Stderr, "partition out of range")
	require.Contains(t, bad.Stderr, "code 5")
	bigFile := filepath.Join(t.TempDir(), "big.txt")
	require.NoError(t, os.WriteFile(bigFile, []byte(strings.Repeat("x", types.DefaultMaxRecordBytes+1)+"\n"), 0o644))
	big := n.CLI("", "tx", "topics", "produce", topic, "--file", bigFile, "--from", "bob")
	require.Error(t, big.Err)
	require.Contains(t, big.Stderr, "record too large")
	unknown := n.CLI("", "tx", "topics", "produce", "no-such-topic", "x", "--from", "bob")
	require.Error(t, unknown.Err)
	require.Contains(t, unknown.Stderr, "unknown topic")
	require.Equal(t, before, watermarks(t, n, topic))

	// A consumer group: read 100 records, then the rest from the committed offsets, then reset.
	first := n.MustCLI("", "query", "topics", "consume", topic, "--group", "billing", "--max", "100", "-o", "json", "--from", "alice")
	require.Len(t, strings.Split(strings.TrimSpace(first), "\n"), 100)
	var lag struct {
		Lags []struct {
			Lag       string `json:"lag"`
			Committed string `json:"committed"`
		} `json:"lags"`
	}
	require.NoError(t, json.Unmarshal([]byte(n.MustCLI("", "query", "topics", "lag", "billing", "-o", "json")), &lag))
	require.Len(t, lag.Lags, partitions)
	rest := n.MustCLI("", "query", "topics", "consume", topic, "--group", "billing", "-o", "json", "--from", "alice")
	require.Len(t, strings.Split(strings.TrimSpace(rest), "\n"), total-100, "the second run continues from the committed offsets")
	lag.Lags = nil // proto JSON omits zero fields: decode into fresh structs
	require.NoError(t, json.Unmarshal([]byte(n.MustCLI("", "query", "topics", "lag", "billing", "-o", "json")), &lag))
	for _, l := range lag.Lags {
		require.Contains(t, []string{"", "0"}, l.Lag, "fully consumed: %+v", lag)
	}
	out = n.MustCLI("", "tx", "topics", "reset-offsets", "billing", topic, "--to-earliest", "--from", "alice")
	require.Contains(t, out, "reset group billing")
	again := n.MustCLI("", "query", "topics", "consume", topic, "--group", "billing", "--max", "10", "-o", "json", "--from", "alice")
	require.Len(t, strings.Split(strings.TrimSpace(again), "\n"), 10)
	bad = n.CLI("", "tx", "topics", "reset-offsets", "billing", topic, "--to-earliest", "--from", "bob")
	require.Error(t, bad.Err)
	require.Contains(t, bad.Stderr, "code 35") // not authorized for group

	// Fetch past the high watermark is a plain, coded error.
	oor := n.CLI("", "query", "topics", "consume", topic, "--partition", "0", "--offset", "100000")
	require.Error(t, oor.Err)
	require.Contains(t, oor.Stderr, "offset out of range")

	checkCompressedProduce(t, n)
}

// checkCompressedProduce produces the same repetitive records with --compression lz4 and
// without: consumers read both back identically, and the lz4 batch is stored compressed, as it
// was produced, in far fewer bytes.
func checkCompressedProduce(t *testing.T, n *node.Node) {
	t.Helper()
	var lines strings.Builder
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&lines, "sensor-%d:%s reading %d\n", i%3, strings.Repeat("temperature=21.5C humidity=40% ", 8), i)
	}
	file := filepath.Join(t.TempDir(), "repetitive.txt")
	require.NoError(t, os.WriteFile(file, []byte(lines.String()), 0o644))
	consumed := map[string]string{}
	stored := map[string]uint64{}
	for _, codec := range []string{"none", "lz4"} {
		topic := "e2e.codec-" + codec
		createTopic(n, "alice", topic, 1)
		n.MustCLI("", "tx", "topics", "produce", topic, "--file", file, "--key-separator", ":", "--header", "unit=si",
			"--compression", codec, "--from", "bob")
		out := n.MustCLI("", "query", "topics", "consume", topic, "--from-beginning", "--print-offset", "--print-key", "--print-headers")
		require.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 200, codec)
		consumed[codec] = out

		res, err := types.NewQueryClient(n.MustClientCtx()).Fetch(context.Background(),
			&types.QueryFetchRequest{Topic: topic, Partition: 0, Offset: 0, Format: types.FETCH_FORMAT_BATCHES})
		require.NoError(t, err)
		require.Len(t, res.Batches, 1, "one transaction, one partition: one batch")
		b := res.Batches[0]
		require.NoError(t, b.CheckStored())
		info, err := kbatch.CheckRecordBatch(b.RecordBatch, kbatch.BatchLimits{MaxRecordBytes: 1 << 20, MaxDecompressedBytes: 4 << 20, MaxHeaders: 64})
		require.NoError(t, err)
		want, _ := kbatch.ParseCompression(codec)
		require.Equal(t, want, info.Compression, "stored as produced")
		stored[codec] = b.SizeBytes
	}
	require.Equal(t, consumed["none"], consumed["lz4"], "the same records, offsets, keys and headers")
	require.True(t, strings.HasPrefix(consumed["lz4"], "Offset:0\tunit=si\tsensor-0\t"), consumed["lz4"][:100])
	require.Less(t, 4*stored["lz4"], stored["none"], "lz4 batch %d bytes, uncompressed %d", stored["lz4"], stored["none"])
	t.Logf("200 repetitive records: %d stored bytes uncompressed, %d with lz4", stored["none"], stored["lz4"])

	bad := n.CLI("", "tx", "topics", "produce", "e2e.codec-lz4", "x", "--compression", "brotli", "--from", "bob")
	require.Error(t, bad.Err)
	require.Contains(t, bad.Stderr, "unsupported or corrupt compression")
	require.Contains(t, bad.Stderr, "code 39")
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
