// Package metrics exports Prometheus metrics of x/topics, all named bftlog_topics_*:
//
//   - appends, batches per block and produce rejections, derived from committed blocks by an
//     ABCI listener (storetypes.ABCIListener), outside the state machine: it reads FinalizeBlock
//     results and writes nothing, so it cannot affect consensus;
//   - reads served by the query server (Fetch and Record), through keeper.FetchObserver;
//   - consumer group lag, read from the latest committed state when Prometheus scrapes.
//
// Series per label are bounded (Config). The package imports nothing from an app, so any chain
// using x/topics can wire it: New once per process, then Bind each app.
package metrics

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bftlog/bftlog/x/topics/types"
)

const (
	namespace = "bftlog"
	subsystem = "topics"

	// OtherTopic is the topic label of every topic beyond Config.MaxTopicSeries.
	OtherTopic = "_other"
)

// Config bounds the metrics' label cardinality. The mapstructure tags are the app.toml keys.
type Config struct {
	// MaxTopicSeries is how many topics get their own topic label on the append counters; the
	// ones seen later are counted under topic="_other". 0 puts every topic under "_other".
	MaxTopicSeries int `mapstructure:"max-topic-series"`
	// MaxLagSeries caps the (group, topic, partition) series of the lag gauge; 0 disables it.
	MaxLagSeries int `mapstructure:"max-lag-series"`
	// LagGroups limits the lag gauge to these groups; empty means every group.
	LagGroups []string `mapstructure:"lag-groups"`
	// LabelTopics, when set, are the only topics with their own topic label (everything else is
	// "_other"): anyone may create topics, so first come first served lets a spammer take the
	// MaxTopicSeries slots; a fixed list also names the same topics on every node.
	LabelTopics []string `mapstructure:"label-topics"`
}

// DefaultConfig is 100 topic series, 500 lag series, every group.
func DefaultConfig() Config {
	return Config{MaxTopicSeries: 100, MaxLagSeries: 500}
}

// Validate checks the bounds and the group ids.
func (c Config) Validate() error {
	if c.MaxTopicSeries < 0 {
		return fmt.Errorf("max-topic-series must not be negative, got %d", c.MaxTopicSeries)
	}
	if c.MaxLagSeries < 0 {
		return fmt.Errorf("max-lag-series must not be negative, got %d", c.MaxLagSeries)
	}
	for _, t := range c.LabelTopics {
		if err := types.ValidateTopicName(t); err != nil {
			return fmt.Errorf("label-topics: %w", err)
		}
	}
	for _, g := range c.LagGroups {
		if err := types.ValidateGroupID(g); err != nil {
			return fmt.Errorf("lag-groups: %w", err)
		}
	}
	return nil
}

// Metrics holds the collectors. Create it once per Registerer with New, then Bind the app.
type Metrics struct {
	cfg Config

	recordsAppended   *prometheus.CounterVec
	bytesAppended     *prometheus.CounterVec
	batchesPerBlock   prometheus.Histogram
	produceRejections *prometheus.CounterVec
	fetchRequests     *prometheus.CounterVec
	fetchRecords      *prometheus.CounterVec
	lag               *lagCollector // nil when MaxLagSeries is 0

	mu     sync.Mutex
	topics map[string]bool         // topics with their own series, first come first served
	errors map[errorKey]string     // descriptions of rejection codes, looked up once
	active atomic.Pointer[binding] // the app the metrics describe (Bind)
}

type errorKey struct {
	codespace string
	code      uint32
}

// New creates the metrics and registers them with reg. Registering twice with one Registerer
// fails (prometheus.AlreadyRegisteredError): a process that builds several apps creates one
// Metrics and binds each app to it.
func New(reg prometheus.Registerer, cfg Config) (*Metrics, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.LagGroups = slices.Compact(slices.Sorted(slices.Values(cfg.LagGroups))) // duplicate series would fail the whole scrape
	m := &Metrics{
		cfg:    cfg,
		topics: map[string]bool{},
		errors: map[errorKey]string{},
		recordsAppended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "records_appended_total",
			Help: "Records appended by committed blocks, per topic (topics past the series limit under topic=\"_other\").",
		}, []string{"topic"}),
		bytesAppended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "bytes_appended_total",
			Help: "Record bytes (key + value + header keys and values) appended by committed blocks, per topic.",
		}, []string{"topic"}),
		batchesPerBlock: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "batches_per_block",
			Help:    "Record batches (one per topic partition per MsgProduce) appended by each committed block.",
			Buckets: []float64{0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000},
		}),
		produceRejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "produce_rejections_total",
			Help: "Transactions carrying a MsgProduce that failed in a committed block, by error (ante handler failures included).",
		}, []string{"codespace", "code", "error"}),
		fetchRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "fetch_requests_total",
			Help: "Successful Fetch and Record queries answered by this node.",
		}, []string{"query"}),
		fetchRecords: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: subsystem, Name: "fetch_records_total",
			Help: "Records returned by Fetch and Record queries of this node.",
		}, []string{"query"}),
	}
	cs := []prometheus.Collector{m.recordsAppended, m.bytesAppended, m.batchesPerBlock, m.produceRejections, m.fetchRequests, m.fetchRecords}
	if cfg.MaxLagSeries > 0 {
		m.lag = newLagCollector(m)
		cs = append(cs, m.lag)
	}
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, done := range cs[:i] {
				reg.Unregister(done)
			}
			return nil, fmt.Errorf("x/topics metrics: %w", err)
		}
	}
	for _, t := range cfg.LabelTopics {
		m.topics[t] = true
	}
	return m, nil
}

// topicLabel bounds the topic label: the first MaxTopicSeries topics keep their name, later
// ones share OtherTopic. Slots are never freed, so a counter never moves between series.
func (m *Metrics) topicLabel(topic string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.topics[topic] {
		return topic
	}
	if len(m.cfg.LabelTopics) > 0 {
		return OtherTopic // the listed topics are in m.topics from the start
	}
	if len(m.topics) < m.cfg.MaxTopicSeries {
		m.topics[topic] = true
		return topic
	}
	return OtherTopic
}
