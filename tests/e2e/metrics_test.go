package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/testutil/node"
)

// scrape fetches a Prometheus text endpoint and returns its families by name.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", url, body) // one bad collector fails the whole page
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	require.NoError(t, err, url)
	return fams
}

// series is a family's values by sorted "k=v,..." labels (histograms: their sample count).
func series(fams map[string]*dto.MetricFamily, name string) map[string]float64 {
	out := map[string]float64{}
	f := fams[name]
	if f == nil {
		return out
	}
	for _, m := range f.Metric {
		var labels []string
		for _, l := range m.Label {
			labels = append(labels, l.GetName()+"="+l.GetValue())
		}
		sort.Strings(labels)
		key := strings.Join(labels, ",")
		switch {
		case m.Counter != nil:
			out[key] = m.Counter.GetValue()
		case m.Gauge != nil:
			out[key] = m.Gauge.GetValue()
		case m.Histogram != nil:
			out[key] = float64(m.Histogram.GetSampleCount())
		case m.Untyped != nil:
			out[key] = m.Untyped.GetValue()
		}
	}
	return out
}

// TestMetrics drives a real node through appends, a produce rejected in a block, reads and a
// consumer group, then checks the bftlog_topics_* metrics on CometBFT's instrumentation
// endpoint (next to CometBFT's own) and on the SDK API's /metrics, as a new home serves them.
func TestMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real node")
	}
	n := node.StartSingle(t, "alice", "bob")
	const topic, group = "e2e.metrics", "metrics-readers"
	createTopic(n, "alice", topic, 2)

	// Seven keyed records with a header into partition 0, in one batch. The chain counts the
	// batch's stored (encoded) size, the partition's byte_count: more than the key + value +
	// header bytes alone.
	records := []string{"k1:a", "k2:bb", "key-3:ccc", "k4:", "k5:hello world", "k6:x", "k7:0123456789"}
	payload := 0
	for _, r := range records {
		payload += len(r) - len(":") + len("src") + len("e2e")
	}
	n.MustCLI("", append([]string{"tx", "topics", "produce", topic}, append(records,
		"--partition", "0", "--key-separator", ":", "--header", "src=e2e", "--from", "bob")...)...)
	var ps struct {
		Partitions []struct {
			ByteCount string `json:"byte_count"`
		} `json:"partitions"`
	}
	require.NoError(t, json.Unmarshal([]byte(n.MustCLI("", "query", "topics", "partitions", topic, "-o", "json")), &ps))
	wantBytes, err := strconv.Atoi(ps.Partitions[0].ByteCount)
	require.NoError(t, err)
	require.Greater(t, wantBytes, payload)
	t.Logf("batch of %d records: %d stored bytes (%d of keys, values and headers)", len(records), wantBytes, payload)

	// A produce to a partition the topic lacks passes CheckTx (which runs only the ante handler)
	// and fails in the block; --gas skips the simulation that would refuse it before broadcast.
	bad := n.CLI("", "tx", "topics", "produce", topic, "late", "--partition", "5", "--gas", "300000", "--from", "bob")
	require.Error(t, bad.Err)
	require.Contains(t, bad.Stderr, "partition out of range")

	// Reads: consume asks for 3 records a fetch but gets the whole stored batch of seven (a
	// fetch returns whole batches, as in Kafka); one Record query; a group member that reads and
	// commits 3 records (its fetch too returns the whole batch), then leaves.
	consumed := n.MustCLI("", "query", "topics", "consume", topic, "--from-beginning", "--fetch-records", "3", "-o", "json")
	require.Len(t, strings.Split(strings.TrimSpace(consumed), "\n"), len(records))
	n.MustCLI("", "query", "topics", "record", topic, "0", "2")
	const committed = 3
	grouped := n.MustCLI("", "query", "topics", "consume", topic, "--group", group, "--max", fmt.Sprint(committed), "-o", "json", "--from", "alice")
	require.Len(t, strings.Split(strings.TrimSpace(grouped), "\n"), committed)

	fams := scrape(t, n.Prometheus+"/metrics")
	require.NotEmpty(t, series(fams, "cometbft_consensus_height"), "CometBFT's metrics on the same endpoint")

	require.Equal(t, map[string]float64{"topic=" + topic: float64(len(records))}, series(fams, "bftlog_topics_records_appended_total"))
	require.Equal(t, map[string]float64{"topic=" + topic: float64(wantBytes)}, series(fams, "bftlog_topics_bytes_appended_total"))
	require.Equal(t, map[string]float64{"code=5,codespace=topics,error=partition out of range": 1},
		series(fams, "bftlog_topics_produce_rejections_total"))
	batches := fams["bftlog_topics_batches_per_block"]
	require.NotNil(t, batches)
	require.Len(t, batches.Metric, 1)
	require.Positive(t, batches.Metric[0].Histogram.GetSampleCount(), "one observation per block")
	require.Equal(t, 1.0, batches.Metric[0].Histogram.GetSampleSum(), "one batch appended in all")

	requests := series(fams, "bftlog_topics_fetch_requests_total")
	require.GreaterOrEqual(t, requests["query=fetch"], 2.0, "consume's fetch and the group's")
	require.Equal(t, 1.0, requests["query=record"])
	require.Equal(t, map[string]float64{"query=fetch": float64(2 * len(records)), "query=record": 1},
		series(fams, "bftlog_topics_fetch_records_total"), "the batch of seven, returned to consume and to the group")

	// Lag from the latest committed state: HW 7 - committed 3 on partition 0; partition 1 is empty.
	require.Equal(t, map[string]float64{
		"group=" + group + ",partition=0,topic=" + topic: float64(len(records) - committed),
		"group=" + group + ",partition=1,topic=" + topic: 0,
	}, series(fams, "bftlog_topics_group_lag"))
	require.Equal(t, map[string]float64{"": 0}, series(fams, "bftlog_topics_group_lag_truncated"))

	// The SDK's API serves the same registry once telemetry is on (the default of new homes).
	api := scrape(t, n.API+"/metrics?format=prometheus")
	require.Equal(t, map[string]float64{"topic=" + topic: float64(len(records))}, series(api, "bftlog_topics_records_appended_total"))
	require.NotEmpty(t, series(api, "cometbft_consensus_height"))
}
