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
	fmt.Fprintf(w, "\n%-26s %4s %10s %12s %8s %9s %9s %9s %10s %12s %10s %s\n",
		"system", "N", "records", "records/s", "MB/s", "p50 ms", "p95 ms", "p99 ms", "½load p99", "fetch rec/s", "disk B/rec", "peak RSS MiB")
	for _, x := range r.Results {
		n := "-"
		if x.Validators > 0 {
			n = fmt.Sprint(x.Validators)
		}
		rss := make([]string, len(x.PeakRSSMiB))
		for i, v := range x.PeakRSSMiB {
			rss[i] = fmt.Sprint(v)
		}
		fmt.Fprintf(w, "%-26s %4s %10d %12.0f %8.2f %9.1f %9.1f %9.1f %10s %12s %10s %s\n",
			x.System, n, x.Records, x.RecordsPerSec, x.MBPerSec, x.LatencyP50Ms, x.LatencyP95Ms, x.LatencyP99Ms,
			opt(x.HalfLoadP99Ms, "%.1f"), opt(x.FetchPerSec, "%.0f"), opt(x.DiskBytesPerRec, "%.0f"), strings.Join(rss, "/"))
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
		if x.System != "bftlog" {
			continue
		}
		if js != nil && js.RecordsPerSec > 0 {
			fmt.Fprintf(w, "bftlog N=%d / JetStream R3: %.2fx\n", x.Validators, x.RecordsPerSec/js.RecordsPerSec)
		}
		if p := find("one record per tx", x.Validators); p != nil && p.RecordsPerSec > 0 {
			fmt.Fprintf(w, "bftlog N=%d / one record per tx: %.1fx\n", x.Validators, x.RecordsPerSec/p.RecordsPerSec)
		}
		if k := find("Kafka client via gateway", x.Validators); k != nil && k.RecordsPerSec > 0 {
			fmt.Fprintf(w, "Kafka client via gateway / native client, N=%d: %.2fx\n", x.Validators, k.RecordsPerSec/x.RecordsPerSec)
		}
		if x.DiskBytesPerRec > 0 {
			fmt.Fprintf(w, "bftlog N=%d disk / payload: %.1fx\n", x.Validators, x.DiskBytesPerRec/float64(r.Config.RecordBytes))
		}
	}
}

func opt(v float64, f string) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf(f, v)
}

// WriteJSON stores the report under dir as bench-<time>.json and latest.json.
func (r *Report) WriteJSON(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bz, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	name := filepath.Join(dir, "bench-"+time.Now().UTC().Format("20060102T150405Z")+".json")
	if err := os.WriteFile(name, bz, 0o644); err != nil {
		return "", err
	}
	return name, os.WriteFile(filepath.Join(dir, "latest.json"), bz, 0o644)
}
