package types_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// testLimits are the default params' bounds, as the keeper passes them.
var testLimits = kbatch.BatchLimits{
	MaxRecordBytes:       types.DefaultMaxRecordBytes,
	MaxDecompressedBytes: types.DefaultMaxBatchBytes,
	MaxHeaders:           types.DefaultMaxHeadersPerRecord,
}

// sampleRecords are proto records covering what the conversion to and from the codec must
// keep: null vs empty keys and values, null vs empty header values, repeated header keys in
// order, records with and without headers.
func sampleRecords() []types.BatchRecord {
	return []types.BatchRecord{
		{Key: types.NewBytes([]byte("user-1")), Value: types.NewBytes([]byte("hello")), CreateTimeMs: 1_700_000_000_500,
			Headers: []types.Header{{Key: "b", Value: []byte("2")}, {Key: "a", Value: []byte("1")}, {Key: "b", Value: []byte("3")}}},
		{CreateTimeMs: 1_700_000_000_000},
		{Key: types.NewBytes([]byte{}), Value: types.NewBytes([]byte{}), CreateTimeMs: 1_700_000_000_900},
		{Value: types.NewBytes(bytes.Repeat([]byte("compressible "), 500)), CreateTimeMs: -1,
			Headers: []types.Header{{Key: "empty", Value: []byte{}}, {Key: "null"}}},
	}
}

// requireDecoded checks records the codec decoded against the proto records encoded, from
// offset base: byte for byte, null apart from empty.
func requireDecoded(t *testing.T, want []types.BatchRecord, got []kbatch.KafkaRecord, base int64) {
	t.Helper()
	nullable := func(b *types.Bytes) []byte {
		if b == nil {
			return nil
		}
		return append([]byte{}, b.Data...)
	}
	expect := make([]kbatch.KafkaRecord, len(want))
	for i, w := range want {
		expect[i] = kbatch.KafkaRecord{Offset: base + int64(i), Timestamp: w.CreateTimeMs, Key: nullable(w.Key), Value: nullable(w.Value)}
		for _, h := range w.Headers {
			expect[i].Headers = append(expect[i].Headers, kbatch.Header(h))
		}
	}
	require.Equal(t, expect, got)
}
