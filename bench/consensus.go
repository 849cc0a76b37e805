package bench

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// timings are a validator's cumulative CometBFT timings (sum of seconds, count) by name:
// each consensus step's duration, and FinalizeBlock's processing time.
type timings map[string][2]float64

// scrape reads a node's Prometheus endpoint; a failed scrape gives no families.
func scrape(url string) map[string]*dto.MetricFamily { return scrapeWithin(url, 10*time.Second) }

// scrapeWithin is scrape giving up after timeout.
func scrapeWithin(url string, timeout time.Duration) map[string]*dto.MetricFamily {
	cl := &http.Client{Timeout: timeout}
	resp, err := cl.Get(url + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil
	}
	return fams
}

// scrapeTimings reads a node's CometBFT timings; a failed scrape gives nothing.
func scrapeTimings(url string) timings {
	fams := scrape(url)
	if fams == nil {
		return nil
	}
	out := timings{}
	add := func(name string, m *dto.Metric) {
		if h := m.GetHistogram(); h != nil {
			out[name] = [2]float64{h.GetSampleSum(), float64(h.GetSampleCount())}
		}
	}
	if f := fams["cometbft_consensus_step_duration_seconds"]; f != nil {
		for _, m := range f.Metric {
			for _, l := range m.Label {
				if l.GetName() == "step" {
					add(strings.TrimPrefix(l.GetValue(), "RoundStep"), m)
				}
			}
		}
	}
	if f := fams["cometbft_state_block_processing_time"]; f != nil && len(f.Metric) > 0 {
		// Milliseconds in this histogram; kept as they are, named so.
		add("FinalizeBlock(ms)", f.Metric[0])
	}
	return out
}

// consensusTimings scrapes every validator now and returns a function that scrapes them again
// and describes the mean time per consensus step between the two, over all validators.
func (c *chain) consensusTimings() func() string {
	before := make([]timings, len(c.net.Nodes))
	for i, n := range c.net.Nodes {
		before[i] = scrapeTimings(n.Prometheus)
	}
	return func() string {
		sum := map[string][2]float64{}
		for i, n := range c.net.Nodes {
			after := scrapeTimings(n.Prometheus)
			for k, v := range after {
				b := before[i][k]
				s := sum[k]
				sum[k] = [2]float64{s[0] + v[0] - b[0], s[1] + v[1] - b[1]}
			}
		}
		names := make([]string, 0, len(sum))
		for k, v := range sum {
			if v[1] > 0 {
				names = append(names, k)
			}
		}
		sort.Strings(names)
		parts := make([]string, len(names))
		for i, k := range names {
			v := sum[k]
			mean := v[0] / v[1]
			if !strings.HasSuffix(k, "(ms)") {
				mean *= 1000
			}
			parts[i] = fmt.Sprintf("%s %.0f ms ×%.0f", k, mean, v[1])
		}
		return "mean per validator: " + strings.Join(parts, ", ")
	}
}

// mempoolCounters reads a node's CometBFT mempool counters: transactions its CheckTx refused
// (failed), that it did not add although CheckTx passed (rejected: full, or there already) and
// that a recheck after a block removed (evicted). A failed scrape gives zeros.
func mempoolCounters(url string) (failed, rejected, evicted float64) {
	fams := scrape(url)
	return counterSum(fams, "cometbft_mempool_failed_txs", "", ""), counterSum(fams, "cometbft_mempool_rejected_txs", "", ""),
		counterSum(fams, "cometbft_mempool_evicted_txs", "", "")
}

// counterSum adds up the counter name's series, those with label = value only when label is
// set; a family not scraped adds nothing.
func counterSum(fams map[string]*dto.MetricFamily, name, label, value string) (v float64) {
	f := fams[name]
	if f == nil {
		return 0
	}
	for _, m := range f.Metric {
		match := label == ""
		for _, l := range m.GetLabel() {
			match = match || l.GetName() == label && l.GetValue() == value
		}
		if match {
			v += m.GetCounter().GetValue()
		}
	}
	return v
}

// mempoolRefusals describes, per validator, the mempool counters since the chain started.
func (c *chain) mempoolRefusals() string {
	parts := make([]string, len(c.net.Nodes))
	for i, n := range c.net.Nodes {
		f, r, e := mempoolCounters(n.Prometheus)
		parts[i] = fmt.Sprintf("node %d: %.0f failed CheckTx, %.0f not added, %.0f evicted", i, f, r, e)
	}
	return strings.Join(parts, "; ")
}

// proposed sums the validators' bftlog_data_plane_proposed_{txs,bytes}_total since the chain
// started: what their proposals named and carried whole (app/dataplane/metrics.go). ok is false
// when a validator did not answer within a second (a paused one: the step's figures must not
// wait for it), and the sums are then partial; a binary without the metric adds zeros.
func (c *chain) proposed() (namedTxs, carriedTxs, namedBytes, carriedBytes float64, ok bool) {
	ok = true
	for _, n := range c.net.Nodes {
		fams := scrapeWithin(n.Prometheus, time.Second)
		if fams == nil {
			ok = false
			continue
		}
		namedTxs += counterSum(fams, "bftlog_data_plane_proposed_txs_total", "how", "named")
		carriedTxs += counterSum(fams, "bftlog_data_plane_proposed_txs_total", "how", "carried")
		namedBytes += counterSum(fams, "bftlog_data_plane_proposed_bytes_total", "how", "named")
		carriedBytes += counterSum(fams, "bftlog_data_plane_proposed_bytes_total", "how", "carried")
	}
	return namedTxs, carriedTxs, namedBytes, carriedBytes, ok
}
