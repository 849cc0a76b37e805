package bench

import (
	"bytes"
	"encoding/json"
	"os"
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
		FetchRecords: 100, KafkaRecords: 300, SyncCommitRecords: 40, EventsRecords: 300, EventsCodecs: []string{"lz4"}, Log: t.Logf,
		Sweep: true, SweepStart: 100, SweepFactor: 3, SweepMax: 1000, SweepStep: time.Second, SweepStopP99: 2 * time.Second,
		SweepRefine: 1, CapacityP99: time.Second,
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
	// runKafka fails unless the chain's offsets of the group add up to the records read.
	require.Equal(t, 40, systems[syncCommitSystem].Records)
	require.NotZero(t, systems[syncCommitSystem].LatencyP50Ms)
	require.NotZero(t, systems["bftlog"].FetchPerSec)
	require.Len(t, systems["bftlog"].PeakRSSMiB, 1)
	require.NotZero(t, systems["bftlog"].PeakRSSMiB[0])
	require.NotZero(t, systems["one record per tx"].PeakRSSMiB[0])
	require.Equal(t, 100.0, systems["bftlog"].PayloadBytesPerRec)
	require.NotZero(t, systems["bftlog"].CPUSecondsPerGB)
	// Every system was swept from 100 records/s, committing what it was offered at first.
	for _, name := range []string{"bftlog", "JetStream R1", "JetStream R3", "Kafka client via gateway"} {
		r := systems[name]
		require.NotEmpty(t, r.Sweep, name)
		require.Equal(t, 100.0, r.Sweep[0].OfferedPerSec, name)
		require.Positive(t, r.Sweep[0].Records, name)
		require.NotZero(t, r.Sweep[0].P99Ms, name)
		require.NotZero(t, r.ClosedLoopPerSec, name)
		for _, p := range r.Sweep {
			require.LessOrEqual(t, p.OfferedPerSec, cfg.SweepMax, name)
		}
	}

	events := systems["bftlog events lz4"]
	require.Equal(t, 300, events.Records)
	require.NotZero(t, events.FetchPerSec, "compressed batches are fetched and decoded")
	require.Greater(t, events.PayloadBytesPerRec, 100.0)
	require.Less(t, events.PayloadBytesPerRec, 300.0)
	require.NotZero(t, events.DiskBytesPerRec)
	require.Less(t, events.LogBytesPerRec, events.PayloadBytesPerRec, "lz4 batches are stored as produced, smaller than the JSON")

	var buf bytes.Buffer
	rep.WriteTable(&buf)
	require.Contains(t, buf.String(), "bftlog N=1 / JetStream R3")
	require.Contains(t, buf.String(), "Kafka client via gateway / native client, N=1")
	require.Contains(t, buf.String(), "bftlog events lz4 N=1 disk / payload")
	require.Contains(t, buf.String(), syncCommitSystem+": ")
	require.Contains(t, buf.String(), "Offered-load sweeps")
	name, err := rep.WriteJSON(t.TempDir())
	require.NoError(t, err)
	png, err := rep.WritePNG(name)
	require.NoError(t, err)
	bz, err := os.ReadFile(png)
	require.NoError(t, err)
	require.Equal(t, "\x89PNG", string(bz[:4]))
}

// TestPauseRowSmoke runs the fault row on four validators with two-second phases: records are
// committed while one validator is paused, and the row says what each phase measured.
func TestPauseRowSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four nodes")
	}
	cfg := Config{
		Validators: []int{4}, PauseSeconds: 2, Records: 400, RecordBytes: 100, Partitions: 2, Producers: 2, BatchRecords: 50,
		InFlight: 2, FetchRecords: 100, Log: t.Logf,
	}
	rep, err := Run(cfg)
	require.NoError(t, err)
	require.Len(t, rep.Results, 2)
	pause := rep.Results[1]
	require.Equal(t, "bftlog, 1 of 4 paused", pause.System)
	require.Positive(t, pause.Records, "nothing committed while one of four was paused")
	require.Contains(t, pause.Note, "one paused")
	var buf bytes.Buffer
	rep.WriteTable(&buf)
	require.Contains(t, buf.String(), "bftlog N=4, one validator paused: offered")
}

// TestLargeHarnessSmoke runs the large-log comparison with a few megabytes of fill.
func TestLargeHarnessSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	cfg := Config{
		Records: 400, RecordBytes: 100, Partitions: 2, Producers: 2, BatchRecords: 50, InFlight: 2,
		FetchRecords: 100, LargeBytes: 3_000_000, FillProducers: 2, FillInFlight: 2,
		FillBatchBytes: 200_000, FillBatchesPerTx: 2, Log: t.Logf,
	}
	rep, err := RunLarge(cfg)
	require.NoError(t, err)
	require.Len(t, rep.Results, 2)
	empty, large := rep.Results[0], rep.Results[1]
	require.Equal(t, 400, empty.Records)
	require.Equal(t, 400, large.Records)
	require.Zero(t, empty.LogBytesBefore)
	require.GreaterOrEqual(t, large.LogBytesBefore, cfg.LargeBytes)
	require.Greater(t, large.DataDirBytes, large.LogBytesBefore, "the data directory holds at least the log")
	require.NotZero(t, empty.PeakRSSMiB[0])
	require.NotZero(t, large.PeakRSSMiB[0])
	var buf bytes.Buffer
	rep.WriteTable(&buf)
	require.Contains(t, buf.String(), "empty chain")
	require.Contains(t, buf.String(), "GB log")
	dir := t.TempDir()
	name, err := rep.WriteJSON(dir)
	require.NoError(t, err)
	require.Contains(t, name, "large-")
	var back Report
	bz, err := os.ReadFile(name)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(bz, &back))
	require.Equal(t, "large", back.Mode)
}

// TestRegionsHarnessSmoke runs the across-regions measurement for a few seconds on two
// validators with one round-trip time.
func TestRegionsHarnessSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts nodes")
	}
	cfg := Config{
		RecordBytes: 100, Partitions: 2, Producers: 2, BatchRecords: 50, InFlight: 2, HalfLoad: true, FetchRecords: 100,
		RegionRTTs: []time.Duration{20 * time.Millisecond}, RegionValidators: 2, RegionDuration: 4 * time.Second, Log: t.Logf,
	}
	rep, err := RunRegions(cfg)
	require.NoError(t, err)
	require.Len(t, rep.Results, 1)
	r := rep.Results[0]
	require.Equal(t, 20.0, r.RTTMs)
	require.Equal(t, 2, r.Validators)
	require.NotZero(t, r.Records)
	require.NotZero(t, r.HalfLoadP99Ms)
	require.Contains(t, r.BlockTiming, "commit 200ms")
	var buf bytes.Buffer
	rep.WriteTable(&buf)
	require.Contains(t, buf.String(), "round trip added between every two")
	name, err := rep.WriteJSON(t.TempDir())
	require.NoError(t, err)
	require.Contains(t, name, "regions-")
}
