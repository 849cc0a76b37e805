package kafka

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/grpc"

	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// requestFrame is req as a client sends it: size, header (client id "test"), body.
func requestFrame(corr int32, req kmsg.Request) []byte {
	body := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	body = binary.BigEndian.AppendUint16(body, uint16(req.GetVersion()))
	body = binary.BigEndian.AppendUint32(body, uint32(corr))
	body = binary.BigEndian.AppendUint16(body, 4)
	body = append(body, "test"...)
	if req.IsFlexible() {
		body = append(body, 0)
	}
	body = req.AppendTo(body)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// roundTrip sends one request on c and decodes the response of the same kind.
func roundTrip(t *testing.T, c net.Conn, corr int32, req kmsg.Request) kmsg.Response {
	t.Helper()
	_, err := c.Write(requestFrame(corr, req))
	require.NoError(t, err)
	var size int32
	require.NoError(t, binary.Read(c, binary.BigEndian, &size))
	frame := make([]byte, size)
	_, err = io.ReadFull(c, frame)
	require.NoError(t, err)
	require.Equal(t, corr, int32(binary.BigEndian.Uint32(frame)))
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	rest := frame[4:]
	if resp.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		rest = rest[1:]
	}
	require.NoError(t, resp.ReadFrom(rest))
	return resp
}

// An API the gateway does not serve gets UNSUPPORTED_VERSION and the connection stays usable.
func TestUnsupportedRequestsGetAnErrorNotAHangup(t *testing.T) {
	s, err := Listen(Config{Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	go func() { _ = s.Serve() }()
	defer s.Close()
	c, err := net.Dial("tcp", s.Addr())
	require.NoError(t, err)
	defer c.Close()

	quotas := kmsg.NewPtrDescribeClientQuotasRequest()
	quotas.SetVersion(1)
	resp := roundTrip(t, c, 7, quotas).(*kmsg.DescribeClientQuotasResponse)
	require.Equal(t, kerr.UnsupportedVersion.Code, resp.ErrorCode)

	high := kmsg.NewPtrApiVersionsRequest()
	high.SetVersion(3)
	av := roundTrip(t, c, 8, high).(*kmsg.ApiVersionsResponse)
	require.Zero(t, av.ErrorCode)
	keys := map[kmsg.Key]bool{}
	for _, k := range av.ApiKeys {
		keys[kmsg.Key(k.ApiKey)] = true
	}
	require.True(t, keys[kmsg.Produce] && keys[kmsg.Fetch] && keys[kmsg.Metadata], "produce, fetch, metadata advertised")
	require.False(t, keys[kmsg.DescribeClientQuotas], "DescribeClientQuotas not advertised")
}

func encode(t *testing.T, c kbatch.Compression, recs ...types.BatchRecord) []byte {
	t.Helper()
	b, err := types.EncodeRecordBatch(recs, c)
	require.NoError(t, err)
	return b
}

// withHeader changes one header field of a batch and recomputes its CRC (what a client sets).
func withHeader(b []byte, set func(h []byte)) []byte {
	out := append([]byte(nil), b...)
	set(out)
	binary.BigEndian.PutUint32(out[17:21], kbatch.RecordBatchCRC(out))
	return out
}

// A produce request's record set is split into its batches, each kept byte for byte (the
// chain stores it as sent), with the idempotent producer's id and first sequence read.
func TestSplitBatchesKeepsTheBytes(t *testing.T) {
	rec := types.BatchRecord{Key: &types.Bytes{Data: []byte("k")}, Value: &types.Bytes{Data: []byte("v")}, Headers: []types.Header{{Key: "h", Value: []byte("x")}}, CreateTimeMs: 1000}
	plain := encode(t, kbatch.CompressionNone, rec, rec)
	zstd := withHeader(encode(t, kbatch.CompressionZstd, rec, rec, rec), func(h []byte) {
		binary.BigEndian.PutUint64(h[43:51], 77) // producer id
		binary.BigEndian.PutUint32(h[53:57], 5)  // first sequence
	})
	got, err := splitBatches(append(append([]byte(nil), plain...), zstd...))
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, plain, got[0].bytes)
	require.EqualValues(t, 2, got[0].records)
	require.EqualValues(t, -1, got[0].producerID)
	require.Equal(t, zstd, got[1].bytes)
	require.EqualValues(t, 3, got[1].records)
	require.EqualValues(t, 77, got[1].producerID)
	require.EqualValues(t, 5, got[1].firstSequence)
	require.Equal(t, kbatch.CompressionNone, got[0].compression)
	require.Equal(t, kbatch.CompressionZstd, got[1].compression)

	none, err := splitBatches(nil)
	require.NoError(t, err)
	require.Empty(t, none)
}

// What splitBatches refuses, it refuses with the chain's registered errors, so the client sees
// the Kafka code it would for the chain's own refusal.
func TestSplitBatchesRefusals(t *testing.T) {
	rec := types.BatchRecord{Value: &types.Bytes{Data: []byte("v")}}
	good := encode(t, kbatch.CompressionLZ4, rec, rec)
	for name, c := range map[string]struct {
		batch []byte
		err   error
		code  int16
	}{
		"valid":        {good, nil, 0},
		"CRC mismatch": {func() []byte { b := append([]byte(nil), good...); b[len(b)-1] ^= 0xff; return b }(), types.ErrInvalidRecordBatch, kerr.CorruptMessage.Code},
		"truncated":    {good[:40], types.ErrInvalidRecordBatch, kerr.CorruptMessage.Code},
		"trailing":     {append(append([]byte(nil), good...), 0, 0, 0), types.ErrInvalidRecordBatch, kerr.CorruptMessage.Code},
		"length past the end": {withHeader(good, func(h []byte) { binary.BigEndian.PutUint32(h[8:12], uint32(len(good))) }),
			types.ErrInvalidRecordBatch, kerr.CorruptMessage.Code},
		"magic 1": {withHeader(good, func(h []byte) { h[16] = 1 }), types.ErrInvalidRecordBatch, kerr.CorruptMessage.Code},
		"codec 6": {withHeader(good, func(h []byte) { h[22] = h[22]&^0x07 | 6 }), types.ErrUnsupportedCompression, kerr.UnsupportedCompressionType.Code},
		// Transactional batches split fine; a produce outside a transaction refuses them.
		"transactional": {withHeader(good, func(h []byte) { h[22] |= 0x10 }), nil, 0},
		"control":       {withHeader(good, func(h []byte) { h[22] |= 0x20 }), types.ErrInvalidRecordBatch, kerr.CorruptMessage.Code},
		"no records": {withHeader(good, func(h []byte) {
			binary.BigEndian.PutUint32(h[57:61], 0)
			binary.BigEndian.PutUint32(h[23:27], ^uint32(0))
		}), types.ErrEmptyBatch, kerr.InvalidRecord.Code},
		"count and last offset delta disagree": {withHeader(good, func(h []byte) { binary.BigEndian.PutUint32(h[23:27], 5) }), types.ErrInvalidRecordBatch, kerr.CorruptMessage.Code},
	} {
		_, err := splitBatches(c.batch)
		if c.err == nil {
			require.NoError(t, err, name)
			continue
		}
		require.ErrorIs(t, err, c.err, name)
		require.Equal(t, c.code, kafkaCode(err), name)
	}
}

// fetchOnly answers the Fetch query from stored batches; the gateway's other queries are not
// expected.
type fetchOnly struct {
	types.QueryClient
	batches []types.RecordBatch
	asked   []*types.QueryFetchRequest
}

func (q *fetchOnly) Fetch(_ context.Context, req *types.QueryFetchRequest, _ ...grpc.CallOption) (*types.QueryFetchResponse, error) {
	q.asked = append(q.asked, req)
	out := &types.QueryFetchResponse{HighWatermark: 7, NextOffset: req.Offset}
	var size uint64
	for _, b := range q.batches {
		if b.LastOffset() < req.Offset || (len(out.Batches) > 0 && size+uint64(len(b.RecordBatch)) > req.MaxBytes) {
			continue
		}
		out.Batches = append(out.Batches, b)
		size += uint64(len(b.RecordBatch))
		out.NextOffset = b.LastOffset() + 1
	}
	return out, nil
}

// A fetch answers with the stored batches byte for byte (compressed as produced), the first
// holding the fetch offset; franz-go skips the records before it and reads the rest intact:
// keys, values, headers, null versus empty, offsets and timestamps.
func TestFetchReturnsStoredBatchesUnchanged(t *testing.T) {
	first := kbatch.WithBaseOffset(encode(t, kbatch.CompressionLZ4,
		types.BatchRecord{Key: &types.Bytes{Data: []byte("k")}, Value: &types.Bytes{Data: []byte("v")}, Headers: []types.Header{{Key: "h", Value: []byte("x")}, {Key: "n"}}, CreateTimeMs: 1000},
		types.BatchRecord{Key: nil, Value: &types.Bytes{}, CreateTimeMs: 1005},
		types.BatchRecord{Key: &types.Bytes{}, Value: nil, CreateTimeMs: 1007},
	), 0)
	second := kbatch.WithBaseOffset(encode(t, kbatch.CompressionZstd,
		types.BatchRecord{Value: &types.Bytes{Data: []byte("w")}, CreateTimeMs: 2000},
		types.BatchRecord{Value: &types.Bytes{Data: []byte("y")}, CreateTimeMs: 2001},
		types.BatchRecord{Value: &types.Bytes{Data: []byte("z")}, CreateTimeMs: 2002},
		types.BatchRecord{Value: &types.Bytes{Data: []byte("!")}, CreateTimeMs: 2003},
	), 3)
	q := &fetchOnly{batches: []types.RecordBatch{{BaseOffset: 0, RecordCount: 3, RecordBatch: first}, {BaseOffset: 3, RecordCount: 4, RecordBatch: second}}}
	s := &Server{query: q}
	version := int16(11)
	fetch := func(offset int64, partitionMax, requestMax int32) *kmsg.FetchResponseTopicPartition {
		t.Helper()
		r := kmsg.NewPtrFetchRequest()
		r.SetVersion(version)
		r.MaxBytes = requestMax
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "orders"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes = offset, partitionMax
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		resp := s.fetch(context.Background(), r).(*kmsg.FetchResponse)
		require.Len(t, resp.Topics, 1)
		require.Len(t, resp.Topics[0].Partitions, 1)
		return &resp.Topics[0].Partitions[0]
	}

	rp := fetch(1, 1<<20, 50<<20)
	require.Zero(t, rp.ErrorCode)
	require.Equal(t, append(append([]byte(nil), first...), second...), rp.RecordBatches, "the stored bytes, unchanged")
	require.EqualValues(t, 7, rp.HighWatermark)
	last := q.asked[len(q.asked)-1]
	require.Equal(t, types.FETCH_FORMAT_BATCHES, last.Format)
	require.EqualValues(t, 1, last.Offset)
	require.EqualValues(t, 1<<20, last.MaxBytes, "the partition's max bytes")

	fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: 1, Topic: "orders"}, rp, kgo.DefaultDecompressor(), nil)
	require.NoError(t, fp.Err)
	require.Len(t, fp.Records, 6, "offset 0 skipped by the client")
	r1, r2 := fp.Records[0], fp.Records[1]
	require.EqualValues(t, 1, r1.Offset)
	require.Nil(t, r1.Key)
	require.NotNil(t, r1.Value)
	require.Empty(t, r1.Value)
	require.EqualValues(t, 1005, r1.Timestamp.UnixMilli())
	require.NotNil(t, r2.Key)
	require.Empty(t, r2.Key)
	require.Nil(t, r2.Value)
	require.Equal(t, "z", string(fp.Records[4].Value))
	require.EqualValues(t, 5, fp.Records[4].Offset)

	fp, _ = kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: 0, Topic: "orders"}, rp, kgo.DefaultDecompressor(), nil)
	require.Len(t, fp.Records, 7)
	require.Equal(t, "k", string(fp.Records[0].Key))
	require.Equal(t, []kgo.RecordHeader{{Key: "h", Value: []byte("x")}, {Key: "n"}}, fp.Records[0].Headers)

	// The request's max bytes bound the answer past its first batch.
	rp = fetch(0, 1<<20, int32(len(first)+1))
	require.Equal(t, first, rp.RecordBatches)
	// A first batch larger than every limit still comes, so the client makes progress.
	rp = fetch(0, 10, 10)
	require.Equal(t, first, rp.RecordBatches)
	// As Kafka: zstd is not served below fetch v10, lz4 is.
	version = 9
	rp = fetch(0, 1<<20, int32(len(first)+1))
	require.Zero(t, rp.ErrorCode)
	require.Equal(t, first, rp.RecordBatches)
	rp = fetch(3, 1<<20, 50<<20)
	require.Equal(t, kerr.UnsupportedCompressionType.Code, rp.ErrorCode)
	require.Empty(t, rp.RecordBatches)
	version = 11
	// At the high watermark: an empty record set, not a null one.
	q.batches = nil
	rp = fetch(7, 1<<20, 50<<20)
	require.NotNil(t, rp.RecordBatches)
	require.Empty(t, rp.RecordBatches)
}

// Past the response's first batch, batches stop where the request's budget would be passed.
func TestAppendBatchesKeepsTheBudget(t *testing.T) {
	b := func(n int) types.RecordBatch { return types.RecordBatch{RecordBatch: make([]byte, n)} }
	require.Len(t, appendBatches(nil, []types.RecordBatch{b(100), b(50)}, 0, 10), 100, "the first batch of the response comes whatever its size")
	require.Len(t, appendBatches(nil, []types.RecordBatch{b(100), b(50)}, 0, 150), 150)
	require.Len(t, appendBatches(nil, []types.RecordBatch{b(100), b(50)}, 0, 149), 100)
	require.Empty(t, appendBatches(nil, []types.RecordBatch{b(100)}, 60, 150), "another partition filled the response")
	require.Len(t, appendBatches(nil, []types.RecordBatch{b(90)}, 60, 150), 90)
}
