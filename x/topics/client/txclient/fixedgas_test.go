package txclient

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// TestCompressedRecordBytes: fixed gas counts what compressed batches decompress to, which the
// chain charges per byte but the transaction's size does not show.
func TestCompressedRecordBytes(t *testing.T) {
	recs := make([]types.BatchRecord, 200)
	for i := range recs {
		recs[i] = types.BatchRecord{Value: &types.Bytes{Data: bytes.Repeat([]byte(`{"type":"page_view"}`), 10)}}
	}
	lz4, err := types.NewProduceBatch("t", 0, recs, kbatch.CompressionLZ4)
	require.NoError(t, err)
	plain, err := types.NewProduceBatch("t", 1, recs, kbatch.CompressionNone)
	require.NoError(t, err)

	n := compressedRecordBytes(&types.MsgProduce{Batches: []types.ProduceBatch{lz4, plain}})
	require.Greater(t, n, uint64(200*200), "the lz4 batch's records once decompressed")
	require.Greater(t, n, 10*uint64(len(lz4.RecordBatch)))
	require.Zero(t, compressedRecordBytes(&types.MsgProduce{Batches: []types.ProduceBatch{plain}}), "size-derived gas covers uncompressed batches")
	require.Zero(t, compressedRecordBytes(&types.MsgCreateTopic{Name: "t"}))
}
