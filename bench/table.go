package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// WriteTable prints the results with the ratios the README tracks.
func (r *Report) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "\n%-26s %4s %10s %12s %8s %9s %9s %9s %10s %12s %11s %10s %9s %s\n",
		"system", "N", "records", "records/s", "MB/s", "p50 ms", "p95 ms", "p99 ms", "½load p99", "fetch rec/s", "payload B/r", "disk B/rec", "CPU s/GB", "peak RSS MiB")
	for _, x := range r.Results {
		n := "-"
		if x.Validators > 0 {
			n = fmt.Sprint(x.Validators)
		}
		fmt.Fprintf(w, "%-26s %4s %10d %12.0f %8.2f %9.1f %9.1f %9.1f %10s %12s %11s %10s %9s %s\n",
			x.System, n, x.Records, x.RecordsPerSec, x.MBPerSec, x.LatencyP50Ms, x.LatencyP95Ms, x.LatencyP99Ms,
			opt(x.HalfLoadP99Ms, "%.1f"), opt(x.FetchPerSec, "%.0f"), opt(x.PayloadBytesPerRec, "%.0f"), opt(x.DiskBytesPerRec, "%.0f"),
			opt(x.CPUSecondsPerGB, "%.0f"), rssCell(x))
	}
	find := func(system string, n int) *Result {
		for i := range r.Results {
			if r.Results[i].System == system && r.Results[i].Validators == n {
				return &r.Results[i]
			}
		}
		return nil
	}
	js := find("JetStream R3", 0)
	for _, x := range r.Results {
		if x.System != "bftlog" && x.System != "bftlog by digest" && !strings.HasPrefix(x.System, "bftlog @") {
			continue
		}
		if js != nil && js.RecordsPerSec > 0 {
			fmt.Fprintf(w, "%s N=%d / JetStream R3: %.2fx\n", x.System, x.Validators, x.RecordsPerSec/js.RecordsPerSec)
		}
		if js != nil && js.CPUSecondsPerGB > 0 && x.CPUSecondsPerGB > 0 {
			fmt.Fprintf(w, "CPU per GB committed, %s N=%d / JetStream R3: %.1fx (%.0f / %.0f CPU-seconds)\n",
				x.System, x.Validators, x.CPUSecondsPerGB/js.CPUSecondsPerGB, x.CPUSecondsPerGB, js.CPUSecondsPerGB)
		}
		if b := baselineOf(r, x); b != nil && b.RecordsPerSec > 0 && b.CPUSecondsPerGB > 0 {
			fmt.Fprintf(w, "%s N=%d / %s: records/s %.2fx, CPU per GB %.2fx, disk per record %.2fx\n", x.System, x.Validators, b.System,
				x.RecordsPerSec/b.RecordsPerSec, x.CPUSecondsPerGB/b.CPUSecondsPerGB, x.DiskBytesPerRec/max(b.DiskBytesPerRec, 1))
		}
		if p := find(pauseSystem(x.Validators), x.Validators); p != nil && x.RecordsPerSec > 0 && !strings.HasPrefix(x.System, "bftlog @") {
			fmt.Fprintf(w, "bftlog N=%d, one validator paused: %s\n", x.Validators, p.Note)
		}
		if p := find("one record per tx", x.Validators); p != nil && p.RecordsPerSec > 0 {
			fmt.Fprintf(w, "bftlog N=%d / one record per tx: %.1fx\n", x.Validators, x.RecordsPerSec/p.RecordsPerSec)
		}
		if k := find("Kafka client via gateway", x.Validators); k != nil {
			ratio := "- (a capacity is 0: no step within the bound)"
			if k.RecordsPerSec > 0 && x.RecordsPerSec > 0 {
				ratio = fmt.Sprintf("%.2fx", k.RecordsPerSec/x.RecordsPerSec)
			}
			fmt.Fprintf(w, "Kafka client via gateway / native client, N=%d: %s\n", x.Validators, ratio)
		}
	}
	if c := find(syncCommitSystem, 1); c != nil {
		fmt.Fprintf(w, "%s: %.0f records/s, a commit answered in %.1f ms at p50 (%s)\n", syncCommitSystem, c.RecordsPerSec, c.LatencyP50Ms, c.Note)
	}
	for _, x := range r.Results {
		if x.DiskBytesPerRec > 0 && x.PayloadBytesPerRec > 0 {
			fmt.Fprintf(w, "%s N=%d disk / payload: %.0f / %.0f B per record = %.2fx (stored batches %.0f B per record)\n",
				x.System, x.Validators, x.DiskBytesPerRec, x.PayloadBytesPerRec, x.DiskBytesPerRec/x.PayloadBytesPerRec, x.LogBytesPerRec)
		}
	}
	r.writeSweeps(w)
	r.writeLarge(w)
	r.writeRegions(w)
}

// writeSweeps prints every offered-load sweep, step by step, and the capacities' ratios.
func (r *Report) writeSweeps(w io.Writer) {
	var swept []Result
	for _, x := range r.Results {
		if len(x.Sweep) > 0 {
			swept = append(swept, x)
		}
	}
	if len(swept) == 0 {
		return
	}
	fmt.Fprintf(w, "\nOffered-load sweeps (%s per step; capacity: the highest committed rate with p99 ≤ %s; * = overloaded or fell behind):\n", r.Config.SweepStep, r.Config.CapacityP99)
	fmt.Fprintf(w, "%-32s %12s %12s %9s %9s %9s %9s\n", "system", "offered/s", "committed/s", "p50 ms", "p99 ms", "CPU s/GB", "block ms")
	for _, x := range swept {
		for _, p := range x.Sweep {
			mark := ""
			if !p.sustained() {
				mark = "*"
			}
			fmt.Fprintf(w, "%-32s %12.0f %11.0f%1s %9.0f %9.0f %9s %9s\n", chartName(x), p.OfferedPerSec, p.CommittedPerSec, mark, p.P50Ms, p.P99Ms,
				opt(p.CPUSecondsPerGB, "%.0f"), opt(p.BlockIntervalMs, "%.0f"))
		}
	}
	for _, x := range swept {
		fmt.Fprintf(w, "%-32s capacity %8.0f records/s (closed loop %.0f); at half of it p50 %s ms, p99 %s ms\n", chartName(x), x.RecordsPerSec,
			x.ClosedLoopPerSec, opt(x.HalfLoadP50Ms, "%.0f"), opt(x.HalfLoadP99Ms, "%.0f"))
	}
}

// writeRegions prints a RunRegions report: one row per round-trip time.
func (r *Report) writeRegions(w io.Writer) {
	if r.Mode != "regions" {
		return
	}
	fmt.Fprintf(w, "\n%d validators, round trip added between every two (%s of load per RTT):\n", r.Config.RegionValidators, r.Config.RegionDuration)
	fmt.Fprintf(w, "%7s  %-50s %10s %8s %8s %10s %9s %9s %11s\n", "RTT ms", "block timing", "records/s", "p50 ms", "p99 ms", "½load p99", "block ms", "rounds>0", "absent sigs")
	for _, x := range r.Results {
		fmt.Fprintf(w, "%7.0f  %-50s %10.0f %8.0f %8.0f %10s %9.0f %5d/%-3d %11d\n", x.RTTMs, x.BlockTiming, x.RecordsPerSec,
			x.LatencyP50Ms, x.LatencyP99Ms, opt(x.HalfLoadP99Ms, "%.0f"), x.BlockIntervalMs, x.LaterRoundBlocks, x.Blocks, x.AbsentPrecommits)
	}
}

// rssCell lists each validator's peak RSS; a peer run inside the harness is marked so.
func rssCell(x Result) string {
	rss := make([]string, len(x.PeakRSSMiB))
	for i, v := range x.PeakRSSMiB {
		rss[i] = fmt.Sprint(v)
	}
	s := strings.Join(rss, "/")
	if s != "" && x.PeakRSSOf == "harness process" {
		s += " (harness)"
	}
	return s
}

// writeLarge prints a RunLarge report's empty and large measurements side by side.
func (r *Report) writeLarge(w io.Writer) {
	var empty, large *Result
	for i := range r.Results {
		switch x := &r.Results[i]; {
		case x.LogBytesBefore > 0:
			large = x
		case r.Mode == "large":
			empty = x
		}
	}
	if empty == nil || large == nil {
		return
	}
	fmt.Fprintf(w, "\none validator, same measured load (%d records of %d B):\n", r.Config.Records, r.Config.RecordBytes)
	fmt.Fprintf(w, "%-18s %14s %14s %8s\n", "", "empty chain", fmt.Sprintf("%.1f GB log", float64(large.LogBytesBefore)/1e9), "ratio")
	row := func(name string, a, b float64) {
		ratio := "-"
		if a > 0 {
			ratio = fmt.Sprintf("%.2fx", b/a)
		}
		fmt.Fprintf(w, "%-18s %14s %14s %8s\n", name, opt(a, "%.0f"), opt(b, "%.0f"), ratio)
	}
	row("records/s", empty.RecordsPerSec, large.RecordsPerSec)
	row("p50 ms", empty.LatencyP50Ms, large.LatencyP50Ms)
	row("p99 ms", empty.LatencyP99Ms, large.LatencyP99Ms)
	row("½ load p99 ms", empty.HalfLoadP99Ms, large.HalfLoadP99Ms)
	row("fetch rec/s", empty.FetchPerSec, large.FetchPerSec)
	row("peak RSS MiB", float64(sum(empty.PeakRSSMiB)), float64(sum(large.PeakRSSMiB)))
	if large.DataDirBytes > 0 {
		fmt.Fprintf(w, "data dir after the large run: %.2f GB\n", float64(large.DataDirBytes)/1e9)
	}
}

func sum(xs []int) int {
	var s int
	for _, x := range xs {
		s += x
	}
	return s
}

func opt(v float64, f string) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf(f, v)
}

// WriteJSON stores the report under dir as bench-<time>.json and latest.json (a RunLarge
// report: large-<time>.json and latest-large.json; RunRegions: regions-<time>.json and
// latest-regions.json).
func (r *Report) WriteJSON(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bz, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	prefix, latest := "bench-", "latest.json"
	switch r.Mode {
	case "large":
		prefix, latest = "large-", "latest-large.json"
	case "regions":
		prefix, latest = "regions-", "latest-regions.json"
	}
	name := filepath.Join(dir, prefix+time.Now().UTC().Format("20060102T150405Z")+".json")
	if err := os.WriteFile(name, bz, 0o644); err != nil {
		return "", err
	}
	return name, os.WriteFile(filepath.Join(dir, latest), bz, 0o644)
}

// baselineOf is the -baseline row measured on x's network size, for a row of this tree.
func baselineOf(r *Report, x Result) *Result {
	if strings.HasPrefix(x.System, "bftlog @") {
		return nil
	}
	for i := range r.Results {
		if b := &r.Results[i]; strings.HasPrefix(b.System, "bftlog @") && b.Validators == x.Validators {
			return b
		}
	}
	return nil
}
