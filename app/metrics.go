package app

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cast"

	servertypes "github.com/cosmos/cosmos-sdk/server/types"

	"github.com/bftlog/bftlog/x/topics/metrics"
)

// app.toml keys of the x/topics metrics (section [topics-metrics], written by bftlogd init).
const (
	topicsMetricsEnabledKey        = "topics-metrics.enabled"
	topicsMetricsMaxTopicSeriesKey = "topics-metrics.max-topic-series"
	topicsMetricsMaxLagSeriesKey   = "topics-metrics.max-lag-series"
	topicsMetricsLagGroupsKey      = "topics-metrics.lag-groups"
	topicsMetricsLabelTopicsKey    = "topics-metrics.label-topics"
)

// topicsMetrics is the process's one set of x/topics metrics. They live in Prometheus' default
// registry because that is what both CometBFT's instrumentation endpoint
// (instrumentation.prometheus_listen_addr, /metrics) and the SDK's API endpoint
// (/metrics?format=prometheus, with telemetry enabled) serve. A registry holds a metric name
// once, so a process that builds several apps (export, in-process test networks) creates the
// metrics with the first app's config and binds each later app in its place.
var topicsMetrics struct {
	sync.Mutex
	m *metrics.Metrics
}

// registerTopicsMetrics exports the x/topics metrics of this app: an ABCI listener appended to
// the streaming manager (after the listeners configured in app.toml) counts appends and produce
// rejections of committed blocks, the query server counts reads, and group lag is read from the
// latest committed state at each scrape. None of it runs in or writes to the state machine.
func (app *App) registerTopicsMetrics(appOpts servertypes.AppOptions) {
	enabled, cfg, err := topicsMetricsConfig(appOpts)
	if err != nil {
		panic(fmt.Errorf("app.toml [topics-metrics]: %w", err))
	}
	if !enabled {
		return
	}
	logger := app.Logger().With("module", "x/topics/metrics")

	topicsMetrics.Lock()
	defer topicsMetrics.Unlock()
	if topicsMetrics.m == nil {
		m, err := metrics.New(prometheus.DefaultRegisterer, cfg)
		if err != nil { // someone else holds the names: run without metrics rather than not at all
			logger.Error("x/topics metrics disabled", "err", err)
			return
		}
		topicsMetrics.m = m
	}
	listener := topicsMetrics.m.Bind(metrics.Source{
		Keeper:    app.TopicsKeeper,
		TxDecoder: app.txConfig.TxDecoder(),
		State: func() (context.Context, error) {
			ctx, err := app.CreateQueryContext(0, false)
			return ctx, err
		},
		Logger: logger,
	})
	sm := app.StreamingManager()
	sm.ABCIListeners = append(slices.Clip(sm.ABCIListeners), listener)
	app.SetStreamingManager(sm)
}

// topicsMetricsConfig reads [topics-metrics]; a missing key (an app.toml written before the
// section existed, or test app options) takes its default.
func topicsMetricsConfig(appOpts servertypes.AppOptions) (enabled bool, cfg metrics.Config, err error) {
	enabled, cfg = true, metrics.DefaultConfig()
	if v := appOpts.Get(topicsMetricsEnabledKey); v != nil {
		if enabled, err = cast.ToBoolE(v); err != nil {
			return false, cfg, fmt.Errorf("enabled: %w", err)
		}
	}
	if v := appOpts.Get(topicsMetricsMaxTopicSeriesKey); v != nil {
		if cfg.MaxTopicSeries, err = cast.ToIntE(v); err != nil {
			return false, cfg, fmt.Errorf("max-topic-series: %w", err)
		}
	}
	if v := appOpts.Get(topicsMetricsMaxLagSeriesKey); v != nil {
		if cfg.MaxLagSeries, err = cast.ToIntE(v); err != nil {
			return false, cfg, fmt.Errorf("max-lag-series: %w", err)
		}
	}
	if cfg.LagGroups, err = stringList(appOpts.Get(topicsMetricsLagGroupsKey)); err != nil {
		return false, cfg, fmt.Errorf("lag-groups: %w", err)
	}
	if cfg.LabelTopics, err = stringList(appOpts.Get(topicsMetricsLabelTopicsKey)); err != nil {
		return false, cfg, fmt.Errorf("label-topics: %w", err)
	}
	return enabled, cfg, cfg.Validate()
}

// stringList reads a list from app.toml (a TOML array) or from a flag or environment variable
// ("a,b"); nil when unset.
func stringList(v any) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	s, ok := v.(string)
	if !ok {
		return cast.ToStringSliceE(v)
	}
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out, nil
}
