package metrics

import (
	"context"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

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
	m       *Metrics
	lag     *prometheus.Desc
	dropped *prometheus.Desc
}

func newLagCollector(m *Metrics) *lagCollector {
	return &lagCollector{
		m: m,
		lag: prometheus.NewDesc(prometheus.BuildFQName(namespace, subsystem, "group_lag"),
			"Records of a partition not yet consumed by a consumer group: high watermark minus committed offset (log start offset where nothing is committed), from the latest committed state.",
			[]string{"group", "topic", "partition"}, nil),
		dropped: prometheus.NewDesc(prometheus.BuildFQName(namespace, subsystem, "group_lag_series_dropped"),
			"Group lag series left out at the last scrape because of max-lag-series.",
			nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *lagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.lag
	ch <- c.dropped
}

// Collect implements prometheus.Collector. Series come in (group, topic, partition) order and
// the first MaxLagSeries are kept, so the same state always gives the same series. Nothing is
// sent when the state cannot be read: an invalid metric would fail the whole scrape, CometBFT's
// and the SDK's metrics included.
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
	groups := c.m.cfg.LagGroups
	if len(groups) == 0 {
		if groups, err = allGroups(ctx, b.src.Keeper); err != nil {
			logger.Error("x/topics metrics: listing groups", "err", err)
			return
		}
	}
	q := keeper.NewQueryServer(b.src.Keeper)
	limit, emitted, dropped := c.m.cfg.MaxLagSeries, 0, 0
	for _, g := range groups {
		res, err := q.Lag(ctx, &types.QueryLagRequest{GroupId: g})
		if errorsmod.IsOf(err, types.ErrUnknownGroup) {
			continue // a configured group that does not exist (yet)
		}
		if err != nil {
			logger.Error("x/topics metrics: group lag", "group", g, "err", err)
			continue
		}
		for _, l := range res.Lags {
			if emitted >= limit {
				dropped++
				continue
			}
			ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(l.Lag),
				g, l.Topic, strconv.FormatUint(uint64(l.Partition), 10))
			emitted++
		}
	}
	ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.GaugeValue, float64(dropped))
}

// allGroups lists group ids in key order, decoding no group.
func allGroups(ctx context.Context, k keeper.Keeper) ([]string, error) {
	iter, err := k.Groups.Iterate(ctx, nil)
	if err != nil {
		return nil, err
	}
	return iter.Keys()
}
