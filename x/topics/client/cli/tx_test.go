package cli

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/codec"
	codectypes "github.com/cosmos/cosmos-sdk/codec/types"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// A committed transaction prints as one JSON document with -o json: the SDK's TxResponse
// fields and the decoded Msg responses; as the text line otherwise.
func TestPrintTxResult(t *testing.T) {
	reg := codectypes.NewInterfaceRegistry()
	types.RegisterInterfaces(reg)
	cdc := codec.NewProtoCodec(reg)
	resp, err := codectypes.NewAnyWithValue(&types.MsgResetOffsetsResponse{Offsets: []types.CommittedOffset{
		{GroupId: "g", Topic: "orders", Partition: 1, Offset: 42, Metadata: "reset"},
	}})
	require.NoError(t, err)
	data, err := cdc.Marshal(&sdk.TxMsgData{MsgResponses: []*codectypes.Any{resp}})
	require.NoError(t, err)
	res := &sdk.TxResponse{TxHash: strings.Repeat("AB", 32), Height: 7, GasUsed: 1000, Data: strings.ToUpper(hex.EncodeToString(data))}
	clientCtx := client.Context{}.WithCodec(cdc).WithInterfaceRegistry(reg)

	run := func(format string) string {
		var out bytes.Buffer
		cmd := &cobra.Command{}
		cmd.SetOut(&out)
		require.NoError(t, printTxResult(cmd, clientCtx.WithOutputFormat(format), res, "reset group %s (tx %s)\n", "g", res.TxHash))
		return out.String()
	}

	out := run("json")
	var doc struct {
		TxHash       string  `json:"txhash"`
		Height       string  `json:"height"`
		Code         *uint32 `json:"code"`
		GasUsed      string  `json:"gas_used"`
		MsgResponses []struct {
			Type    string `json:"@type"`
			Offsets []struct {
				Topic     string `json:"topic"`
				Partition uint32 `json:"partition"`
				Offset    string `json:"offset"`
			} `json:"offsets"`
		} `json:"msg_responses"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	require.NoError(t, dec.Decode(&doc), out)
	require.False(t, dec.More(), "one document: %s", out)
	require.Equal(t, res.TxHash, doc.TxHash)
	require.Equal(t, "7", doc.Height)
	require.NotNil(t, doc.Code, "code 0 is printed")
	require.Zero(t, *doc.Code)
	require.Equal(t, "1000", doc.GasUsed)
	require.Len(t, doc.MsgResponses, 1)
	r := doc.MsgResponses[0]
	require.Equal(t, "/bftlog.topics.v1.MsgResetOffsetsResponse", r.Type)
	require.Len(t, r.Offsets, 1)
	require.Equal(t, "orders", r.Offsets[0].Topic)
	require.Equal(t, uint32(1), r.Offsets[0].Partition)
	require.Equal(t, "42", r.Offsets[0].Offset)

	require.Equal(t, "reset group g (tx "+res.TxHash+")\n", run("text"))
	require.Equal(t, "reset group g (tx "+res.TxHash+")\n", run(""))
}

// decoded is the records of one transaction's batches, by partition, as consumers read them.
func decoded(t *testing.T, batches []types.ProduceBatch) map[uint32][]kbatch.KafkaRecord {
	t.Helper()
	out := map[uint32][]kbatch.KafkaRecord{}
	for _, b := range batches {
		recs, err := kbatch.DecodeRecordBatch(b.RecordBatch)
		require.NoError(t, err)
		require.Len(t, recs, int(b.RecordCount))
		out[b.Partition] = append(out[b.Partition], recs...)
	}
	return out
}

// Produce partitions as Kafka's default partitioner: keyed records by murmur2, the keyless
// ones of a transaction together on its sticky partition, the next one per transaction; each
// transaction stays within max_records_per_batch, and every record is sent once, in order
// within its partition.
func TestBuildProduceTxsPartitions(t *testing.T) {
	var records []types.BatchRecord
	for i := range 25 {
		r := types.BatchRecord{Value: types.NewBytes(fmt.Appendf(nil, "v-%d", i)), CreateTimeMs: 1_700_000_000_000}
		if i%2 == 0 {
			r.Key = types.NewBytes(fmt.Appendf(nil, "k-%d", i))
		}
		records = append(records, r)
	}
	txs, err := buildProduceTxs("orders", -1, 4, records, 10, 4<<20, kbatch.CompressionNone, 6)
	require.NoError(t, err)
	require.Len(t, txs, 3)
	next := 0
	for i, tx := range txs {
		n := 0
		seen := map[uint32]bool{}
		for _, b := range tx {
			require.Equal(t, "orders", b.Topic)
			require.False(t, seen[b.Partition], "one batch per partition in a transaction")
			seen[b.Partition] = true
			n += int(b.RecordCount)
		}
		require.LessOrEqual(t, n, 10)
		byP := decoded(t, tx)
		pos := map[uint32]int{}
		for _, r := range records[next : next+n] {
			p := uint32(6+i) % 4 // sticky: 6, 7, 8 for the three transactions
			if r.Key != nil {
				p = types.KeyPartition(r.Key.Data, 4)
			}
			got := byP[p][pos[p]]
			pos[p]++
			require.Equal(t, r.Value.Data, got.Value)
			if r.Key != nil {
				require.Equal(t, r.Key.Data, got.Key)
			} else {
				require.Nil(t, got.Key)
			}
			require.Equal(t, r.CreateTimeMs, got.Timestamp)
		}
		next += n
	}
	require.Equal(t, len(records), next)

	// --partition puts everything on one partition, keys or not.
	txs, err = buildProduceTxs("orders", 2, 0, records, 100, 4<<20, kbatch.CompressionLZ4, 0)
	require.NoError(t, err)
	require.Len(t, txs, 1)
	require.Len(t, txs[0], 1)
	require.Equal(t, uint32(2), txs[0][0].Partition)
	require.Len(t, decoded(t, txs[0])[2], len(records))
}

// A transaction's record batches never pass max_batch_bytes: records are cut by their size,
// and a chunk that compression made larger than the limit is halved.
func TestBuildProduceTxsBytes(t *testing.T) {
	var records []types.BatchRecord
	for range 40 {
		v := make([]byte, 1000)
		_, _ = rand.Read(v) // incompressible
		records = append(records, types.BatchRecord{Value: types.NewBytes(v)})
	}
	maxBytes := 4*records[0].RecordSize() + kbatch.RecordBatchHeaderSize
	for _, c := range []kbatch.Compression{kbatch.CompressionNone, kbatch.CompressionGzip, kbatch.CompressionSnappy, kbatch.CompressionLZ4, kbatch.CompressionZstd} {
		txs, err := buildProduceTxs("t", 0, 0, records, 1000, maxBytes, c, 0)
		require.NoError(t, err, c)
		total := 0
		for _, tx := range txs {
			size := 0
			for _, b := range tx {
				size += len(b.RecordBatch)
				total += int(b.RecordCount)
				info, err := kbatch.CheckRecordBatch(b.RecordBatch, kbatch.BatchLimits{MaxRecordBytes: 1 << 20, MaxDecompressedBytes: maxBytes, MaxHeaders: 64})
				require.NoError(t, err, c)
				require.Equal(t, c, info.Compression)
			}
			require.LessOrEqual(t, uint64(size), maxBytes, c)
		}
		require.Equal(t, len(records), total, c)
		require.GreaterOrEqual(t, len(txs), 10, c)
		if c == kbatch.CompressionGzip {
			require.Len(t, txs, 20, "gzip's framing makes 4 incompressible records too large: halved")
		}
	}

	// Repetitive values compress: lz4 sends far fewer bytes than no compression.
	var same []types.BatchRecord
	for range 100 {
		same = append(same, types.BatchRecord{Value: types.NewBytes(bytes.Repeat([]byte("abcd"), 100))})
	}
	plain, err := buildProduceTxs("t", 0, 0, same, 1000, 4<<20, kbatch.CompressionNone, 0)
	require.NoError(t, err)
	lz4, err := buildProduceTxs("t", 0, 0, same, 1000, 4<<20, kbatch.CompressionLZ4, 0)
	require.NoError(t, err)
	require.Less(t, 10*len(lz4[0][0].RecordBatch), len(plain[0][0].RecordBatch))
}
