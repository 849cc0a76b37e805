package kafka

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"io"
	"math"
	"math/rand"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang/snappy"
	dto "github.com/prometheus/client_model/go"
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
	return tel.getTelemetrySubscriptions(r, clientID).(*kmsg.GetTelemetrySubscriptionsResponse)
}

func push(tel *telemetry, id [16]byte, sub int32, codec int8, metrics []byte, terminating bool) int16 {
	r := kmsg.NewPtrPushTelemetryRequest()
	r.ClientInstanceID, r.SubscriptionID, r.CompressionType, r.Metrics, r.Terminating = id, sub, codec, metrics, terminating
	return tel.pushTelemetry(r, "app").(*kmsg.PushTelemetryResponse).ErrorCode
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

	// Random bytes never panic and are never taken as metrics with nothing to show for them.
	rng := rand.New(rand.NewSource(1))
	for range 2000 {
		b := make([]byte, rng.Intn(64))
		rng.Read(b)
		_, _, _ = parseOTLP(b, func(string) bool { return true }, 10)
	}
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
