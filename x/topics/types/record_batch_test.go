package types_test

import (
	"testing"

	"github.com/cosmos/gogoproto/proto"
	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/topics/types"
)

// size_bytes is exactly the stored encoding, including around varint boundaries of both the
// records and the size itself, and records are the bytes they take inside it: 64 empty headers
// are not free.
func TestStoredSizeIsTheEncoding(t *testing.T) {
	for _, n := range []int{0, 1, 100, 115, 116, 117, 118, 127, 128, 16_370, 16_383, 16_384, 1 << 20} {
		for _, records := range []int{1, 3} {
			b := types.RecordBatch{BaseOffset: uint64(n), Producer: "bftlog1producer", LogAppendTimeMs: 1_700_000_000_000, Height: int64(n)}
			for i := 0; i < records; i++ {
				b.Records = append(b.Records, types.BatchRecord{Value: &types.Bytes{Data: make([]byte, n)}, CreateTimeMs: int64(i)})
			}
			b.SizeBytes = b.StoredSize(b.RecordBytes())
			bz, err := proto.Marshal(&b)
			require.NoError(t, err)
			require.Equal(t, uint64(len(bz)), b.SizeBytes, "value %d x %d records", n, records)
			var body uint64
			for _, r := range b.Records {
				rb, err := proto.Marshal(&types.RecordBatch{Records: []types.BatchRecord{r}})
				require.NoError(t, err)
				body += uint64(len(rb))
			}
			require.Equal(t, body, b.RecordBytes())
		}
	}
	empty := types.BatchRecord{Headers: make([]types.Header, 64)}
	require.Equal(t, uint64(1+2+64*2), empty.RecordSize()) // tag, 2-byte length, 64 x (tag, 0)
	require.Equal(t, uint64(2), types.BatchRecord{}.RecordSize())
}
