package kafka

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/fnv"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Client telemetry (KIP-714): clients ask GetTelemetrySubscriptions which of their metrics the
// broker wants and how often, then PushTelemetry them as OTLP protobuf. The gateway's
// subscription is its operator's (Config.Telemetry, `--telemetry-metrics`); what clients push is
// exported beside the gateway's own series (telemetry_export.go). Without a subscription every
// client is told "nothing, ask again in half an hour" and nothing about it is kept.

// Telemetry is the gateway's subscription to client metrics.
type Telemetry struct {
	// Metrics are the metric name prefixes requested (e.g. "org.apache.kafka.producer."); "*"
	// requests every metric. Empty: no subscription, clients push nothing.
	Metrics []string
	// PushInterval is how often clients push (default 1 min; between 100 ms and 1 h, Kafka's
	// bounds of interval.ms; franz-go pushes at most once a second whatever it is told).
	PushInterval time.Duration
	// MaxClients bounds the client instances tracked, and so exported (default 1,000); a new
	// one past it evicts one that never pushed, else the one heard from longest ago.
	MaxClients int
	// MaxPushBytes bounds one push, compressed and decompressed (default 1 MiB, Kafka's
	// telemetry.max.bytes): TELEMETRY_TOO_LARGE past it.
	MaxPushBytes int32
	// MaxSeriesPerClient bounds the series exported for one client instance (default 256);
	// data points of further series are dropped and counted.
	MaxSeriesPerClient int
	// MaxSeries bounds the series exported for all clients together (default 10,000), and
	// MaxBytes what they hold (default 16 MiB; seriesCost); points of further series are
	// dropped and counted. One client's series hold at most maxClientBytes.
	MaxSeries int
	MaxBytes  int64
}

// Defaults of Telemetry's bounds.
const (
	DefaultTelemetryPushInterval = time.Minute
	DefaultTelemetryMaxClients   = 1000
	DefaultTelemetryMaxPushBytes = 1 << 20
	DefaultTelemetryMaxSeries    = 256 // per client instance
	DefaultTelemetryTotalSeries  = 10_000
	DefaultTelemetryTotalBytes   = 16 << 20
)

const (
	// quietPushInterval is told to clients when nothing is subscribed: a client asks again
	// this much later, so an unsubscribed gateway costs one tiny request per client per half
	// hour (and a subscription added by a restart reaches clients within it).
	quietPushInterval = 30 * time.Minute
	minPushInterval   = 100 * time.Millisecond
	// maxPushInterval is Kafka's bound of interval.ms; its milliseconds fit the int32 sent.
	maxPushInterval = time.Hour
	// telemetryExpiry forgets a client instance not heard from for this long, or for three
	// push intervals if longer (Kafka's client instance cache expiry).
	telemetryExpiry = time.Minute
	// maxClientBytes bounds what one client instance's series hold: 256 series of ordinary
	// names and labels fit, and a client with few, long labels cannot take MaxBytes alone.
	maxClientBytes = 256 << 10
	// maxInstancesPerConn bounds the client instances one connection makes (a client uses
	// one): a connection cannot fill the table, evicting others, with a request each.
	maxInstancesPerConn = 4
	// maxTerminated is how many instance ids that sent their terminating push are
	// remembered, so that a later push with one is INVALID_REQUEST, as in Kafka.
	maxTerminated = 1024
)

// acceptedCompression are the codecs a push may use, in the gateway's order of preference
// (clients take the first they have): those the gateway decompresses within a bound (below).
// None is always accepted and not listed, as Kafka does.
var acceptedCompression = []int8{4, 3, 1, 2} // zstd, lz4, gzip, snappy

// telemetry holds the subscription and the client instances pushing on it.
type telemetry struct {
	cfg Telemetry
	// requested is the subscription as sent to clients: the prefixes, or [""] for "*" (the
	// KIP's "all metrics", which franz-go reads; Java's client, which looks for "*", matches
	// every name against the empty prefix too).
	requested []string
	subID     int32
	stats     *gatewayMetrics
	now       func() time.Time
	mu        sync.Mutex
	clients   map[[16]byte]*telemetryClient
	// series and bytes are what every client's series hold, against MaxSeries and MaxBytes.
	series int
	bytes  int64
	// perConn counts the instances each open connection made (telemetryCaller.conn).
	perConn map[any]int
	// terminated are the latest maxTerminated ids that sent a terminating push, in a ring.
	terminated     map[[16]byte]bool
	terminatedRing [][16]byte
	terminatedNext int
}

// telemetryClient is one client instance: when it last asked and pushed, and its series.
type telemetryClient struct {
	id                [16]byte
	instance          string // id in hex, its label value
	clientID          string
	seen              time.Time
	lastGet, lastPush time.Time
	// principal made the instance: another's pushes to it are refused, its Gets get a new id.
	principal string
	// pushed: a push was taken. Instances that never pushed are evicted first.
	pushed bool
	// lastErr is the last error it was answered: after UNKNOWN_SUBSCRIPTION_ID or
	// UNSUPPORTED_COMPRESSION_TYPE it may ask again at once (Kafka's exception).
	lastErr int16
	series  map[string]*telemetrySeries
	bytes   int64 // the series' seriesCost
}

type telemetrySeries struct {
	desc   *prometheus.Desc
	values []string
	value  float64
}

// telemetryCaller is who sends a telemetry request.
type telemetryCaller struct {
	clientID  string
	principal string
	// conn names the connection (nil: counted nowhere); closed ends when it does.
	conn   any
	closed context.Context
}

// telemetryCaller is the request's caller: its client id, the connection's principal, and
// the connection (its *saslConn, one per connection).
func (s *Server) telemetryCaller(ctx context.Context) telemetryCaller {
	c := telemetryCaller{clientID: clientID(ctx), conn: ctx.Value(saslKey{}), closed: ctx}
	if id := s.ident(ctx); id != nil {
		c.principal = id.principal
	}
	return c
}

func newTelemetry(cfg Telemetry, stats *gatewayMetrics) *telemetry {
	cfg.PushInterval = min(max(orDefault(cfg.PushInterval, DefaultTelemetryPushInterval), minPushInterval), maxPushInterval)
	cfg.MaxClients = orDefault(cfg.MaxClients, DefaultTelemetryMaxClients)
	cfg.MaxPushBytes = orDefault(cfg.MaxPushBytes, DefaultTelemetryMaxPushBytes)
	cfg.MaxSeriesPerClient = orDefault(cfg.MaxSeriesPerClient, DefaultTelemetryMaxSeries)
	cfg.MaxSeries = orDefault(cfg.MaxSeries, DefaultTelemetryTotalSeries)
	cfg.MaxBytes = orDefault(cfg.MaxBytes, DefaultTelemetryTotalBytes)
	t := &telemetry{cfg: cfg, stats: stats, now: time.Now, clients: map[[16]byte]*telemetryClient{},
		perConn: map[any]int{}, terminated: map[[16]byte]bool{}}
	for _, m := range cfg.Metrics {
		if m = strings.TrimSpace(m); m == "*" {
			t.requested = []string{""}
			break
		} else if m != "" && !slices.Contains(t.requested, m) {
			t.requested = append(t.requested, m)
		}
	}
	slices.Sort(t.requested)
	// The subscription id names the subscription: another configuration, another id, so a
	// client pushing on an old one is told UNKNOWN_SUBSCRIPTION_ID and asks again. It does not
	// depend on the client or the process, so gateways of one fleet with one configuration
	// accept each other's clients.
	h := fnv.New32a()
	for _, m := range t.requested {
		h.Write([]byte(m))
		h.Write([]byte{0})
	}
	_ = binary.Write(h, binary.BigEndian, [2]int64{int64(t.pushInterval()), int64(cfg.MaxPushBytes)})
	t.subID = int32(h.Sum32())
	return t
}

func (t *telemetry) subscribed() bool { return len(t.requested) > 0 }

func (t *telemetry) pushInterval() time.Duration {
	if !t.subscribed() {
		return quietPushInterval
	}
	return t.cfg.PushInterval
}

func (t *telemetry) getTelemetrySubscriptions(r *kmsg.GetTelemetrySubscriptionsRequest, who telemetryCaller) kmsg.Response {
	resp := kmsg.NewPtrGetTelemetrySubscriptionsResponse()
	resp.SetVersion(r.Version)
	id := r.ClientInstanceID
	if id == ([16]byte{}) {
		id = newInstanceID()
	}
	resp.ClientInstanceID, resp.SubscriptionID = id, t.subID
	resp.AcceptedCompressionTypes = acceptedCompression
	resp.PushIntervalMillis = int32(t.pushInterval().Milliseconds())
	resp.TelemetryMaxBytes = t.cfg.MaxPushBytes
	// Cumulative sums: the exported gauge is the client's running total, which is what
	// Prometheus' rate() and increase() expect, and a push lost or throttled loses nothing.
	// (Kafka asks for deltas, for exporters that forward each push; a client that sends
	// deltas anyway is summed here.)
	resp.DeltaTemporality = false
	resp.RequestedMetrics = t.requested
	if !t.subscribed() {
		return resp // nothing kept: the client only waits and asks again
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	c := t.clients[id]
	if t.terminated[id] || (c != nil && c.principal != who.principal) {
		// A finished id, or another principal's, is not given back: the client carries on
		// with a new one (clients take the id answered).
		id, c = newInstanceID(), nil
		resp.ClientInstanceID = id
	}
	if c == nil {
		if c = t.newClient(id, who, now); c == nil {
			// The connection made its share of instances: nothing is asked of this one.
			resp.RequestedMetrics, resp.PushIntervalMillis = nil, int32(quietPushInterval.Milliseconds())
			return resp
		}
	}
	c.seen, c.clientID = now, labelValue(who.clientID)
	if wait := t.pushInterval() - now.Sub(later(c.lastGet, c.lastPush)); wait > 0 &&
		c.lastErr != kerr.UnknownSubscriptionID.Code && c.lastErr != kerr.UnsupportedCompressionType.Code {
		// Asking again before the interval is up, answered as Kafka does: the error alone.
		// Not ThrottleMillis: a client honours it by holding the whole connection (KIP-219),
		// its heartbeats and fetches too.
		out := kmsg.NewPtrGetTelemetrySubscriptionsResponse()
		out.SetVersion(r.Version)
		out.ErrorCode = kerr.ThrottlingQuotaExceeded.Code
		return out
	}
	c.lastGet, c.lastErr = now, 0
	return resp
}

func (t *telemetry) pushTelemetry(r *kmsg.PushTelemetryRequest, who telemetryCaller) kmsg.Response {
	resp := kmsg.NewPtrPushTelemetryResponse()
	resp.SetVersion(r.Version)
	t.stats.telemetryBytes.Add(float64(len(r.Metrics)))
	code, payload := t.admitPush(r, who)
	if code == 0 && len(payload) > 0 {
		points, dropped, err := parseOTLP(payload, t.allowed, t.cfg.MaxSeriesPerClient)
		if err != nil {
			code = kerr.InvalidRecord.Code
		} else {
			t.mu.Lock()
			// Evicted meanwhile, or made again by another principal: nothing is set.
			if c := t.clients[r.ClientInstanceID]; c != nil && c.principal == who.principal {
				t.apply(c, points, dropped)
			}
			t.mu.Unlock()
		}
		for reason, n := range dropped {
			t.stats.telemetryDropped.WithLabelValues(reason).Add(float64(n))
		}
	}
	resp.ErrorCode = code
	t.stats.telemetryPushes.WithLabelValues(resultName(code)).Inc()
	return resp
}

// admitPush checks a push in Kafka's order (terminated, throttling, subscription,
// compression, size) and returns its decompressed metrics. A terminating push ends the
// instance and is not read.
func (t *telemetry) admitPush(r *kmsg.PushTelemetryRequest, who telemetryCaller) (int16, []byte) {
	id := r.ClientInstanceID
	if id == ([16]byte{}) {
		return kerr.InvalidRequest.Code, nil
	}
	if !t.subscribed() {
		return kerr.UnknownSubscriptionID.Code, nil // asks again, hears "nothing"
	}
	t.mu.Lock()
	now := t.now()
	c := t.clients[id]
	switch {
	case t.terminated[id]:
		t.mu.Unlock()
		return kerr.InvalidRequest.Code, nil // a push after the terminating one, as Kafka answers it
	case c != nil && c.principal != who.principal:
		// Another principal's instance is left alone. UNKNOWN_SUBSCRIPTION_ID (rather than
		// INVALID_REQUEST, which ends a client's telemetry for good) sends a client that
		// happens on the id back to Get, which gives it one of its own.
		t.mu.Unlock()
		return kerr.UnknownSubscriptionID.Code, nil
	case c == nil && r.SubscriptionID != t.subID:
		t.mu.Unlock()
		return kerr.UnknownSubscriptionID.Code, nil // nothing kept for an id never subscribed
	case c == nil:
		// Known to another gateway of the fleet, or forgotten here: the subscription is ours.
		if c = t.newClient(id, who, now); c == nil {
			t.mu.Unlock()
			return kerr.UnknownSubscriptionID.Code, nil // the connection made its share
		}
	}
	c.seen, c.clientID = now, labelValue(who.clientID)
	code := int16(0)
	switch {
	case !r.Terminating && !c.lastGet.After(c.lastPush) && now.Sub(later(c.lastGet, c.lastPush)) < t.cfg.PushInterval:
		// Faster than the interval (the first push after a subscription may come early:
		// clients jitter it between half and one and a half intervals).
		code = kerr.ThrottlingQuotaExceeded.Code
	case r.SubscriptionID != t.subID:
		code = kerr.UnknownSubscriptionID.Code
	case r.CompressionType != 0 && !slices.Contains(acceptedCompression, r.CompressionType):
		code = kerr.UnsupportedCompressionType.Code
	case len(r.Metrics) > int(t.cfg.MaxPushBytes):
		code = kerr.TelemetryTooLarge.Code
	}
	if code != kerr.ThrottlingQuotaExceeded.Code {
		c.lastPush = now
	}
	c.lastErr = code
	if r.Terminating {
		if code != kerr.UnknownSubscriptionID.Code {
			// The client is closing (its last push taken or not, as Kafka marks it
			// terminating either way): its series go with it, so its last ones are not read.
			t.remove(c)
			t.terminate(id)
		}
		t.mu.Unlock()
		return code, nil
	}
	c.pushed = c.pushed || code == 0
	t.mu.Unlock()
	if code != 0 {
		return code, nil
	}
	payload, err := decompressTelemetry(r.CompressionType, r.Metrics, int(t.cfg.MaxPushBytes))
	if errors.Is(err, errTelemetryTooLarge) {
		return kerr.TelemetryTooLarge.Code, nil
	} else if err != nil {
		return kerr.InvalidRecord.Code, nil
	}
	return 0, payload
}

// allowed tells whether a metric name is in the subscription: a client may push more than it
// was asked, and only what was asked is kept.
func (t *telemetry) allowed(name string) bool {
	for _, p := range t.requested {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// newClient makes id's state for who, or nil when who's connection made its share of
// instances. Past MaxClients it forgets those silent past their expiry, then evicts (evictable).
// Called with mu held.
func (t *telemetry) newClient(id [16]byte, who telemetryCaller, now time.Time) *telemetryClient {
	if who.conn != nil {
		n := t.perConn[who.conn]
		if n >= maxInstancesPerConn {
			return nil
		}
		if n == 0 && who.closed != nil {
			conn := who.conn
			context.AfterFunc(who.closed, func() { // the count goes with the connection
				t.mu.Lock()
				delete(t.perConn, conn)
				t.mu.Unlock()
			})
		}
		t.perConn[who.conn] = n + 1
	}
	if len(t.clients) >= t.cfg.MaxClients {
		t.expire(now)
	}
	for len(t.clients) >= t.cfg.MaxClients {
		t.remove(t.evictable())
		t.stats.telemetryEvicted.Inc()
	}
	c := &telemetryClient{id: id, instance: hex.EncodeToString(id[:]), clientID: labelValue(who.clientID),
		principal: who.principal, seen: now, series: map[string]*telemetrySeries{}}
	t.clients[id] = c
	return c
}

// evictable is the client a new one replaces: of those that never pushed (a Get costs
// nothing to send), else of all, the one heard from longest ago. Called with mu held.
func (t *telemetry) evictable() *telemetryClient {
	var out *telemetryClient
	for _, c := range t.clients {
		if out == nil || (out.pushed && !c.pushed) || (out.pushed == c.pushed && c.seen.Before(out.seen)) {
			out = c
		}
	}
	return out
}

// remove forgets a client and what its series hold. Called with mu held.
func (t *telemetry) remove(c *telemetryClient) {
	delete(t.clients, c.id)
	t.series -= len(c.series)
	t.bytes -= c.bytes
}

// terminate remembers id as finished, forgetting the oldest past maxTerminated. Called with
// mu held.
func (t *telemetry) terminate(id [16]byte) {
	if t.terminated[id] {
		return
	}
	if len(t.terminatedRing) < maxTerminated {
		t.terminatedRing = append(t.terminatedRing, id)
	} else {
		delete(t.terminated, t.terminatedRing[t.terminatedNext])
		t.terminatedRing[t.terminatedNext] = id
		t.terminatedNext = (t.terminatedNext + 1) % maxTerminated
	}
	t.terminated[id] = true
}

// expire forgets the clients silent past the expiry. Called with mu held.
func (t *telemetry) expire(now time.Time) {
	after := max(telemetryExpiry, 3*t.cfg.PushInterval)
	for _, c := range t.clients {
		if now.Sub(c.seen) > after {
			t.remove(c)
		}
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func newInstanceID() [16]byte {
	var id [16]byte
	_, _ = rand.Read(id[:])
	id[6] = id[6]&0x0f | 0x40 // a version 4 UUID, as Kafka's Uuid.randomUuid
	id[8] = id[8]&0x3f | 0x80
	return id
}

// resultName names a push's outcome for the gateway's own counter.
func resultName(code int16) string {
	if code == 0 {
		return "ok"
	}
	var ke *kerr.Error
	if errors.As(kerr.ErrorForCode(code), &ke) {
		return strings.ToLower(ke.Message)
	}
	return "error"
}

var errTelemetryTooLarge = errors.New("telemetry decompresses past the limit")

// decompressTelemetry expands a push's metrics, failing as soon as they pass limit bytes, so
// a small compressed push cannot make the gateway allocate more than the bound. Snappy comes
// as a raw block (franz-go, librdkafka) or in xerial framing (Java).
func decompressTelemetry(codec int8, in []byte, limit int) ([]byte, error) {
	var r io.Reader
	switch codec {
	case 0:
		return in, nil
	case 1:
		zr, err := gzip.NewReader(bytes.NewReader(in))
		if err != nil {
			return nil, err
		}
		r = zr
	case 2:
		return snappyWithin(in, limit)
	case 3:
		r = lz4.NewReader(bytes.NewReader(in))
	case 4:
		zr, err := zstd.NewReader(bytes.NewReader(in), zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(uint64(limit)), zstd.WithDecoderMaxWindow(8<<20))
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		r = zr
	default:
		return nil, errors.New("unknown codec")
	}
	out, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) || len(out) > limit {
		return nil, errTelemetryTooLarge
	}
	return out, err
}

var xerial = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

func snappyWithin(in []byte, limit int) ([]byte, error) {
	if !bytes.HasPrefix(in, xerial) {
		if n, err := snappy.DecodedLen(in); err != nil {
			return nil, err
		} else if n > limit {
			return nil, errTelemetryTooLarge
		}
		return snappy.Decode(nil, in)
	}
	if len(in) < 16 {
		return nil, io.ErrUnexpectedEOF
	}
	var out []byte
	for rest := in[16:]; len(rest) > 0; {
		if len(rest) < 4 || int64(binary.BigEndian.Uint32(rest)) > int64(len(rest)-4) {
			return nil, io.ErrUnexpectedEOF
		}
		chunk := rest[4 : 4+binary.BigEndian.Uint32(rest)]
		n, err := snappy.DecodedLen(chunk)
		if err != nil {
			return nil, err
		}
		if len(out)+n > limit {
			return nil, errTelemetryTooLarge
		}
		d, err := snappy.Decode(nil, chunk)
		if err != nil {
			return nil, err
		}
		out = append(out, d...)
		rest = rest[4+len(chunk):]
	}
	return out, nil
}
