package soak

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// synthetic is a 10-minute run of 4 validators with one fault of each kind.
func synthetic() *Recorder {
	start := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	r := NewRecorder(start, time.Minute, 4)
	for s := 0; s < 600; s += 2 {
		t := start.Add(time.Duration(s) * time.Second)
		lat := make([]time.Duration, 200)
		for i := range lat {
			lat[i] = time.Duration(500+i*10) * time.Millisecond
		}
		r.Acked(t, lat)
		r.Consumed(t, 190)
		rss := []uint64{400 << 20, 380 << 20, 370 << 20, uint64(360+s/10) << 20}
		disk := []uint64{uint64(s) << 22, uint64(s) << 22, uint64(s) << 22, uint64(s) << 22}
		if s > 100 && s < 130 {
			rss[2], disk[2] = 0, 0 // killed
		}
		r.Sample(t, rss, disk)
	}
	for i, k := range []string{"kill", "pause", "partition", "restart-all", "twin"} {
		node := i % 4
		if k == "restart-all" {
			node = -1
		}
		from, to := start.Add(time.Duration(100+i*100)*time.Second), start.Add(time.Duration(125+i*100)*time.Second)
		r.Fault(k, node, from, to, to.Add(5*time.Second), "")
	}
	return r
}

func TestReportPNGAndJSON(t *testing.T) {
	r := synthetic()
	end := r.start.Add(10 * time.Minute)
	rep := r.Report(42, 11_400, end, map[string]any{"acked": 60_000})
	require.Len(t, rep.Bins, 10)
	require.InDelta(t, 100, rep.Bins[0].AckedPerSec, 0.01)
	// 30 samples of 500, 510, ..., 2490 ms: the 99th percentile is 2470 ms, in the 5 ms step ending at 2475.
	require.Equal(t, 2475.0, rep.Bins[0].P99Ms)
	require.Len(t, rep.Faults, 5)

	bz, err := rep.PNG(ChartWidth, ChartHeight)
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(bz))
	require.NoError(t, err)
	require.Equal(t, 1152, img.Bounds().Dx())
	require.Equal(t, 1536, img.Bounds().Dy())

	dir := t.TempDir()
	pngPath, jsonPath, err := rep.Write(dir)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "soak-20261203T100000Z.png"), pngPath)
	for _, p := range []string{pngPath, jsonPath, filepath.Join(dir, "last.png"), filepath.Join(dir, "last.json")} {
		require.FileExists(t, p)
	}
	raw, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	var back Report
	require.NoError(t, json.Unmarshal(raw, &back))
	require.Equal(t, rep.Bins, back.Bins)

	tot := r.Totals()
	require.Equal(t, uint64(60_000), tot.Acked)
	require.Equal(t, 419.0, tot.PeakRSSMiB[3]) // 360 + 598/10 MiB at the last sample
}

// An empty run (no bins with data, no faults) still renders.
func TestReportPNGEmpty(t *testing.T) {
	start := time.Now()
	rep := NewRecorder(start, 10*time.Second, 4).Report(1, 100, start.Add(5*time.Second), nil)
	_, err := rep.PNG(4*ChartWidth/12, 4*ChartHeight/13)
	require.NoError(t, err)
}

// Throughput counts for what was in progress when records were acknowledged, latency for what
// was in progress when they were handed over: a fault's window runs from its start until every
// node caught up, then 10 s of recovery; the backlog it leaves is its own (its latency, and no
// throughput of the time that drains it); the load's end closes every window; the first 10 s
// are the start-up's.
func TestReportByFault(t *testing.T) {
	start := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	r := NewRecorder(start, 10*time.Second, 4)
	at := func(s int) time.Time { return start.Add(time.Duration(s) * time.Second) }
	lat := func(n int, d time.Duration) []time.Duration {
		out := make([]time.Duration, n)
		for i := range out {
			out[i] = d
		}
		return out
	}
	for s := 0; s < 60; s++ { // 100 records/s at 1 s
		r.Acked(at(s), lat(100, time.Second))
	}
	r.FaultBegins("pause", at(60))
	for s := 60; s < 80; s++ { // 50 records/s while paused and catching up
		r.Acked(at(s), lat(50, time.Second))
	}
	r.Fault("pause", 2, at(60), at(70), at(80), "")
	r.Acked(at(80), lat(100, 6*time.Second)) // the pause's backlog, handed over at 74: not fault-free throughput
	for s := 81; s < 100; s++ {
		r.Acked(at(s), lat(100, time.Second))
	}
	r.FaultBegins("kill", at(100)) // the load stops during it
	r.Acked(at(105), lat(10, 3*time.Second))
	r.LoadStopped(at(110))
	r.Acked(at(115), lat(1000, 9*time.Second)) // handed over at 106, in the kill
	r.Acked(at(116), lat(1000, time.Second))   // handed over after the load: no kind
	r.Fault("kill", 1, at(100), at(112), at(120), "")
	rep := r.Report(1, 100, at(130), nil)

	require.Len(t, rep.ByFault, 5)
	free, kill, pause, recovery, startUp := rep.ByFault[0], rep.ByFault[1], rep.ByFault[2], rep.ByFault[3], rep.ByFault[4]
	freeRate := 5800.0 / 60 // acknowledged at 10..59 and 91..99; handed over from 10 to 59 and from 90 on
	require.Equal(t, FaultFigures{Kind: NoFault, Sec: 60, Acked: 5800, AckedPerSec: freeRate, Handed: 5850, P50Ms: 1005, P99Ms: 1005,
		ThroughputRatio: 1, P99Ratio: 1}, free)
	require.Equal(t, FaultFigures{Kind: StartUp, Sec: 10, Acked: 1000, AckedPerSec: 100, Handed: 1100, P50Ms: 1005, P99Ms: 1005,
		ThroughputRatio: 100 / freeRate, P99Ratio: 1}, startUp, "the first 10 s")
	require.Equal(t, FaultFigures{Kind: "pause", Faults: 1, Sec: 20, Acked: 1000, AckedPerSec: 50, Handed: 1050, P50Ms: 1005, P99Ms: 6005,
		ThroughputRatio: 50 / freeRate, P99Ratio: 6005.0 / 1005}, pause)
	require.Equal(t, FaultFigures{Kind: "kill", Faults: 1, Sec: 10, Acked: 10, AckedPerSec: 1, Handed: 1010, P50Ms: 9005, P99Ms: 9005,
		ThroughputRatio: 1 / freeRate, P99Ratio: 9005.0 / 1005}, kill, "the window ends with the load")
	require.Equal(t, FaultFigures{Kind: Recovery, Faults: 1, Sec: 10, Acked: 900, AckedPerSec: 90, Handed: 1000, P50Ms: 1005, P99Ms: 1005,
		ThroughputRatio: 90 / freeRate, P99Ratio: 1}, recovery, "the 10 s after the pause settled; none after the kill, with the load over")
	require.Len(t, rep.Faults, 2)
	require.Equal(t, 120.0, rep.Faults[1].SettledSec)
	table := rep.FaultTable()
	t.Log("\n" + table)
	require.Contains(t, table, "| none (fault-free) | 0 | 60 | 97 | 1.00 | 5850 | 1.00 s | 1.00 s | 1.00 |")
	require.Contains(t, table, "| pause | 1 | 20 | 50 | 0.52 | 1050 | 1.00 s |")
	require.Contains(t, table, "| recovery (10s after each) | 1 | 10 | 90 | 0.93 | 1000 |")
	require.Contains(t, table, "| start-up (the first 10s) | 0 | 10 | 100 | 1.03 | 1100 |")

	bz, err := rep.PNG(ChartWidth, ChartHeight)
	require.NoError(t, err)
	_, err = png.Decode(bytes.NewReader(bz))
	require.NoError(t, err)
}
