package kafka

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/golang/snappy"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/bftlog/bftlog/x/topics/types"
)

// OTLP encoders for the tests: KeyValue, NumberDataPoint, Metric and MetricsData.

func otlpKV(key, value string) []byte {
	any := protowire.AppendTag(nil, 1, protowire.BytesType)
	any = protowire.AppendString(any, value)
	kv := protowire.AppendTag(nil, 1, protowire.BytesType)
	kv = protowire.AppendString(kv, key)
	kv = protowire.AppendTag(kv, 2, protowire.BytesType)
	return protowire.AppendBytes(kv, any)
}

func otlpPoint(v float64, attrs ...[]byte) []byte {
	p := protowire.AppendTag(nil, 3, protowire.Fixed64Type)
	p = protowire.AppendFixed64(p, uint64(time.Now().UnixNano()))
	p = protowire.AppendTag(p, 4, protowire.Fixed64Type)
	p = protowire.AppendFixed64(p, math.Float64bits(v))
	for _, a := range attrs {
		p = protowire.AppendTag(p, 7, protowire.BytesType)
		p = protowire.AppendBytes(p, a)
	}
	return p
}

// otlpMetric is a gauge (kind 5) or a sum (kind 7, delta or cumulative) of points.
func otlpMetric(name string, kind protowire.Number, delta bool, points ...[]byte) []byte {
	var data []byte
	for _, p := range points {
		data = protowire.AppendTag(data, 1, protowire.BytesType)
		data = protowire.AppendBytes(data, p)
	}
	if kind == 7 {
		data = protowire.AppendTag(data, 2, protowire.VarintType)
		data = protowire.AppendVarint(data, map[bool]uint64{true: 1, false: 2}[delta])
	}
	m := protowire.AppendTag(nil, 1, protowire.BytesType)
	m = protowire.AppendString(m, name)
	m = protowire.AppendTag(m, kind, protowire.BytesType)
	return protowire.AppendBytes(m, data)
}

func otlpData(resource [][]byte, metrics ...[]byte) []byte {
	var res, scope, rm []byte
	for _, a := range resource {
		res = protowire.AppendTag(res, 1, protowire.BytesType)
		res = protowire.AppendBytes(res, a)
	}
	for _, m := range metrics {
		scope = protowire.AppendTag(scope, 2, protowire.BytesType)
		scope = protowire.AppendBytes(scope, m)
	}
	rm = protowire.AppendTag(rm, 1, protowire.BytesType)
	rm = protowire.AppendBytes(rm, res)
	rm = protowire.AppendTag(rm, 2, protowire.BytesType)
	rm = protowire.AppendBytes(rm, scope)
	return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), rm)
}

// testTelemetry is a subscription with a clock the test moves.
func testTelemetry(cfg Telemetry) (*telemetry, *time.Time) {
	clock := time.Unix(1_000_000, 0)
	tel := newTelemetry(cfg, newGatewayMetrics(&Server{}))
	tel.now = func() time.Time { return clock }
	tel.stats.registry.MustRegister(tel)
	return tel, &clock
}

func getSub(tel *telemetry, id [16]byte, clientID string) *kmsg.GetTelemetrySubscriptionsResponse {
	r := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
	r.ClientInstanceID = id
	return tel.getTelemetrySubscriptions(r, telemetryCaller{clientID: clientID}).(*kmsg.GetTelemetrySubscriptionsResponse)
}

func push(tel *telemetry, id [16]byte, sub int32, codec int8, metrics []byte, terminating bool) int16 {
	return pushAs(tel, telemetryCaller{clientID: "app"}, id, sub, codec, metrics, terminating)
}

func pushAs(tel *telemetry, who telemetryCaller, id [16]byte, sub int32, codec int8, metrics []byte, terminating bool) int16 {
	r := kmsg.NewPtrPushTelemetryRequest()
	r.ClientInstanceID, r.SubscriptionID, r.CompressionType, r.Metrics, r.Terminating = id, sub, codec, metrics, terminating
	return tel.pushTelemetry(r, who).(*kmsg.PushTelemetryResponse).ErrorCode
}

func getAs(tel *telemetry, who telemetryCaller, id [16]byte) *kmsg.GetTelemetrySubscriptionsResponse {
	r := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
	r.ClientInstanceID = id
	return tel.getTelemetrySubscriptions(r, who).(*kmsg.GetTelemetrySubscriptionsResponse)
}

// counter is the value of one of the gateway's counters with the given label value ("" for
// none).
func counter(t *testing.T, tel *telemetry, name, label string) float64 {
	t.Helper()
	families, err := tel.stats.registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.Metric {
			if len(m.Label) == 0 || m.Label[0].GetValue() == label {
				if m.Counter != nil {
					return m.GetCounter().GetValue()
				}
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

// exported is the registry's kafka_client_ series: name{labels} → value.
func exported(t *testing.T, tel *telemetry) map[string]float64 {
	t.Helper()
	families, err := tel.stats.registry.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "kafka_client_") {
			continue
		}
		for _, m := range f.Metric {
			out[f.GetName()+labelText(m)] = m.GetGauge().GetValue()
		}
	}
	return out
}

func labelText(m *dto.Metric) string {
	var parts []string
	for _, l := range m.Label {
		parts = append(parts, l.GetName()+"="+l.GetValue())
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// Without a subscription a client is told to push nothing and to ask again in half an hour,
// and the gateway keeps nothing about it; a push anyway is UNKNOWN_SUBSCRIPTION_ID.
func TestTelemetryQuietWithoutSubscription(t *testing.T) {
	tel, _ := testTelemetry(Telemetry{})
	res := getSub(tel, [16]byte{}, "app")
	require.Zero(t, res.ErrorCode)
	require.NotEqual(t, [16]byte{}, res.ClientInstanceID, "a new instance id for a zero one")
	require.Empty(t, res.RequestedMetrics)
	require.EqualValues(t, quietPushInterval.Milliseconds(), res.PushIntervalMillis)
	again := getSub(tel, res.ClientInstanceID, "app")
	require.Zero(t, again.ErrorCode, "nothing kept, so nothing throttled")
	require.Equal(t, res.ClientInstanceID, again.ClientInstanceID)
	require.Equal(t, kerr.UnknownSubscriptionID.Code, push(tel, res.ClientInstanceID, res.SubscriptionID, 0, otlpData(nil), false))
	require.Empty(t, tel.clients)
}

// Hostile pushes are refused with Kafka's codes, in Kafka's order, and nothing they carry is
// exported: a zero instance id, a subscription id not the gateway's, pushing faster than the
// interval, an unknown codec, more bytes than the bound (sent, or once decompressed), and bytes
// that are not OTLP protobuf. Get again before the interval is throttled too, except right
// after UNKNOWN_SUBSCRIPTION_ID. A terminating push is taken early and forgets the client.
func TestAttackTelemetryPushes(t *testing.T) {
	tel, clock := testTelemetry(Telemetry{Metrics: []string{"org.apache.kafka.producer."}, PushInterval: 10 * time.Second, MaxPushBytes: 4 << 10})
	sub := getSub(tel, [16]byte{}, "app")
	require.Equal(t, []string{"org.apache.kafka.producer."}, sub.RequestedMetrics)
	require.EqualValues(t, 10_000, sub.PushIntervalMillis)
	require.EqualValues(t, 4<<10, sub.TelemetryMaxBytes)
	require.False(t, sub.DeltaTemporality)
	require.ElementsMatch(t, []int8{1, 2, 3, 4}, sub.AcceptedCompressionTypes)
	id, sid := sub.ClientInstanceID, sub.SubscriptionID
	other, _ := testTelemetry(Telemetry{Metrics: []string{"org.apache.kafka."}, PushInterval: 10 * time.Second, MaxPushBytes: 4 << 10})
	require.NotEqual(t, sid, other.subID, "another subscription, another id")

	good := otlpData([][]byte{otlpKV("group_id", "g")},
		otlpMetric("org.apache.kafka.producer.connection.creation.total", 7, false, otlpPoint(3)),
		otlpMetric("org.apache.kafka.consumer.fetch.rate", 5, false, otlpPoint(9))) // not subscribed
	require.Equal(t, kerr.InvalidRequest.Code, push(tel, [16]byte{}, sid, 0, good, false))
	stranger := [16]byte{9}
	require.Equal(t, kerr.UnknownSubscriptionID.Code, push(tel, stranger, sid+1, 0, good, false))
	require.NotContains(t, tel.clients, stranger, "nothing kept for an id on no subscription of ours")

	*clock = clock.Add(time.Second)
	require.Equal(t, kerr.UnknownSubscriptionID.Code, push(tel, id, sid+1, 0, good, false))
	*clock = clock.Add(10 * time.Millisecond)
	require.Zero(t, getSub(tel, id, "app").ErrorCode, "asking again after UNKNOWN_SUBSCRIPTION_ID is not throttled")
	*clock = clock.Add(time.Second) // the first push after a Get may come early (clients jitter it)
	require.Zero(t, push(tel, id, sid, 0, good, false))
	require.Equal(t, kerr.ThrottlingQuotaExceeded.Code, push(tel, id, sid, 0, good, false), "a second push within the interval")
	require.Equal(t, map[string]float64{
		"kafka_client_org_apache_kafka_producer_connection_creation_total{client_id=app,client_instance_id=" + hex.EncodeToString(id[:]) + ",group_id=g}": 3,
	}, exported(t, tel), "the subscribed metric with the resource's attribute; the unsubscribed one dropped")
	*clock = clock.Add(5 * time.Second)
	require.Equal(t, kerr.ThrottlingQuotaExceeded.Code, getSub(tel, id, "app").ErrorCode, "Get again within the interval after a push")
	require.Equal(t, kerr.ThrottlingQuotaExceeded.Code, push(tel, id, sid, 0, good, false))

	step := func() { *clock = clock.Add(10 * time.Second) }
	step()
	require.Equal(t, kerr.UnsupportedCompressionType.Code, push(tel, id, sid, 9, good, false))
	step()
	require.Equal(t, kerr.TelemetryTooLarge.Code, push(tel, id, sid, 0, make([]byte, 4<<10+1), false))
	// 64 KiB of zeros compresses to less than 4 KiB: refused once it decompresses past 4 KiB.
	for _, codec := range []kgo.CompressionCodec{kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()} {
		step()
		comp, err := kgo.DefaultCompressor(codec)
		require.NoError(t, err)
		bomb, ct := comp.Compress(new(bytes.Buffer), make([]byte, 64<<10))
		require.Less(t, len(bomb), 4<<10)
		require.Equal(t, kerr.TelemetryTooLarge.Code, push(tel, id, sid, int8(ct), bomb, false), "codec %d", ct)
	}
	for name, bad := range map[string][]byte{
		"truncated":          good[:len(good)-3],
		"wrong wire type":    append(protowire.AppendTag(nil, 1, protowire.VarintType), 1),
		"name not bytes":     otlpData(nil, append(protowire.AppendTag(nil, 1, protowire.Fixed64Type), make([]byte, 8)...)),
		"bad tag":            {0x00},
		"huge length":        {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"corrupt gzip bytes": {0x1f, 0x8b, 0, 0, 0},
	} {
		step()
		codec := int8(0)
		if name == "corrupt gzip bytes" {
			codec = 1
		}
		require.Equal(t, kerr.InvalidRecord.Code, push(tel, id, sid, codec, bad, false), name)
	}
	require.Len(t, exported(t, tel), 1, "refused pushes changed nothing")

	// Terminating: taken within the interval, and the client's series are gone.
	require.Zero(t, push(tel, id, sid, 0, good, true))
	require.NotContains(t, tel.clients, id)
	require.Empty(t, exported(t, tel))

	// After its terminating push an id is finished: a push with it is INVALID_REQUEST, as in
	// Kafka, and a Get with it gets a new id.
	*clock = clock.Add(time.Minute)
	require.Equal(t, kerr.InvalidRequest.Code, push(tel, id, sid, 0, good, false))
	require.NotEqual(t, id, getSub(tel, id, "app").ClientInstanceID)

	pushes := map[string]float64{}
	families, err := tel.stats.registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == "bftlog_kafka_gateway_telemetry_pushes_total" {
			for _, m := range f.Metric {
				pushes[m.Label[0].GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	t.Logf("pushes by result: %v", pushes)
	require.Equal(t, 2.0, pushes["ok"])
	require.Equal(t, 6.0, pushes["invalid_record"])
}

// Every codec the gateway lists decodes a push as franz-go compresses it, and snappy in the
// Java client's xerial framing too; a delta sum is added up, a cumulative one set.
func TestTelemetryCodecsAndTemporality(t *testing.T) {
	tel, clock := testTelemetry(Telemetry{Metrics: []string{"*"}, PushInterval: time.Second})
	require.Equal(t, []string{""}, tel.requested, `"*" is sent as the KIP's all-metrics [""]`)
	sub := getSub(tel, [16]byte{}, "app")
	payload := otlpData(nil, otlpMetric("a.delta", 7, true, otlpPoint(2)), otlpMetric("b.total", 7, false, otlpPoint(5)))
	xerial := append(append([]byte(nil), xerial...), 0, 0, 0, 1, 0, 0, 0, 1)
	block := snappy.Encode(nil, payload)
	xerial = binary.BigEndian.AppendUint32(xerial, uint32(len(block)))
	xerial = append(xerial, block...)
	sends := [][2]any{{int8(0), payload}, {int8(2), xerial}}
	for _, codec := range []kgo.CompressionCodec{kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()} {
		comp, err := kgo.DefaultCompressor(codec)
		require.NoError(t, err)
		b, ct := comp.Compress(new(bytes.Buffer), payload)
		sends = append(sends, [2]any{int8(ct), b})
	}
	for _, s := range sends {
		*clock = clock.Add(time.Second)
		require.Zero(t, push(tel, sub.ClientInstanceID, sub.SubscriptionID, s[0].(int8), s[1].([]byte), false), "codec %d", s[0])
	}
	inst := hex.EncodeToString(sub.ClientInstanceID[:])
	require.Equal(t, map[string]float64{
		"kafka_client_a_delta{client_id=app,client_instance_id=" + inst + "}": 2 * 6,
		"kafka_client_b_total{client_id=app,client_instance_id=" + inst + "}": 5,
	}, exported(t, tel))
}

// What one client and all clients make the gateway keep is bounded: clients past MaxClients
// evict the one heard from longest ago; series past MaxSeriesPerClient are dropped; label
// values are cut and attributes beyond maxAttributes left off.
func TestAttackTelemetryClientsAndSeriesBounded(t *testing.T) {
	tel, clock := testTelemetry(Telemetry{Metrics: []string{"m."}, PushInterval: time.Second, MaxClients: 3, MaxSeriesPerClient: 4})
	var ids [][16]byte
	long := strings.Repeat("x", 1000)
	for i := range 5 {
		*clock = clock.Add(time.Second)
		sub := getSub(tel, [16]byte{}, long)
		ids = append(ids, sub.ClientInstanceID)
		var attrs [][]byte
		for a := range 40 {
			attrs = append(attrs, otlpKV("attr."+string(rune('a'+a%26))+string(rune('a'+a/26)), long))
		}
		var metrics [][]byte
		for m := range 10 {
			metrics = append(metrics, otlpMetric("m.series"+string(rune('a'+m)), 5, false, otlpPoint(float64(i+1), attrs...)))
		}
		require.Zero(t, push(tel, sub.ClientInstanceID, sub.SubscriptionID, 0, otlpData(nil, metrics...), false))
		if i == 2 { // the first client stays fresh, the second goes stale
			*clock = clock.Add(time.Second)
			require.Zero(t, push(tel, ids[0], sub.SubscriptionID, 0, otlpData(nil), false))
		}
	}
	require.Len(t, tel.clients, 3)
	require.Contains(t, tel.clients, ids[0], "heard from recently: kept")
	require.NotContains(t, tel.clients, ids[1], "the stalest evicted first")
	require.NotContains(t, tel.clients, ids[2])
	series := exported(t, tel)
	require.Len(t, series, 3*4, "3 clients of 4 series each")
	for name := range series {
		require.Equal(t, 2+maxAttributes, strings.Count(name, "="), "client_id, client_instance_id and %d attributes: %s", maxAttributes, name[:80])
		require.NotContains(t, name, strings.Repeat("x", maxLabelValue+1))
	}
	// Silent past the expiry, every client is forgotten.
	*clock = clock.Add(telemetryExpiry + time.Second)
	require.Empty(t, exported(t, tel))
}

// franz-go's own telemetry, on by default, through a gateway that subscribes with a 1 s push
// interval: the client's metrics appear on /metrics as kafka_client_ series with its client id.
// Through a gateway without a subscription the client gets an empty one and pushes nothing.
func TestFranzGoPushesTelemetryToPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds of real pushes")
	}
	run := func(cfg Config) (s *Server, cl *kgo.Client, pushes, bytes *atomic.Int64) {
		q := &topicsChain{topics: map[string]types.Topic{}}
		q.set(types.Topic{Name: "orders", CreatedHeight: 1, Partitions: 1})
		s = serve(t, cfg, func(s *Server) { s.query = q })
		pushes, bytes = new(atomic.Int64), new(atomic.Int64)
		cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr()), kgo.ClientID("telemetry-test"), kgo.FetchMaxWait(200*time.Millisecond),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"orders": {0: kgo.NewOffset().At(0)}}),
			kgo.WithHooks(pushHook{pushes, bytes}))
		require.NoError(t, err)
		t.Cleanup(cl.Close)
		go func() { // fetching is what franz-go measures (connections, request latency)
			for cl.Context().Err() == nil {
				cl.PollFetches(cl.Context())
			}
		}()
		return s, cl, pushes, bytes
	}

	s, _, pushes, pushed := run(Config{MetricsAddr: "127.0.0.1:0", Telemetry: Telemetry{Metrics: []string{"org.apache.kafka."}, PushInterval: time.Second}})
	var body string
	require.Eventually(t, func() bool {
		res, err := http.Get("http://" + s.MetricsAddr() + "/metrics")
		if err != nil {
			return false
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		body = string(b)
		return strings.Contains(body, `kafka_client_org_apache_kafka_consumer_node_request_latency_max{client_id="telemetry-test"`) && pushes.Load() >= 3
	}, 20*time.Second, 200*time.Millisecond, "franz-go's consumer latency on /metrics, after three pushes")
	require.Contains(t, body, `bftlog_kafka_gateway_telemetry_pushes_total{result="ok"}`)
	require.NotContains(t, body, `result="throttling_quota_exceeded"`, "franz-go's pace is within the interval")
	var lines []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "kafka_client_") {
			lines = append(lines, l)
		}
	}
	require.Contains(t, body, `bftlog_kafka_gateway_telemetry_clients 1`)
	require.Contains(t, body, `bftlog_kafka_gateway_requests_total{api="PushTelemetry"}`)
	require.Contains(t, body, `bftlog_kafka_gateway_connections `)
	t.Logf("franz-go pushed %d times (%d bytes written); /metrics holds %d client series:\n%s",
		pushes.Load(), pushed.Load(), len(lines), strings.Join(lines, "\n"))

	quiet, cl, pushes, _ := run(Config{})
	res, err := kmsg.NewPtrGetTelemetrySubscriptionsRequest().RequestWith(cl.Context(), cl)
	require.NoError(t, err)
	require.Empty(t, res.RequestedMetrics)
	require.EqualValues(t, quietPushInterval.Milliseconds(), res.PushIntervalMillis)
	time.Sleep(2500 * time.Millisecond)
	require.Zero(t, pushes.Load(), "no subscription: franz-go pushes nothing")
	quiet.telemetry.mu.Lock()
	defer quiet.telemetry.mu.Unlock()
	require.Empty(t, quiet.telemetry.clients)
}

// pushHook counts franz-go's PushTelemetry requests and their bytes.
type pushHook struct{ pushes, bytes *atomic.Int64 }

func (h pushHook) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, err error) {
	if key == kmsg.PushTelemetry.Int16() && err == nil {
		h.pushes.Add(1)
		h.bytes.Add(int64(n))
	}
}

// zstdOf is b compressed as franz-go compresses a push with zstd.
func zstdOf(t *testing.T, b []byte) []byte {
	t.Helper()
	comp, err := kgo.DefaultCompressor(kgo.ZstdCompression())
	require.NoError(t, err)
	out, ct := comp.Compress(new(bytes.Buffer), b)
	require.EqualValues(t, 4, ct)
	return bytes.Clone(out)
}

// labelNameBytes is the bytes of the label names of the exported client series.
func labelNameBytes(t *testing.T, tel *telemetry) (n int) {
	t.Helper()
	for key := range exported(t, tel) {
		for _, kv := range strings.Split(strings.Trim(key[strings.Index(key, "{"):], "{}"), ",") {
			name, _, _ := strings.Cut(kv, "=")
			require.LessOrEqual(t, len(name), maxLabelName)
			n += len(name)
		}
	}
	return n
}

// An attribute key is a label name: one of ~1 MiB on the resource, shared by 256 points, would
// have held 256 MiB of label names from a 1 MiB push that compresses to a few KiB. Keys past
// maxLabelName are dropped and counted; and what a client's series hold, names as well as
// values, is bounded by maxClientBytes.
func TestAttackTelemetryLongAttributeKey(t *testing.T) {
	tel, clock := testTelemetry(Telemetry{Metrics: []string{"*"}, PushInterval: time.Second})
	sub := getSub(tel, [16]byte{}, "app")
	key := strings.Repeat("k", 1_000_000)
	var metrics [][]byte
	for i := range 256 {
		metrics = append(metrics, otlpMetric(fmt.Sprintf("m%d", i), 5, false, otlpPoint(1)))
	}
	payload := otlpData([][]byte{otlpKV(key, "v"), otlpKV(strings.Repeat("n", maxLabelName), "kept"), otlpKV("x"+strings.Repeat("n", maxLabelName), "too long")}, metrics...)
	require.Less(t, len(payload), 1<<20)
	comp := zstdOf(t, payload)
	*clock = clock.Add(time.Second)
	start := time.Now()
	require.Zero(t, push(tel, sub.ClientInstanceID, sub.SubscriptionID, 4, comp, false))
	took := time.Since(start)
	names := labelNameBytes(t, tel)
	t.Logf("a %d-byte zstd push (%d decompressed) with a %d-byte resource attribute key on 256 points: %v; %d series holding %d bytes (seriesCost), %d bytes of label names; before: ~%d MiB of label names",
		len(comp), len(payload), len(key), took, tel.series, tel.bytes, names, 256*len(key)>>20)
	require.Equal(t, 256, tel.series)
	require.Equal(t, 2.0, counter(t, tel, "bftlog_kafka_gateway_telemetry_dropped_points_total", "attribute_too_long"), "the two keys past the bound, once each")
	require.LessOrEqual(t, tel.bytes, int64(maxClientBytes))
	require.Equal(t, 256*(len("client_id")+len("client_instance_id")+maxLabelName), names, "the 128-byte key kept")

	// Long names and values on every point: the client's byte bound stops new series.
	*clock = clock.Add(time.Second)
	var attrs [][]byte
	for a := range maxAttributes {
		attrs = append(attrs, otlpKV(fmt.Sprintf("%03d", a)+strings.Repeat("n", maxLabelName-4), strings.Repeat("v", maxLabelValue)))
	}
	metrics = metrics[:0]
	for i := range 200 { // ~850 KiB
		metrics = append(metrics, otlpMetric(fmt.Sprintf("wide%d", i), 5, false, otlpPoint(1, attrs...)))
	}
	tel.mu.Lock()
	tel.remove(tel.clients[sub.ClientInstanceID]) // a fresh client
	tel.mu.Unlock()
	sub = getSub(tel, [16]byte{}, "app")
	*clock = clock.Add(time.Second)
	require.Zero(t, push(tel, sub.ClientInstanceID, sub.SubscriptionID, 4, zstdOf(t, otlpData(nil, metrics...)), false))
	t.Logf("200 points of 16 attributes with 128-byte keys and values: %d series kept holding %d bytes (bound %d), %v points dropped for bytes",
		tel.series, tel.bytes, maxClientBytes, counter(t, tel, "bftlog_kafka_gateway_telemetry_dropped_points_total", "bytes_limit"))
	require.Less(t, tel.series, 200)
	require.LessOrEqual(t, tel.bytes, int64(maxClientBytes))
	require.Positive(t, counter(t, tel, "bftlog_kafka_gateway_telemetry_dropped_points_total", "bytes_limit"))
}

// Parsing was resource attributes × data points: each point copied and labelled the whole
// resource. One 1 MiB push of 20,000 resource attributes and 240,000 empty points (and one
// point of 10,000 attributes) is now read in time and allocations linear in its bytes, and
// keeps at most MaxSeriesPerClient points.
func TestAttackTelemetryResourceAttributesTimesPoints(t *testing.T) {
	tel, clock := testTelemetry(Telemetry{Metrics: []string{"*"}, PushInterval: time.Second})
	sub := getSub(tel, [16]byte{}, "app")
	var resource [][]byte
	for a := range 20_000 {
		resource = append(resource, otlpKV(fmt.Sprintf("a%05d", a), "v"))
	}
	var metrics [][]byte
	empty := make([][]byte, 240)
	for i := range 1000 {
		metrics = append(metrics, otlpMetric(fmt.Sprintf("m%d", i), 5, false, empty...))
	}
	var wide [][]byte
	for a := range 10_000 {
		wide = append(wide, otlpKV(fmt.Sprintf("p%05d", a), "v"))
	}
	metrics = append(metrics, otlpMetric("wide", 5, false, otlpPoint(1, wide...)))
	payload := otlpData(resource, metrics...)
	require.LessOrEqual(t, len(payload), DefaultTelemetryMaxPushBytes)

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	*clock = clock.Add(time.Second)
	start := time.Now()
	require.Zero(t, push(tel, sub.ClientInstanceID, sub.SubscriptionID, 0, payload, false))
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	limited := counter(t, tel, "bftlog_kafka_gateway_telemetry_dropped_points_total", "series_limit")
	t.Logf("a %d-byte push of 20,000 resource attributes × 240,001 points: %v, %d bytes allocated, %d series kept, %v points counted past the bound (before: 20,000 × 240,000 attribute copies)",
		len(payload), took, alloc, tel.series, limited)
	require.LessOrEqual(t, tel.series, DefaultTelemetryMaxSeries)
	require.EqualValues(t, 240_001-DefaultTelemetryMaxSeries, limited, "every point walked and counted, none labelled")
	require.Less(t, alloc, uint64(8<<20), "allocations bounded by what is kept, not attributes × points")
	require.Less(t, took, 2*time.Second)
	for name := range exported(t, tel) {
		require.Equal(t, 2+maxAttributes, strings.Count(name, "="), "the first %d resource attributes", maxAttributes)
	}
}

// A Get asked again within the interval is THROTTLING_QUOTA_EXCEEDED with ThrottleMillis 0,
// as Kafka answers it: franz-go holds the whole connection for a ThrottleMillis (KIP-219).
func TestTelemetryGetThrottledWithoutThrottleMillis(t *testing.T) {
	tel, clock := testTelemetry(Telemetry{Metrics: []string{"*"}, PushInterval: time.Minute})
	sub := getSub(tel, [16]byte{}, "app")
	*clock = clock.Add(time.Second)
	again := getSub(tel, sub.ClientInstanceID, "app")
	t.Logf("Get again after 1 s of a 1 min interval: error %d, throttle %d ms", again.ErrorCode, again.ThrottleMillis)
	require.Equal(t, kerr.ThrottlingQuotaExceeded.Code, again.ErrorCode)
	require.Zero(t, again.ThrottleMillis)
}

// A push interval past an hour is cut to it (Kafka's bound), so its milliseconds fit the
// int32 sent.
func TestTelemetryPushIntervalCapped(t *testing.T) {
	tel, _ := testTelemetry(Telemetry{Metrics: []string{"*"}, PushInterval: 30 * 24 * time.Hour})
	sub := getSub(tel, [16]byte{}, "app")
	require.EqualValues(t, time.Hour.Milliseconds(), sub.PushIntervalMillis)
}

// What all clients' series hold is bounded gateway-wide: MaxSeries series and MaxBytes bytes,
// further points dropped and counted; and what a client leaves with is given back.
func TestAttackTelemetryGatewaySeriesBudget(t *testing.T) {
	tel, clock := testTelemetry(Telemetry{Metrics: []string{"m."}, PushInterval: time.Second, MaxSeriesPerClient: 4, MaxSeries: 10})
	var subs []*kmsg.GetTelemetrySubscriptionsResponse
	for i := range 5 {
		sub := getSub(tel, [16]byte{}, "app")
		subs = append(subs, sub)
		var metrics [][]byte
		for m := range 4 {
			metrics = append(metrics, otlpMetric(fmt.Sprintf("m.c%d.s%d", i, m), 5, false, otlpPoint(1)))
		}
		*clock = clock.Add(time.Second)
		require.Zero(t, push(tel, sub.ClientInstanceID, sub.SubscriptionID, 0, otlpData(nil, metrics...), false))
	}
	t.Logf("5 clients × 4 series, MaxSeries 10: %d series exported, %v points dropped", len(exported(t, tel)),
		counter(t, tel, "bftlog_kafka_gateway_telemetry_dropped_points_total", "series_limit"))
	require.Len(t, exported(t, tel), 10)
	require.Equal(t, 10.0, counter(t, tel, "bftlog_kafka_gateway_telemetry_series", ""))
	for _, sub := range subs {
		*clock = clock.Add(time.Second)
		require.Zero(t, push(tel, sub.ClientInstanceID, sub.SubscriptionID, 0, nil, true))
	}
	require.Zero(t, tel.series)
	require.Zero(t, tel.bytes)

	tel, clock = testTelemetry(Telemetry{Metrics: []string{"m."}, PushInterval: time.Second, MaxBytes: 4 << 10})
	for range 5 {
		sub := getSub(tel, [16]byte{}, "app")
		var metrics [][]byte
		for m := range 4 {
			metrics = append(metrics, otlpMetric(fmt.Sprintf("m.s%d", m), 5, false, otlpPoint(1, otlpKV("topic", strings.Repeat("t", 100)))))
		}
		*clock = clock.Add(time.Second)
		require.Zero(t, push(tel, sub.ClientInstanceID, sub.SubscriptionID, 0, otlpData(nil, metrics...), false))
	}
	t.Logf("5 clients × 4 series, MaxBytes 4 KiB: %d series holding %d bytes, %v points dropped", tel.series, tel.bytes,
		counter(t, tel, "bftlog_kafka_gateway_telemetry_dropped_points_total", "bytes_limit"))
	require.LessOrEqual(t, tel.bytes, int64(4<<10))
	require.Less(t, tel.series, 20)
	require.Positive(t, counter(t, tel, "bftlog_kafka_gateway_telemetry_dropped_points_total", "bytes_limit"))
}

// Takeover and eviction: an instance belongs to the principal that made it (another's push to
// it is UNKNOWN_SUBSCRIPTION_ID and changes nothing, another's Get with it gets a new id); a
// connection makes at most maxInstancesPerConn instances (past it a Get hears no subscription
// and keeps nothing), given back when it closes; and instances that never pushed are evicted
// before those that did.
func TestAttackTelemetryTakeoverAndEviction(t *testing.T) {
	tel, clock := testTelemetry(Telemetry{Metrics: []string{"m."}, PushInterval: time.Second, MaxClients: 3})
	alice := telemetryCaller{clientID: "app", principal: "alice"}
	var ids [][16]byte
	good := otlpData(nil, otlpMetric("m.x", 5, false, otlpPoint(7)))
	for range 2 {
		sub := getAs(tel, alice, [16]byte{})
		ids = append(ids, sub.ClientInstanceID)
		*clock = clock.Add(time.Second)
		require.Zero(t, pushAs(tel, alice, sub.ClientInstanceID, sub.SubscriptionID, 0, good, false))
	}
	before := exported(t, tel)
	require.Len(t, before, 2)

	connCtx, closeConn := context.WithCancel(context.Background())
	mallory := telemetryCaller{clientID: "evil", principal: "mallory", conn: new(int), closed: connCtx}
	*clock = clock.Add(time.Second)
	require.Equal(t, kerr.UnknownSubscriptionID.Code, pushAs(tel, mallory, ids[0], tel.subID, 0, otlpData(nil, otlpMetric("m.x", 5, false, otlpPoint(666))), false))
	require.Equal(t, kerr.UnknownSubscriptionID.Code, pushAs(tel, mallory, ids[1], tel.subID, 0, nil, true), "nor end it")
	taken := getAs(tel, mallory, ids[0])
	require.NotEqual(t, ids[0], taken.ClientInstanceID, "another principal's Get gets a new id")
	made := 1
	for range 10 { // the connection makes 3 more, evicting its own (never pushed) ones, then none
		if sub := getAs(tel, mallory, [16]byte{}); len(sub.RequestedMetrics) > 0 {
			made++
		} else {
			require.EqualValues(t, quietPushInterval.Milliseconds(), sub.PushIntervalMillis)
		}
	}
	evicted := counter(t, tel, "bftlog_kafka_gateway_telemetry_evicted_clients_total", "")
	t.Logf("one connection of another principal, 11 Gets and 2 pushes: %d instances made, %v evicted, alice's series %v",
		made, evicted, exported(t, tel))
	require.Equal(t, maxInstancesPerConn, made)
	require.Contains(t, tel.clients, ids[0], "pushers kept: the never-pushed were evicted")
	require.Contains(t, tel.clients, ids[1])
	require.Equal(t, before, exported(t, tel), "alice's series untouched")

	closeConn()
	require.Eventually(t, func() bool {
		tel.mu.Lock()
		defer tel.mu.Unlock()
		return len(tel.perConn) == 0
	}, 5*time.Second, 10*time.Millisecond, "the connection's count goes with it")
}

// Histograms and summaries are not exported; each of their data points is counted dropped.
func TestTelemetryUnsupportedTypeCountedPerPoint(t *testing.T) {
	tel, clock := testTelemetry(Telemetry{Metrics: []string{"*"}, PushInterval: time.Second})
	sub := getSub(tel, [16]byte{}, "app")
	var hist []byte
	for range 3 {
		hist = protowire.AppendTag(hist, 1, protowire.BytesType)
		hist = protowire.AppendBytes(hist, nil)
	}
	m := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "h")
	m = protowire.AppendBytes(protowire.AppendTag(m, 9, protowire.BytesType), hist)
	*clock = clock.Add(time.Second)
	require.Zero(t, push(tel, sub.ClientInstanceID, sub.SubscriptionID, 0, otlpData(nil, m), false))
	require.Equal(t, 3.0, counter(t, tel, "bftlog_kafka_gateway_telemetry_dropped_points_total", "unsupported_type"))
}

// Listen's error returns close the metrics server too (it is started last), and it is served
// with its timeouts.
func TestTelemetryListenErrorClosesMetrics(t *testing.T) {
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := probe.Addr().String()
	require.NoError(t, probe.Close())
	_, err = Listen(Config{Addr: "127.0.0.1:0", MetricsAddr: addr, Users: []User{{Name: "nopassword"}}})
	require.Error(t, err)
	again, err := net.Listen("tcp", addr)
	require.NoError(t, err, "the metrics address is free after Listen failed")
	require.NoError(t, again.Close())

	s := serve(t, Config{MetricsAddr: "127.0.0.1:0"}, nil)
	require.NotZero(t, s.metricsHTTP.WriteTimeout)
	require.NotZero(t, s.metricsHTTP.IdleTimeout)
}

// checkParse parses b and checks what any input must give: no panic, at most keep points, and
// names and labels within their bounds.
func checkParse(t *testing.T, b []byte) {
	const keep = 8
	points, dropped, err := parseOTLP(b, func(string) bool { return true }, keep)
	for reason, n := range dropped {
		require.Positive(t, n, reason)
	}
	if err != nil {
		return
	}
	require.LessOrEqual(t, len(points), keep)
	for _, p := range points {
		require.LessOrEqual(t, len(p.name), maxMetricName)
		require.True(t, model.IsValidLegacyMetricName(p.name), p.name)
		require.Len(t, p.values, len(p.labels))
		require.LessOrEqual(t, len(p.labels), maxAttributes)
		require.True(t, slices.IsSorted(p.labels))
		require.Len(t, slices.Compact(slices.Clone(p.labels)), len(p.labels), "each name once")
		for i, l := range p.labels {
			require.LessOrEqual(t, len(l), maxLabelName)
			require.True(t, model.LabelName(l).IsValidLegacy(), l)
			require.LessOrEqual(t, len(p.values[i]), maxLabelValue)
			require.True(t, utf8.ValidString(p.values[i]))
		}
	}
	none, _, _ := parseOTLP(b, func(string) bool { return false }, keep)
	require.Empty(t, none)
}

// parseSeeds are structured OTLP pushes: the fuzz target's seeds, and the normal test's.
func parseSeeds() [][]byte {
	long := strings.Repeat("k", maxLabelName+1)
	var many [][]byte
	for a := range 3 * maxAttributes {
		many = append(many, otlpKV(fmt.Sprintf("a.%d", a), "v"))
	}
	return [][]byte{
		nil,
		otlpData(nil),
		otlpData([][]byte{otlpKV("group_id", "g")}, otlpMetric("org.apache.kafka.producer.x", 7, false, otlpPoint(3))),
		otlpData(many, otlpMetric("a.b", 5, false, otlpPoint(1, many...), otlpPoint(2))),
		otlpData([][]byte{otlpKV(long, "v"), otlpKV("9lives", "v"), otlpKV("__name__", "x"), otlpKV("client_id", "c")},
			otlpMetric("d", 7, true, otlpPoint(1, otlpKV("ü.é", strings.Repeat("é", 100)), otlpKV(long, "x")))),
		otlpData(nil, otlpMetric(strings.Repeat("n", maxMetricName), 5, false, otlpPoint(1))),
		otlpData(nil, otlpMetric("e", 5, false, make([][]byte, 20)...)),
	}
}

// Structured seeds and, deterministically, bytes flipped in them: the invariants hold.
func TestTelemetryParseSeeds(t *testing.T) {
	n := 0
	for _, seed := range parseSeeds() {
		checkParse(t, seed)
		for i := range seed {
			for _, x := range []byte{0x01, 0x80, 0xff} {
				b := bytes.Clone(seed)
				b[i] ^= x
				checkParse(t, b)
				n++
			}
		}
	}
	t.Logf("%d seeds, %d mutations of them parsed within the bounds", len(parseSeeds()), n)
}

func FuzzParseOTLP(f *testing.F) {
	for _, seed := range parseSeeds() {
		f.Add(seed)
	}
	f.Fuzz(checkParse)
}
