package metrics

import (
	"context"
	"errors"
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	"github.com/bftlog/bftlog/x/topics/keeper"
	"github.com/bftlog/bftlog/x/topics/types"
)

// lagCollector computes consumer group lag when Prometheus scrapes, from the latest committed
// state of the bound app. It is the keeper's Lag query per group, so the numbers are those of
// `bftlogd q topics lag G`: every partition of the topics the members subscribe to and of those
// with committed offsets, lag = high watermark - committed offset (- log start offset where
// nothing is committed).
type lagCollector struct {
	m         *Metrics
	lag       *prometheus.Desc
	truncated *prometheus.Desc
}

func newLagCollector(m *Metrics) *lagCollector {
	return &lagCollector{
		m: m,
		lag: prometheus.NewDesc(prometheus.BuildFQName(namespace, subsystem, "group_lag"),
			"Records of a partition not yet consumed by a consumer group: high watermark minus committed offset (log start offset where nothing is committed), from the latest committed state.",
			[]string{"group", "topic", "partition"}, nil),
		truncated: prometheus.NewDesc(prometheus.BuildFQName(namespace, subsystem, "group_lag_truncated"),
			"1 when the last scrape stopped at max-lag-series and left group lag series out, else 0.",
			nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *lagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.lag
	ch <- c.truncated
}

// errLimit stops the walk over groups once max-lag-series series are out.
var errLimit = errors.New("max-lag-series reached")

// Collect implements prometheus.Collector. Series come in (group, topic, partition) order and
// the walk stops after the first MaxLagSeries, so the same state always gives the same series
// and a scrape's work is bounded by the limit, not by the number of groups anyone created (the
// SDK API serves these metrics too). Nothing is sent when the state cannot be read: an invalid
// metric would fail the whole scrape, CometBFT's and the SDK's metrics included.
func (c *lagCollector) Collect(ch chan<- prometheus.Metric) {
	b := c.m.active.Load()
	if b == nil || b.src.State == nil {
		return
	}
	logger := b.src.Logger
	defer func() {
		if r := recover(); r != nil {
			logger.Error("x/topics metrics: group lag not collected", "panic", r)
		}
	}()
	ctx, err := b.src.State()
	if err != nil {
		logger.Debug("x/topics metrics: no committed state for group lag", "err", err)
		return
	}
	q := keeper.NewQueryServer(b.src.Keeper)
	limit, emitted, truncated := c.m.cfg.MaxLagSeries, 0, 0
	visit := func(g string) error {
		res, err := q.Lag(ctx, &types.QueryLagRequest{GroupId: g})
		if errorsmod.IsOf(err, types.ErrUnknownGroup) {
			return nil // a configured group that does not exist (yet)
		}
		if errorsmod.IsOf(err, types.ErrInvalidRequest) {
			// The group's whole lag is over the query's cap: ask topic by topic (each bounded by
			// its partition count); max-lag-series still bounds what is emitted.
			res, err = lagPerTopic(ctx, q, b.src.Keeper, g, limit)
		}
		if err != nil {
			logger.Error("x/topics metrics: group lag", "group", g, "err", err)
			return nil
		}
		for _, l := range res.Lags {
			if emitted >= limit {
				truncated = 1
				return errLimit
			}
			ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(l.Lag),
				g, l.Topic, strconv.FormatUint(uint64(l.Partition), 10))
			emitted++
		}
		return nil
	}
	if groups := c.m.cfg.LagGroups; len(groups) > 0 {
		for _, g := range groups {
			if visit(g) != nil {
				break
			}
		}
	} else if err := b.src.Keeper.Groups.Walk(ctx, nil, func(g string, _ types.Group) (bool, error) {
		return visit(g) != nil, nil
	}); err != nil {
		logger.Error("x/topics metrics: listing groups", "err", err)
	}
	ch <- prometheus.MustNewConstMetric(c.truncated, prometheus.GaugeValue, float64(truncated))
}

// lagPerTopic asks a group's lag one topic at a time, in topic order: the topics its members
// subscribe to and those it holds offsets for (as the Lag query covers), at most maxTopics.
func lagPerTopic(ctx context.Context, q types.QueryServer, k keeper.Keeper, group string, maxTopics int) (*types.QueryLagResponse, error) {
	var topics []string
	err := k.Members.Walk(ctx, collections.NewPrefixedPairRange[string, string](group), func(_ collections.Pair[string, string], m types.Member) (bool, error) {
		topics = append(topics, m.Topics...)
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	err = k.Offsets.Walk(ctx, collections.NewPrefixedPairRange[string, types.TopicPartition](group), func(key collections.Pair[string, types.TopicPartition], _ types.CommittedOffset) (bool, error) {
		if n := len(topics); n == 0 || topics[n-1] != key.K2().Topic {
			topics = append(topics, key.K2().Topic)
		}
		return len(topics) > 2*maxTopics, nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(topics)
	topics = slices.Compact(topics)
	out := &types.QueryLagResponse{}
	for _, t := range topics[:min(len(topics), maxTopics)] {
		res, err := q.Lag(ctx, &types.QueryLagRequest{GroupId: group, Topic: t})
		if err != nil {
			return nil, err
		}
		out.Lags = append(out.Lags, res.Lags...)
	}
	return out, nil
}
