package kafka

import (
	"encoding/binary"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bftlog/bftlog/x/topics/types"
)

// roundTrip sends one request on c and decodes the response of the same kind.
func roundTrip(t *testing.T, c net.Conn, corr int32, req kmsg.Request) kmsg.Response {
	t.Helper()
	body := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	body = binary.BigEndian.AppendUint16(body, uint16(req.GetVersion()))
	body = binary.BigEndian.AppendUint32(body, uint32(corr))
	body = binary.BigEndian.AppendUint16(body, 4)
	body = append(body, "test"...)
	if req.IsFlexible() {
		body = append(body, 0)
	}
	body = req.AppendTo(body)
	_, err := c.Write(binary.BigEndian.AppendUint32(nil, uint32(len(body))))
	require.NoError(t, err)
	_, err = c.Write(body)
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

	acl := kmsg.NewPtrDescribeACLsRequest()
	acl.SetVersion(1)
	resp := roundTrip(t, c, 7, acl).(*kmsg.DescribeACLsResponse)
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
	require.False(t, keys[kmsg.DescribeACLs], "DescribeACLs not advertised")
}

// Records survive the trip through Kafka's batch encoding: keys, values, headers, null versus
// empty, offsets and timestamps.
func TestRecordBatchRoundTrip(t *testing.T) {
	recs := []types.Record{
		{Offset: 40, Key: &types.Bytes{Data: []byte("k")}, Value: &types.Bytes{Data: []byte("v")}, Headers: []types.Header{{Key: "h", Value: []byte("x")}}, CreateTimeMs: 1000},
		{Offset: 41, Key: nil, Value: &types.Bytes{}, CreateTimeMs: 1005},
		{Offset: 42, Key: &types.Bytes{}, Value: nil, LogAppendTimeMs: 2000},
	}
	got, code, err := decodeBatches(encodeBatch(recs))
	require.NoError(t, err)
	require.Zero(t, code)
	require.Len(t, got, 1)
	b := got[0].records
	require.Len(t, b, 3)
	require.Equal(t, "k", string(b[0].Key.Data))
	require.Equal(t, "x", string(b[0].Headers[0].Value))
	require.EqualValues(t, 1000, b[0].CreateTimeMs)
	require.Nil(t, b[1].Key)
	require.NotNil(t, b[1].Value)
	require.Empty(t, b[1].Value.Data)
	require.NotNil(t, b[2].Key)
	require.Nil(t, b[2].Value)
	require.EqualValues(t, 2000, b[2].CreateTimeMs)

	corrupt := encodeBatch(recs)
	corrupt[len(corrupt)-1] ^= 0xff
	_, code, err = decodeBatches(corrupt)
	require.Error(t, err)
	require.Equal(t, kerr.CorruptMessage.Code, code)
}
