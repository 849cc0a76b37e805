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
		r.Fault(k, node, start.Add(time.Duration(100+i*100)*time.Second), start.Add(time.Duration(125+i*100)*time.Second), "")
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
	require.Equal(t, 1248, img.Bounds().Dy())

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
