package types_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// NewProduceBatch encodes the records as one batch and says how many it holds.
func TestNewProduceBatch(t *testing.T) {
	recs := sampleRecords()
	for c := kbatch.CompressionNone; c <= kbatch.CompressionZstd; c++ { // every codec
		b, err := types.NewProduceBatch("orders", 5, recs, c)
		require.NoError(t, err)
		require.Equal(t, "orders", b.Topic)
		require.Equal(t, uint32(5), b.Partition)
		require.Equal(t, uint32(len(recs)), b.RecordCount)
		require.Equal(t, uint32(len(recs)), kbatch.RecordBatchCount(b.RecordBatch))
		info, err := kbatch.CheckRecordBatch(b.RecordBatch, testLimits)
		require.NoError(t, err)
		require.Equal(t, b.RecordCount, info.Records)
	}
	_, err := types.NewProduceBatch("orders", 0, nil, kbatch.CompressionNone)
	require.ErrorIs(t, err, types.ErrEmptyBatch)
	_, err = types.NewProduceBatch("orders", 0, recs, kbatch.Compression(5))
	require.ErrorIs(t, err, types.ErrUnsupportedCompression)
}
