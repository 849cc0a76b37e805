package bench

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHarnessSmoke runs the whole harness with tiny numbers so it never rots; it asserts what
// was counted, never how fast.
func TestHarnessSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	cfg := Config{
		Validators: []int{1}, Records: 400, RecordBytes: 100, Partitions: 2, Producers: 2, BatchRecords: 50,
		InFlight: 2, PeerInFlight: 10, PeerProducers: 2, PeerRecords: 20, PeerDuration: 10 * time.Second, JetStream: true, HalfLoad: true,
		FetchRecords: 100, KafkaRecords: 300, Log: t.Logf,
	}
	rep, err := Run(cfg)
	require.NoError(t, err)
	systems := map[string]Result{}
	for _, r := range rep.Results {
		systems[r.System] = r
	}
	require.Equal(t, 400, systems["bftlog"].Records)
	require.Equal(t, 20, systems["one record per tx"].Records)
	require.Equal(t, 400, systems["JetStream R1"].Records)
	require.Equal(t, 400, systems["JetStream R3"].Records)
	require.Equal(t, 300, systems["Kafka client via gateway"].Records)
	require.NotZero(t, systems["bftlog"].FetchPerSec)
	require.NotEmpty(t, systems["bftlog"].PeakRSSMiB)
	var buf bytes.Buffer
	rep.WriteTable(&buf)
	require.Contains(t, buf.String(), "bftlog N=1 / JetStream R3")
	require.Contains(t, buf.String(), "Kafka client via gateway / native client, N=1")
	_, err = rep.WriteJSON(t.TempDir())
	require.NoError(t, err)
}
