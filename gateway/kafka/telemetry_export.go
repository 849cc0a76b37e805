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
	"unicode/utf8"

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
	// maxLabelName bounds a label name: an attribute with a longer key is dropped and counted.
	maxLabelName = 128
	// maxAttributes bounds the attributes read from a resource and from a data point, and
	// those kept as labels of one series; further ones are left off.
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
		"Pushed data points not exported, by reason: not_subscribed, unsupported_type (histograms, summaries), name_too_long, series_limit, bytes_limit; and attributes dropped, attribute_too_long (a key past 128 bytes).")), []string{"reason"})
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

// Collect exports every tracked client's series, and how many clients and series are tracked.
// It copies them under the lock and builds the metrics outside it, so a scrape holds no push up
// for longer than the copy.
func (t *telemetry) Collect(ch chan<- prometheus.Metric) {
	type row struct {
		s                  telemetrySeries
		clientID, instance string
	}
	t.mu.Lock()
	t.expire(t.now())
	clients, series, bytes := len(t.clients), t.series, t.bytes
	rows := make([]row, 0, series)
	for _, c := range t.clients {
		for _, s := range c.series {
			rows = append(rows, row{*s, c.clientID, c.instance})
		}
	}
	t.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(clientsDesc, prometheus.GaugeValue, float64(clients))
	ch <- prometheus.MustNewConstMetric(seriesDesc, prometheus.GaugeValue, float64(series))
	ch <- prometheus.MustNewConstMetric(bytesDesc, prometheus.GaugeValue, float64(bytes))
	for _, r := range rows {
		values := append([]string{r.clientID, r.instance}, r.s.values...)
		if m, err := prometheus.NewConstMetric(r.s.desc, prometheus.GaugeValue, r.s.value, values...); err == nil {
			ch <- m
		}
	}
}

var (
	clientsDesc = prometheus.NewDesc("bftlog_kafka_gateway_telemetry_clients", "Client instances whose pushed metrics are exported.", nil, nil)
	seriesDesc  = prometheus.NewDesc("bftlog_kafka_gateway_telemetry_series", "Series of pushed client metrics exported, of all clients.", nil, nil)
	bytesDesc   = prometheus.NewDesc("bftlog_kafka_gateway_telemetry_bytes", "What the exported client series hold, as the telemetry byte bound counts it.", nil, nil)
)

// telemetryPoint is one pushed data point, as it is exported.
type telemetryPoint struct {
	name   string
	labels []string // attribute label names, sorted, each once
	values []string
	value  float64
	delta  bool // a delta sum: added to the series
}

// seriesOverhead is what a series holds besides its strings (its map entry, descriptor and
// slices), roughly.
const seriesOverhead = 256

// seriesCost is what a series of key holds: its strings twice (the key, and the descriptor's
// name, label names and values) and the overhead.
func seriesCost(key string) int64 { return 2*int64(len(key)) + seriesOverhead }

// apply sets c's series from a push; a point of a new series past the client's or the
// gateway's bounds (series, bytes) is dropped and counted in dropped. Called with mu held.
func (t *telemetry) apply(c *telemetryClient, points []telemetryPoint, dropped map[string]int) {
	for _, p := range points {
		key := p.name + "\xff" + strings.Join(p.labels, "\xfe") + "\xff" + strings.Join(p.values, "\xfe")
		s := c.series[key]
		if s == nil {
			cost := seriesCost(key)
			switch {
			case len(c.series) >= t.cfg.MaxSeriesPerClient || t.series >= t.cfg.MaxSeries:
				dropped["series_limit"]++
				continue
			case c.bytes+cost > maxClientBytes || t.bytes+cost > t.cfg.MaxBytes:
				dropped["bytes_limit"]++
				continue
			}
			help := "Kafka client metric pushed with KIP-714 telemetry."
			desc := prometheus.NewDesc(p.name, help, append([]string{"client_id", "client_instance_id"}, p.labels...), nil)
			s = &telemetrySeries{desc: desc, values: p.values}
			c.series[key] = s
			c.bytes += cost
			t.bytes += cost
			t.series++
		}
		if p.delta {
			s.value += p.value
		} else {
			s.value = p.value
		}
	}
	if len(points) > 0 {
		c.pushed = true
	}
}

var errOTLP = errors.New("malformed OTLP metrics")

// parseOTLP reads an OTLP MetricsData: resource_metrics(1) { resource(1) { attributes(1) },
// scope_metrics(2) { metrics(2) { name(1), gauge(5) | sum(7) { data_points(1) { time(3),
// as_double(4), as_int(6), attributes(7) }, aggregation_temporality(2) } } } }. Other fields
// are skipped; histograms and summaries are counted as dropped, a data point each. It keeps at
// most keep points and counts the rest.
//
// Its work and what it allocates are linear in the bytes read, and what it keeps bounded by
// keep: a resource's attributes are read once, at most maxAttributes of them, and shared by
// its points; a point's are read (at most maxAttributes) only if the point is kept; a point of
// a metric not subscribed, or with too long a name, or past keep, is walked over and counted.
// The framing of every field is checked, so malformed bytes anywhere are refused; the contents
// of attributes left unread are not.
func parseOTLP(b []byte, allowed func(string) bool, keep int) ([]telemetryPoint, map[string]int, error) {
	p := &otlpParser{allowed: allowed, keep: keep, dropped: map[string]int{}}
	err := protoFields(b, func(num protowire.Number, typ protowire.Type, rm []byte, _ uint64) error {
		if num != 1 {
			return nil
		}
		if typ != protowire.BytesType {
			return errOTLP
		}
		return p.resourceMetrics(rm)
	})
	return p.points, p.dropped, err
}

type otlpParser struct {
	allowed func(string) bool
	keep    int
	points  []telemetryPoint
	dropped map[string]int
}

// label is an attribute as a Prometheus label.
type label struct{ name, value string }

// resourceMetrics reads the resource first, wherever it is in rm, then the metrics.
func (p *otlpParser) resourceMetrics(rm []byte) error {
	var resource []label
	read := 0
	err := protoFields(rm, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		switch {
		case (num == 1 || num == 2) && typ != protowire.BytesType:
			return errOTLP
		case num == 1:
			return protoFields(v, func(num protowire.Number, typ protowire.Type, kv []byte, _ uint64) error {
				if num != 1 {
					return nil
				}
				var err error
				resource, err = p.attribute(resource, typ, kv, &read)
				return err
			})
		}
		return nil
	})
	if err != nil {
		return err
	}
	names, values := split(resource)
	return protoFields(rm, func(num protowire.Number, _ protowire.Type, sm []byte, _ uint64) error {
		if num != 2 {
			return nil
		}
		return protoFields(sm, func(num protowire.Number, typ protowire.Type, m []byte, _ uint64) error {
			if num != 2 {
				return nil
			}
			if typ != protowire.BytesType {
				return errOTLP
			}
			return p.metric(m, resource, names, values)
		})
	})
}

// metric reads one Metric's gauge or sum points, and counts those of other kinds.
func (p *otlpParser) metric(m []byte, resource []label, names, values []string) error {
	var name []byte
	err := protoFields(m, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		switch num {
		case 1, 5, 7, 9, 10, 11:
			if typ != protowire.BytesType {
				return errOTLP
			}
		}
		if num == 1 {
			name = v
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Why its points are not kept, if they are not: decided before any is read.
	var exported, skip string
	switch {
	case len(name) > maxMetricName:
		skip = "name_too_long"
	case !p.allowed(string(name)):
		skip = "not_subscribed"
	default:
		if exported = "kafka_client_" + promName(string(name)); len(exported) > maxMetricName {
			skip = "name_too_long"
		}
	}
	return protoFields(m, func(num protowire.Number, _ protowire.Type, d []byte, _ uint64) error {
		switch num {
		case 5, 7:
			return p.data(d, num == 7, exported, skip, resource, names, values)
		case 9, 10, 11: // histogram, exponential histogram, summary: not exported
			return protoFields(d, func(num protowire.Number, typ protowire.Type, _ []byte, _ uint64) error {
				if num == 1 {
					if typ != protowire.BytesType {
						return errOTLP
					}
					p.dropped["unsupported_type"]++
				}
				return nil
			})
		}
		return nil
	})
}

// data reads a Gauge's or Sum's data points.
func (p *otlpParser) data(d []byte, sum bool, exported, skip string, resource []label, names, values []string) error {
	delta := false
	err := protoFields(d, func(num protowire.Number, typ protowire.Type, _ []byte, n uint64) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
		case num == 2 && typ == protowire.VarintType && sum:
			delta = n == 1 // AGGREGATION_TEMPORALITY_DELTA
		case num == 1 || (num == 2 && sum):
			return errOTLP
		}
		return nil
	})
	if err != nil {
		return err
	}
	return protoFields(d, func(num protowire.Number, _ protowire.Type, dp []byte, _ uint64) error {
		if num != 1 {
			return nil
		}
		why := skip
		if why == "" && len(p.points) >= p.keep {
			why = "series_limit"
		}
		pt := telemetryPoint{name: exported, delta: delta, labels: names, values: values}
		var attrs []label // the resource's and the point's, made at the point's first attribute
		read := 0
		err := protoFields(dp, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
			switch {
			case num == 4 && typ == protowire.Fixed64Type:
				pt.value = math.Float64frombits(n)
			case num == 6 && typ == protowire.Fixed64Type:
				pt.value = float64(int64(n))
			case num == 7 && why != "":
				if typ != protowire.BytesType {
					return errOTLP
				}
			case num == 7:
				if attrs == nil {
					attrs = append(make([]label, 0, 2*maxAttributes), resource...)
				}
				var err error
				attrs, err = p.attribute(attrs, typ, v, &read)
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
		if why != "" {
			p.dropped[why]++
			return nil
		}
		if attrs != nil {
			pt.labels, pt.values = split(attrs)
		}
		p.points = append(p.points, pt)
		return nil
	})
}

// split sorts labels by name and returns their names and values.
func split(labels []label) ([]string, []string) {
	slices.SortFunc(labels, func(a, b label) int { return strings.Compare(a.name, b.name) })
	names, values := make([]string, len(labels)), make([]string, len(labels))
	for i, l := range labels {
		names[i], values[i] = l.name, l.value
	}
	return names, values
}

// attribute reads a KeyValue { key(1), value(2) AnyValue { string(1) | bool(2) | int(3) |
// double(4) | bytes(7) } } into labels: its key as a Prometheus name, its value in text cut to
// maxLabelValue. Of a name already there the later value wins (the point's over the
// resource's); a new name is added while there are fewer than maxAttributes. Left off: arrays
// and maps, the names the gateway sets and reserved ones, and keys past maxLabelName (counted
// as attribute_too_long, before they are copied). *read counts the attributes read; past
// maxAttributes the rest are not.
func (p *otlpParser) attribute(labels []label, typ protowire.Type, kv []byte, read *int) ([]label, error) {
	if typ != protowire.BytesType {
		return labels, errOTLP
	}
	if *read >= maxAttributes {
		return labels, nil
	}
	*read++
	var key, value []byte
	var text string
	var ok bool
	err := protoFields(kv, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		switch num {
		case 1:
			if typ != protowire.BytesType {
				return errOTLP
			}
			key = v
		case 2:
			if typ != protowire.BytesType {
				return errOTLP
			}
			value = v
		}
		return nil
	})
	if err != nil || value == nil {
		return labels, err
	}
	err = protoFields(value, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			text, ok = labelValue(string(v[:min(len(v), maxLabelValue)])), true
		case num == 2 && typ == protowire.VarintType:
			text, ok = strconv.FormatBool(n != 0), true
		case num == 3 && typ == protowire.VarintType:
			text, ok = strconv.FormatInt(int64(n), 10), true
		case num == 4 && typ == protowire.Fixed64Type:
			text, ok = strconv.FormatFloat(math.Float64frombits(n), 'g', -1, 64), true
		case num == 7 && typ == protowire.BytesType:
			text, ok = hex.EncodeToString(v[:min(len(v), maxLabelValue/2)]), true
		}
		return nil
	})
	if err != nil || !ok || len(key) == 0 {
		return labels, err
	}
	if len(key) > maxLabelName {
		p.dropped["attribute_too_long"]++
		return labels, nil
	}
	name := promName(string(key))
	switch {
	case len(name) > maxLabelName: // a leading digit made it one longer
		p.dropped["attribute_too_long"]++
		return labels, nil
	case name == "client_id" || name == "client_instance_id" || strings.HasPrefix(name, "__"):
		return labels, nil
	}
	for i := range labels {
		if labels[i].name == name {
			labels[i].value = text
			return labels, nil
		}
	}
	if len(labels) < maxAttributes {
		labels = append(labels, label{name, text})
	}
	return labels, nil
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
	s = strings.ToValidUTF8(s[:min(len(s), maxLabelValue)], "\uFFFD")
	for len(s) > maxLabelValue { // a replacement character past the bound
		_, n := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-n]
	}
	return s
}

// serveMetrics serves the registry at addr's /metrics until Close. A scrape is answered one at
// a time, within metricsTimeout, and a slow or idle scraper is cut off.
func (s *Server) serveMetrics(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics address %q: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError, MaxRequestsInFlight: 1, Timeout: metricsTimeout}))
	s.metricsHTTP = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 2 * metricsTimeout, IdleTimeout: time.Minute, MaxHeaderBytes: 8 << 10}
	s.metricsAddr = ln.Addr().String()
	go func() { _ = s.metricsHTTP.Serve(ln) }()
	return nil
}

// metricsTimeout bounds a scrape: past it the scraper hears 503.
const metricsTimeout = 10 * time.Second

// MetricsAddr is where /metrics is served ("" without Config.MetricsAddr).
func (s *Server) MetricsAddr() string { return s.metricsAddr }

// Registry is the gateway's Prometheus registry: its own series and its clients'.
func (s *Server) Registry() *prometheus.Registry { return s.metrics.registry }
