package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The README's headline table sits between these two lines; `make figures` writes what is
// between them from the latest results files, and TestREADMEHeadlineIsTheLatestResults fails
// when the README and the results disagree.
const (
	HeadlineBegin = "<!-- headline: written by `make figures` from bench/results/latest*.json; do not edit by hand -->"
	HeadlineEnd   = "<!-- end of headline -->"
)

// latestFiles are the results files the headline reads, in the order it shows them.
var latestFiles = []string{"latest.json", "latest-large.json", "latest-regions.json"}

// ReadLatest reads the latest report of each mode from dir; a mode never run is left out.
func ReadLatest(dir string) ([]*Report, error) {
	var reps []*Report
	for _, name := range latestFiles {
		bz, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var r Report
		if err := json.Unmarshal(bz, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		r.file = name
		reps = append(reps, &r)
	}
	return reps, nil
}

// Headline is the markdown of the README's headline table: one row per system of the latest
// side-by-side run, the large-state run and the regions run, each with its date, its file and
// the command that made it. Nothing in it is typed by hand, so no row outlives its results.
func Headline(reps []*Report) string {
	var b strings.Builder
	b.WriteString("| run | system | records/s | p50 / p99 ms | at half load p50 / p99 ms | CPU-s per GB | disk ÷ payload | beside |\n")
	b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |\n")
	for _, r := range reps {
		run := r.runCell()
		for _, x := range r.Results {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", run, chartName(x), rate(x), pair(x.LatencyP50Ms, x.LatencyP99Ms),
				pair(x.HalfLoadP50Ms, x.HalfLoadP99Ms), opt(x.CPUSecondsPerGB, "%.0f"), diskRatio(x), r.beside(x))
		}
	}
	b.WriteString("\nrecords/s is a capacity where the run swept offered loads (the highest committed rate whose p99 stayed within the run's bound), else what the load reached; ")
	b.WriteString("one run's capacity moves by a whole sweep step between runs of one tree, and absolute figures by ±20–30% on this shared 2-core machine.\n")
	for _, r := range reps {
		fmt.Fprintf(&b, "\n- %s", r.runCell())
		if len(r.Command) > 0 {
			fmt.Fprintf(&b, ": `%s`", strings.Join(r.Command, " "))
		}
		if r.Commit != "" {
			fmt.Fprintf(&b, " at %s", r.Commit)
		}
		fmt.Fprintf(&b, " (`bench/results/%s`, %s)", r.file, r.Machine)
	}
	b.WriteString("\n")
	return b.String()
}

// runCell names a report by its mode and date.
func (r *Report) runCell() string {
	day := r.Time
	if len(day) >= 16 {
		day = strings.Replace(day[:16], "T", " ", 1)
	}
	name := map[string]string{"bench": "side by side", "large": "large state", "regions": "regions"}[r.Mode]
	if name == "" {
		name = r.Mode
	}
	return name + " " + day
}

func rate(x Result) string {
	if x.RecordsPerSec >= 10_000 {
		return fmt.Sprintf("%.1fk", x.RecordsPerSec/1000)
	}
	return fmt.Sprintf("%.0f", x.RecordsPerSec)
}

func pair(a, b float64) string {
	if a == 0 && b == 0 {
		return "-"
	}
	return opt(a, "%.0f") + " / " + opt(b, "%.0f")
}

func diskRatio(x Result) string {
	if x.DiskBytesPerRec == 0 || x.PayloadBytesPerRec == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", x.DiskBytesPerRec/x.PayloadBytesPerRec)
}

// beside is the ratio the README tracks for a row: bftlog beside JetStream of the same
// replication (R1 for one validator, R3 for more), the gateway beside the native client, a
// paused validator's row its note, a regions row its block timing.
func (r *Report) beside(x Result) string {
	find := func(system string, n int) *Result {
		for i := range r.Results {
			if r.Results[i].System == system && r.Results[i].Validators == n {
				return &r.Results[i]
			}
		}
		return nil
	}
	switch {
	case r.Mode == "regions":
		return fmt.Sprintf("RTT %.0f ms, %s", x.RTTMs, x.BlockTiming)
	case strings.HasPrefix(x.System, "bftlog") && strings.Contains(x.System, "paused"):
		return x.Note
	case x.System == "Kafka client via gateway":
		if n := find("bftlog by digest", x.Validators); n != nil && n.RecordsPerSec > 0 {
			return fmt.Sprintf("%.2f× the native client at N=%d", x.RecordsPerSec/n.RecordsPerSec, x.Validators)
		}
	case strings.HasPrefix(x.System, "bftlog") && x.Validators > 0:
		js := find("JetStream R3", 0)
		if x.Validators == 1 {
			js = find("JetStream R1", 0)
		}
		if js != nil && js.RecordsPerSec > 0 {
			return fmt.Sprintf("%.2f× %s", x.RecordsPerSec/js.RecordsPerSec, js.System)
		}
	}
	return ""
}

// SpliceHeadline puts headline between the markers of readme.
func SpliceHeadline(readme []byte, headline string) ([]byte, error) {
	begin := bytes.Index(readme, []byte(HeadlineBegin))
	end := bytes.Index(readme, []byte(HeadlineEnd))
	if begin < 0 || end < begin {
		return nil, fmt.Errorf("the README has no headline markers (%q … %q)", HeadlineBegin, HeadlineEnd)
	}
	var out bytes.Buffer
	out.Write(readme[:begin+len(HeadlineBegin)])
	out.WriteString("\n\n")
	out.WriteString(headline)
	out.WriteString("\n")
	out.Write(readme[end:])
	return out.Bytes(), nil
}
