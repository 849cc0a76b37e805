package kafka

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/protobuf/encoding/protowire"
)

// The gateway's Prometheus registry: a few series of its own, and the metrics clients push
// (telemetry.go), each a gauge kafka_client_<OTLP name, dots as underscores> labelled with
// the client's client_id and client_instance_id and the point's OTLP attributes (the
// resource's, then the data point's). Served at Config.MetricsAddr's /metrics.

const (
	// maxLabelValue bounds a label value (a client id, an attribute): longer ones are cut.
	maxLabelValue = 128
	// maxAttributes bounds the attributes kept as labels of one series; further ones are
	// left off.
	maxAttributes = 16
	// maxMetricName bounds an exported name; a point with a longer one is dropped.
	maxMetricName = 200
)

// gatewayMetrics are the gateway's own series.
type gatewayMetrics struct {
	registry         *prometheus.Registry
	requests         []prometheus.Counter // by API key; the last one counts keys Kafka does not define
	telemetryPushes  *prometheus.CounterVec
	telemetryBytes   prometheus.Counter
	telemetryDropped *prometheus.CounterVec
	telemetryEvicted prometheus.Counter
}

func newGatewayMetrics(s *Server) *gatewayMetrics {
	m := &gatewayMetrics{registry: prometheus.NewRegistry()}
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: "bftlog", Subsystem: "kafka_gateway", Name: name, Help: help}
	}
	requests := prometheus.NewCounterVec(prometheus.CounterOpts(opts("requests_total", "Kafka requests read, by API.")), []string{"api"})
	// One counter per key made up front: counting a request takes no map lookup, and a
	// client sending made-up keys adds no series.
	for key := int16(0); key < 128; key++ {
		name := "unknown"
		if kmsg.RequestForKey(key) != nil {
			name = kmsg.NameForKey(key)
		}
		m.requests = append(m.requests, requests.WithLabelValues(name))
	}
	m.telemetryPushes = prometheus.NewCounterVec(prometheus.CounterOpts(opts("telemetry_pushes_total",
		"PushTelemetry requests, by result (ok or the Kafka error answered).")), []string{"result"})
	m.telemetryBytes = prometheus.NewCounter(prometheus.CounterOpts(opts("telemetry_push_bytes_total",
		"Bytes of client metrics pushed, as sent (compressed).")))
	m.telemetryDropped = prometheus.NewCounterVec(prometheus.CounterOpts(opts("telemetry_dropped_points_total",
		"Pushed data points not exported, by reason: not_subscribed, unsupported_type (histograms, summaries), name_too_long, series_limit.")), []string{"reason"})
	m.telemetryEvicted = prometheus.NewCounter(prometheus.CounterOpts(opts("telemetry_evicted_clients_total",
		"Client instances forgotten to make room for a new one (past the telemetry client bound).")))
	connections := prometheus.NewGaugeFunc(prometheus.GaugeOpts(opts("connections", "Kafka client connections open.")), func() float64 {
		s.mu.Lock()
		defer s.mu.Unlock()
		return float64(len(s.conns))
	})
	m.registry.MustRegister(requests, m.telemetryPushes, m.telemetryBytes, m.telemetryDropped, m.telemetryEvicted, connections)
	return m
}

func (m *gatewayMetrics) request(key int16) {
	if key < 0 || int(key) >= len(m.requests)-1 {
		key = int16(len(m.requests) - 1)
	}
	m.requests[key].Inc()
}

// Describe sends nothing: the client series are not known in advance (an unchecked collector).
func (t *telemetry) Describe(chan<- *prometheus.Desc) {}

// Collect exports every tracked client's series, and how many clients are tracked.
func (t *telemetry) Collect(ch chan<- prometheus.Metric) {
	t.mu.Lock()
	t.expire(t.now())
	out := []prometheus.Metric{prometheus.MustNewConstMetric(clientsDesc, prometheus.GaugeValue, float64(len(t.clients)))}
	for _, c := range t.clients {
		instance := hex.EncodeToString(c.id[:])
		for _, s := range c.series {
			values := append([]string{c.clientID, instance}, s.values...)
			if m, err := prometheus.NewConstMetric(s.desc, prometheus.GaugeValue, s.value, values...); err == nil {
				out = append(out, m)
			}
		}
	}
	t.mu.Unlock()
	for _, m := range out {
		ch <- m
	}
}

var clientsDesc = prometheus.NewDesc("bftlog_kafka_gateway_telemetry_clients", "Client instances whose pushed metrics are exported.", nil, nil)

// telemetryPoint is one pushed data point, as it is exported.
type telemetryPoint struct {
	name   string
	labels []string // attribute label names, sorted, each once
	values []string
	value  float64
	delta  bool // a delta sum: added to the series
}

// apply sets the client's series from a push, making at most max series; it returns the
// points dropped for the bound. Called with mu held.
func (c *telemetryClient) apply(points []telemetryPoint, maxSeries int) (dropped int) {
	for _, p := range points {
		key := p.name + "\xff" + strings.Join(p.labels, "\xfe") + "\xff" + strings.Join(p.values, "\xfe")
		s := c.series[key]
		if s == nil {
			if len(c.series) >= maxSeries {
				dropped++
				continue
			}
			help := "Kafka client metric pushed with KIP-714 telemetry."
			desc := prometheus.NewDesc(p.name, help, append([]string{"client_id", "client_instance_id"}, p.labels...), nil)
			s = &telemetrySeries{desc: desc, values: p.values}
			c.series[key] = s
		}
		if p.delta {
			s.value += p.value
		} else {
			s.value = p.value
		}
	}
	return dropped
}

var errOTLP = errors.New("malformed OTLP metrics")

// parseOTLP reads an OTLP MetricsData: resource_metrics(1) { resource(1) { attributes(1) },
// scope_metrics(2) { metrics(2) { name(1), gauge(5) | sum(7) { data_points(1) { time(3),
// as_double(4), as_int(6), attributes(7) }, aggregation_temporality(2) } } } }. Other fields
// are skipped; histograms and summaries are counted as dropped. It keeps at most keep points
// and counts the rest, reading on so that malformed bytes anywhere are refused.
func parseOTLP(b []byte, allowed func(string) bool, keep int) ([]telemetryPoint, map[string]int, error) {
	var points []telemetryPoint
	dropped := map[string]int{}
	err := protoFields(b, func(num protowire.Number, typ protowire.Type, rm []byte, _ uint64) error {
		if num != 1 {
			return nil
		}
		if typ != protowire.BytesType {
			return errOTLP
		}
		var resource [][2]string
		var scopes [][]byte
		err := protoFields(rm, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
			switch {
			case (num == 1 || num == 2) && typ != protowire.BytesType:
				return errOTLP
			case num == 1:
				return protoFields(v, func(num protowire.Number, typ protowire.Type, kv []byte, _ uint64) error {
					if num != 1 {
						return nil
					}
					a, err := attribute(typ, kv)
					if a[0] != "" {
						resource = append(resource, a)
					}
					return err
				})
			case num == 2:
				scopes = append(scopes, v)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, sm := range scopes {
			err := protoFields(sm, func(num protowire.Number, typ protowire.Type, m []byte, _ uint64) error {
				if num != 2 {
					return nil
				}
				if typ != protowire.BytesType {
					return errOTLP
				}
				return metric(m, resource, allowed, func(p telemetryPoint) {
					if len(points) < keep {
						points = append(points, p)
					} else {
						dropped["series_limit"]++
					}
				}, dropped)
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	return points, dropped, err
}

// metric reads one Metric's gauge or sum points.
func metric(m []byte, resource [][2]string, allowed func(string) bool, emit func(telemetryPoint), dropped map[string]int) error {
	var name string
	var data [][]byte // gauge or sum bodies
	var sum []bool
	err := protoFields(m, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		switch num {
		case 1, 5, 7, 9, 10, 11:
			if typ != protowire.BytesType {
				return errOTLP
			}
		}
		switch num {
		case 1:
			name = string(v)
		case 5, 7:
			data, sum = append(data, v), append(sum, num == 7)
		case 9, 10, 11: // histogram, exponential histogram, summary: not exported
			dropped["unsupported_type"]++
		}
		return nil
	})
	if err != nil {
		return err
	}
	exported := "kafka_client_" + promName(name)
	for i, d := range data {
		delta := false
		var dps [][]byte
		err := protoFields(d, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
			switch {
			case num == 1 && typ == protowire.BytesType:
				dps = append(dps, v)
			case num == 2 && typ == protowire.VarintType && sum[i]:
				delta = n == 1 // AGGREGATION_TEMPORALITY_DELTA
			case num == 1 || (num == 2 && sum[i]):
				return errOTLP
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, dp := range dps {
			p := telemetryPoint{name: exported, delta: delta}
			attrs := slices.Clone(resource)
			err := protoFields(dp, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
				switch {
				case num == 4 && typ == protowire.Fixed64Type:
					p.value = math.Float64frombits(n)
				case num == 6 && typ == protowire.Fixed64Type:
					p.value = float64(int64(n))
				case num == 7:
					a, err := attribute(typ, v)
					if a[0] != "" {
						attrs = append(attrs, a)
					}
					return err
				case num == 3 || num == 4 || num == 6:
					if typ != protowire.Fixed64Type {
						return errOTLP
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
			switch {
			case !allowed(name):
				dropped["not_subscribed"]++
			case len(exported) > maxMetricName:
				dropped["name_too_long"]++
			default:
				p.labels, p.values = labels(attrs)
				emit(p)
			}
		}
	}
	return nil
}

// labels makes attributes Prometheus labels: names sanitised, a later attribute of a name
// (the data point's) winning over an earlier one (the resource's), the names the gateway sets
// and reserved names left off, at most maxAttributes, sorted by name.
func labels(attrs [][2]string) ([]string, []string) {
	byName := map[string]string{}
	for _, a := range attrs {
		name := promName(a[0])
		if name == "client_id" || name == "client_instance_id" || strings.HasPrefix(name, "__") {
			continue
		}
		if _, ok := byName[name]; ok || len(byName) < maxAttributes {
			byName[name] = labelValue(a[1])
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	slices.Sort(names)
	values := make([]string, len(names))
	for i, n := range names {
		values[i] = byName[n]
	}
	return names, values
}

// attribute reads a KeyValue { key(1), value(2) AnyValue { string(1) | bool(2) | int(3) |
// double(4) | bytes(7) } } as a key and its value in text; arrays and maps give no key.
func attribute(typ protowire.Type, kv []byte) ([2]string, error) {
	if typ != protowire.BytesType {
		return [2]string{}, errOTLP
	}
	var out [2]string
	var ok bool
	err := protoFields(kv, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		switch num {
		case 1:
			if typ != protowire.BytesType {
				return errOTLP
			}
			out[0] = string(v)
		case 2:
			if typ != protowire.BytesType {
				return errOTLP
			}
			return protoFields(v, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
				switch {
				case num == 1 && typ == protowire.BytesType:
					out[1], ok = string(v), true
				case num == 2 && typ == protowire.VarintType:
					out[1], ok = strconv.FormatBool(n != 0), true
				case num == 3 && typ == protowire.VarintType:
					out[1], ok = strconv.FormatInt(int64(n), 10), true
				case num == 4 && typ == protowire.Fixed64Type:
					out[1], ok = strconv.FormatFloat(math.Float64frombits(n), 'g', -1, 64), true
				case num == 7 && typ == protowire.BytesType:
					out[1], ok = hex.EncodeToString(v[:min(len(v), maxLabelValue/2)]), true
				}
				return nil
			})
		}
		return nil
	})
	if !ok {
		out[0] = ""
	}
	return out, err
}

// protoFields calls f with each field of a protobuf message: the bytes of a length-delimited
// field, or the number of a varint or fixed one.
func protoFields(b []byte, f func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error) error {
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return errOTLP
		}
		b = b[l:]
		var v []byte
		var n uint64
		switch typ {
		case protowire.VarintType:
			n, l = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			n, l = protowire.ConsumeFixed64(b)
		case protowire.Fixed32Type:
			var n32 uint32
			n32, l = protowire.ConsumeFixed32(b)
			n = uint64(n32)
		case protowire.BytesType:
			v, l = protowire.ConsumeBytes(b)
		default:
			l = protowire.ConsumeFieldValue(num, typ, b)
		}
		if l < 0 {
			return errOTLP
		}
		b = b[l:]
		if err := f(num, typ, v, n); err != nil {
			return err
		}
	}
	return nil
}

// promName is s as a Prometheus name: characters other than letters, digits and underscores
// (an OTLP name's dots) become underscores, and a leading digit gets one before it.
func promName(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_', r >= '0' && r <= '9' && i > 0:
			b.WriteRune(r)
		case r >= '0' && r <= '9':
			b.WriteByte('_')
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// labelValue is s cut to maxLabelValue bytes and made valid UTF-8.
func labelValue(s string) string {
	if len(s) > maxLabelValue {
		s = s[:maxLabelValue]
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// serveMetrics serves the registry at addr's /metrics until Close.
func (s *Server) serveMetrics(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics address %q: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	s.metricsHTTP = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.metricsAddr = ln.Addr().String()
	go func() { _ = s.metricsHTTP.Serve(ln) }()
	return nil
}

// MetricsAddr is where /metrics is served ("" without Config.MetricsAddr).
func (s *Server) MetricsAddr() string { return s.metricsAddr }

// Registry is the gateway's Prometheus registry: its own series and its clients'.
func (s *Server) Registry() *prometheus.Registry { return s.metrics.registry }
