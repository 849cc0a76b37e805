// Package soak collects a long run's figures per time bin (records/s, p99 produce→commit
// latency, RSS and disk per validator, fault intervals) and writes them as JSON and as a PNG
// chart, for the soak suite in tests/soak (make soak).
package soak

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Fault is one injected fault: what, on which node (-1: all of them), from when to when it was
// repaired, and when every node had caught up after it (seconds since the run started).
type Fault struct {
	Kind     string  `json:"kind"`
	Node     int     `json:"node"`
	StartSec float64 `json:"start_sec"`
	EndSec   float64 `json:"end_sec"`
	// SettledSec ends the window whose acknowledgements count for the fault in ByFault.
	SettledSec float64 `json:"settled_sec,omitempty"`
	Note       string  `json:"note,omitempty"`
}

// NoFault is ByFault's kind for the time no fault was in progress nor just over; Recovery's,
// for the RecoveryTail after each fault settled (every node caught up), when the producers
// still drain what waited during it: neither the fault's time nor fault-free.
const (
	NoFault      = "none"
	Recovery     = "recovery"
	RecoveryTail = 10 * time.Second
	// StartUp is the first RecoveryTail of the run, while the producers connect: not
	// fault-free either.
	StartUp = "start-up"
)

// FaultFigures are the producers' figures while one kind of fault was in progress (from its
// start until every node had caught up after its repair), in the RecoveryTail after one (Kind
// Recovery), or while none was (Kind NoFault), up to the end of the load, with the ratios to the fault-free figures. Throughput counts the
// records acknowledged during that time (but not those handed over during another fault);
// latency, the records handed to the producers during it (whenever they were acknowledged).
type FaultFigures struct {
	Kind        string  `json:"kind"`
	Faults      int     `json:"faults"`
	Sec         float64 `json:"sec"`
	Acked       uint64  `json:"acked"`
	AckedPerSec float64 `json:"acked_records_per_sec"`
	Handed      uint64  `json:"handed_over"`
	P50Ms       float64 `json:"p50_ms"`
	P99Ms       float64 `json:"p99_ms"`
	// ThroughputRatio is AckedPerSec over the fault-free AckedPerSec; P99Ratio likewise.
	ThroughputRatio float64 `json:"throughput_vs_fault_free"`
	P99Ratio        float64 `json:"p99_vs_fault_free"`
}

// Bin is one time interval's figures.
type Bin struct {
	StartSec float64 `json:"start_sec"`
	// AckedPerSec are records acknowledged to producers (committed) per second.
	AckedPerSec float64 `json:"acked_records_per_sec"`
	// ConsumedPerSec are records handed to the consumer group per second.
	ConsumedPerSec float64 `json:"consumed_records_per_sec"`
	// P99Ms is the 99th percentile of produce→commit latency of the records acknowledged in the
	// bin, from each record's hand-over to the producer to the acknowledgement (-1: none).
	P99Ms float64 `json:"p99_ms"`
	// RSSMiB is each validator's largest resident set sampled in the bin (0: not running).
	RSSMiB []float64 `json:"rss_mib"`
	// DiskMiB is each validator's data directory at the bin's last sample.
	DiskMiB []float64 `json:"disk_mib"`
}

// Report is a whole run: configuration, bins, faults and the checks' outcome.
type Report struct {
	Started     time.Time `json:"started"`
	Seed        uint64    `json:"seed"`
	DurationSec float64   `json:"duration_sec"`
	BinSec      float64   `json:"bin_sec"`
	Validators  int       `json:"validators"`
	TargetRate  float64   `json:"target_records_per_sec"`
	Bins        []Bin     `json:"bins"`
	Faults      []Fault   `json:"faults"`
	// ByFault are the figures per kind of fault, the fault-free time first.
	ByFault []FaultFigures `json:"by_fault"`
	// Summary holds the run's totals and check results (records acknowledged and verified,
	// consumer checks, agreement height, ...), as the suite computed them.
	Summary map[string]any `json:"summary"`
}

// latencyStep is the latency histogram's resolution; latencyBuckets cover 10 minutes, and
// anything longer counts in the last bucket.
const (
	latencyStep    = 5 * time.Millisecond
	latencyBuckets = 120_000
)

// Histogram counts latencies in fixed steps: a bin holds tens of thousands of records, and
// a percentile at 5 ms resolution needs no sort of all of them.
type Histogram struct {
	counts []uint64
	n      uint64
}

// Add counts one latency.
func (h *Histogram) Add(d time.Duration) {
	if h.counts == nil {
		h.counts = make([]uint64, latencyBuckets)
	}
	i := min(max(int(d/latencyStep), 0), latencyBuckets-1)
	h.counts[i]++
	h.n++
}

// Count is how many latencies were added.
func (h *Histogram) Count() uint64 { return h.n }

// Percentile is the p-th percentile in milliseconds (the upper edge of its step), or -1 when
// the histogram is empty.
func (h *Histogram) Percentile(p float64) float64 {
	if h.n == 0 {
		return -1
	}
	rank := uint64(math.Ceil(p / 100 * float64(h.n)))
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return float64(time.Duration(i+1)*latencyStep) / float64(time.Millisecond)
		}
	}
	return float64(time.Duration(latencyBuckets)*latencyStep) / float64(time.Millisecond)
}

// Recorder accumulates a run's events into bins; it is safe for concurrent use.
type Recorder struct {
	mu      sync.Mutex
	start   time.Time
	bin     time.Duration
	nodes   int
	acked   []uint64
	eaten   []uint64
	lat     []*Histogram
	total   Histogram
	rss     [][]float64
	disk    [][]float64
	faults  []Fault
	ackedN  uint64
	eatenN  uint64
	lastAck time.Time
	// windows are the faults' windows in time order (the last one open while its fault is in
	// progress), kinds what each kind's records came to, stopAt the end of the load.
	windows []window
	kinds   map[string]*kindTally
	stopAt  time.Time
}

// window is a fault's time, from its start until every node caught up (to zero while open).
type window struct {
	kind     string
	from, to time.Time
}

// kindTally is what FaultFigures are made of.
type kindTally struct {
	lat    Histogram // of the records handed over during the kind's windows
	handed uint64
	acked  uint64 // records acknowledged during the kind's windows
	faults int
}

func (r *Recorder) tally(kind string) *kindTally {
	if r.kinds == nil {
		r.kinds = map[string]*kindTally{}
	}
	k := r.kinds[kind]
	if k == nil {
		k = &kindTally{}
		r.kinds[kind] = k
	}
	return k
}

// NewRecorder starts bins of length bin at start, for a network of nodes validators.
func NewRecorder(start time.Time, bin time.Duration, nodes int) *Recorder {
	return &Recorder{start: start, bin: bin, nodes: nodes}
}

// at grows the bins to hold time t and returns its index (r.mu held).
func (r *Recorder) at(t time.Time) int {
	i := max(int(t.Sub(r.start)/r.bin), 0)
	for len(r.acked) <= i {
		r.acked = append(r.acked, 0)
		r.eaten = append(r.eaten, 0)
		r.lat = append(r.lat, &Histogram{})
		r.rss = append(r.rss, make([]float64, r.nodes))
		r.disk = append(r.disk, make([]float64, r.nodes))
	}
	return i
}

// Acked records records acknowledged at t, one latency per record.
func (r *Recorder) Acked(t time.Time, latencies []time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := r.at(t)
	r.acked[i] += uint64(len(latencies))
	r.ackedN += uint64(len(latencies))
	for _, d := range latencies {
		r.lat[i].Add(d)
		r.total.Add(d)
	}
	r.lastAck = t
	ackedKind := ""
	if r.stopAt.IsZero() || !t.After(r.stopAt) {
		ackedKind = r.kindAt(t)
	}
	// A record's latency counts for what was in progress when it was handed over: the backlog
	// a fault leaves behind is the fault's, not the fault-free time's that drains it. Its
	// acknowledgement counts for what is in progress now, unless it was handed over during
	// another fault: a drained backlog is no throughput of the time that drains it.
	for _, d := range latencies {
		handed := t.Add(-d)
		if !r.stopAt.IsZero() && !handed.Before(r.stopAt) {
			continue
		}
		kind := r.kindAt(handed)
		k := r.tally(kind)
		k.handed++
		k.lat.Add(d)
		if ackedKind != "" && (kind == ackedKind || kind == NoFault) {
			r.tally(ackedKind).acked++
		}
	}
}

// kindAt is the kind of fault in progress at t, Recovery, or NoFault (r.mu held): the last
// window begun by t decides. Records are handed over and acknowledged recently, so the search
// starts at the last window.
func (r *Recorder) kindAt(t time.Time) string {
	for i := len(r.windows) - 1; i >= 0; i-- {
		switch w := r.windows[i]; {
		case t.Before(w.from):
			continue
		case w.to.IsZero() || t.Before(w.to):
			return w.kind
		case t.Before(w.to.Add(RecoveryTail)):
			return Recovery
		}
		break
	}
	if t.Before(r.start.Add(RecoveryTail)) && (len(r.windows) == 0 || t.Before(r.windows[0].from)) {
		return StartUp
	}
	return NoFault
}

// FaultBegins marks the start of a fault of kind at t: its window lasts until the fault's
// Fault call says every node caught up. Faults come one at a time.
func (r *Recorder) FaultBegins(kind string, t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.windows = append(r.windows, window{kind: kind, from: t})
}

// LoadStopped marks the end of the load at t: records handed over or acknowledged after it (the
// producers' last ones) count for no kind, and the fault-free time ends there.
func (r *Recorder) LoadStopped(t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopAt = t
}

// Consumed records n records handed to the consumer group at t.
func (r *Recorder) Consumed(t time.Time, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := r.at(t)
	r.eaten[i] += uint64(n)
	r.eatenN += uint64(n)
}

// Sample records each validator's resident set and data directory (bytes; 0 for a node that is
// not running) at t: the bin keeps the largest RSS and the last disk figure.
func (r *Recorder) Sample(t time.Time, rss, disk []uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := r.at(t)
	for n := 0; n < r.nodes && n < len(rss); n++ {
		r.rss[i][n] = max(r.rss[i][n], float64(rss[n])/(1<<20))
	}
	for n := 0; n < r.nodes && n < len(disk); n++ {
		if disk[n] > 0 {
			r.disk[i][n] = float64(disk[n]) / (1 << 20)
		}
	}
}

// Fault records a fault: injected at from, repaired at to, every node caught up at settled. It
// ends the window FaultBegins opened (a fault recorded without one gets its window here).
func (r *Recorder) Fault(kind string, node int, from, to, settled time.Time, note string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults = append(r.faults, Fault{Kind: kind, Node: node, StartSec: from.Sub(r.start).Seconds(), EndSec: to.Sub(r.start).Seconds(),
		SettledSec: settled.Sub(r.start).Seconds(), Note: note})
	if n := len(r.windows); n > 0 && r.windows[n-1].to.IsZero() && r.windows[n-1].kind == kind {
		r.windows[n-1].to = settled
	} else {
		r.windows = append(r.windows, window{kind: kind, from: from, to: settled})
	}
	r.tally(kind).faults++
}

// Totals are the whole run's figures so far.
type Totals struct {
	Acked, Consumed uint64
	P99Ms, P50Ms    float64
	// MeanAckedPerSec is acknowledged records over the time from start to the last ack.
	MeanAckedPerSec float64
	PeakRSSMiB      []float64
	LastDiskMiB     []float64
}

// Totals sums the run so far.
func (r *Recorder) Totals() Totals {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := Totals{Acked: r.ackedN, Consumed: r.eatenN, P99Ms: r.total.Percentile(99), P50Ms: r.total.Percentile(50),
		PeakRSSMiB: make([]float64, r.nodes), LastDiskMiB: make([]float64, r.nodes)}
	if s := r.lastAck.Sub(r.start).Seconds(); s > 0 {
		t.MeanAckedPerSec = float64(r.ackedN) / s
	}
	for i := range r.rss {
		for n := range r.nodes {
			t.PeakRSSMiB[n] = max(t.PeakRSSMiB[n], r.rss[i][n])
			if r.disk[i][n] > 0 {
				t.LastDiskMiB[n] = r.disk[i][n]
			}
		}
	}
	return t
}

// Report builds the run's report; the last bin is cut at end so that its rates are per second
// of the time it covers.
func (r *Recorder) Report(seed uint64, targetRate float64, end time.Time, summary map[string]any) *Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.at(end)
	rep := &Report{Started: r.start.UTC(), Seed: seed, DurationSec: end.Sub(r.start).Seconds(), BinSec: r.bin.Seconds(),
		Validators: r.nodes, TargetRate: targetRate, Faults: append([]Fault(nil), r.faults...), Summary: summary}
	sort.Slice(rep.Faults, func(i, j int) bool { return rep.Faults[i].StartSec < rep.Faults[j].StartSec })
	rep.ByFault = r.byFault(end)
	for i := range r.acked {
		from := time.Duration(i) * r.bin
		secs := min(r.bin, end.Sub(r.start)-from).Seconds()
		if secs <= 0 {
			break
		}
		rep.Bins = append(rep.Bins, Bin{
			StartSec: from.Seconds(), AckedPerSec: float64(r.acked[i]) / secs, ConsumedPerSec: float64(r.eaten[i]) / secs,
			P99Ms: r.lat[i].Percentile(99), RSSMiB: append([]float64(nil), r.rss[i]...), DiskMiB: append([]float64(nil), r.disk[i]...),
		})
	}
	return rep
}

// byFault computes the report's ByFault with the load ending at end unless LoadStopped said
// earlier (r.mu held).
func (r *Recorder) byFault(end time.Time) []FaultFigures {
	if !r.stopAt.IsZero() && r.stopAt.Before(end) {
		end = r.stopAt
	}
	r.tally(NoFault)
	startUp := r.start.Add(RecoveryTail)
	if startUp.After(end) {
		startUp = end
	}
	if len(r.windows) > 0 && startUp.After(r.windows[0].from) {
		startUp = r.windows[0].from
	}
	dur := map[string]time.Duration{NoFault: end.Sub(startUp), StartUp: max(startUp.Sub(r.start), 0)}
	recoveries := 0
	for i, w := range r.windows {
		to := w.to
		if to.IsZero() || to.After(end) { // a fault the run ended in
			to = end
		}
		tail := to.Add(RecoveryTail)
		if tail.After(end) {
			tail = end
		}
		if i+1 < len(r.windows) && tail.After(r.windows[i+1].from) {
			tail = r.windows[i+1].from
		}
		d, rd := max(to.Sub(w.from), 0), max(tail.Sub(to), 0)
		r.tally(w.kind)
		dur[w.kind] += d
		dur[Recovery] += rd
		dur[NoFault] -= d + rd
		if rd > 0 {
			recoveries++
		}
	}
	if recoveries > 0 {
		r.tally(Recovery).faults = recoveries
	}
	kinds := make([]string, 0, len(r.kinds))
	for kind := range r.kinds {
		if kind != NoFault && kind != Recovery && kind != StartUp {
			kinds = append(kinds, kind)
		}
	}
	sort.Strings(kinds)
	kinds = append([]string{NoFault}, kinds...)
	for _, kind := range []string{Recovery, StartUp} {
		if r.kinds[kind] != nil {
			kinds = append(kinds, kind)
		}
	}
	out := []FaultFigures{}
	for _, kind := range kinds {
		k := r.kinds[kind]
		f := FaultFigures{Kind: kind, Faults: k.faults, Sec: dur[kind].Seconds(), Handed: k.handed, Acked: k.acked,
			P50Ms: k.lat.Percentile(50), P99Ms: k.lat.Percentile(99)}
		if f.Sec > 0 {
			f.AckedPerSec = float64(k.acked) / f.Sec
		}
		out = append(out, f)
	}
	for i := range out {
		if out[0].AckedPerSec > 0 {
			out[i].ThroughputRatio = out[i].AckedPerSec / out[0].AckedPerSec
		}
		if out[0].P99Ms > 0 && out[i].P99Ms >= 0 {
			out[i].P99Ratio = out[i].P99Ms / out[0].P99Ms
		}
	}
	return out
}

// FaultTable is ByFault as a Markdown table, for the log and docs/reliability.md.
func (rep *Report) FaultTable() string {
	var b strings.Builder
	b.WriteString("| fault | faults | seconds | acknowledged/s | × fault-free | records handed over | p50 produce→commit | p99 produce→commit | × fault-free |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, f := range rep.ByFault {
		name := f.Kind
		switch name {
		case NoFault:
			name = "none (fault-free)"
		case Recovery:
			name = fmt.Sprintf("recovery (%s after each)", RecoveryTail)
		case StartUp:
			name = fmt.Sprintf("start-up (the first %s)", RecoveryTail)
		}
		fmt.Fprintf(&b, "| %s | %d | %.0f | %.0f | %.2f | %d | %s | %s | %.2f |\n", name, f.Faults, f.Sec, f.AckedPerSec,
			f.ThroughputRatio, f.Handed, msLabel(f.P50Ms), msLabel(f.P99Ms), f.P99Ratio)
	}
	return b.String()
}

// msLabel shows a latency in milliseconds as seconds ("–" for none).
func msLabel(ms float64) string {
	if ms < 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f s", ms/1000)
}

// Write saves the report as soak-<UTC start>.json and .png in dir, and copies both to
// last.json and last.png there (a stable name for docs/reliability.md). It returns the two paths.
func (rep *Report) Write(dir string) (pngPath, jsonPath string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	base := filepath.Join(dir, "soak-"+rep.Started.Format("20060102T150405Z"))
	bz, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return "", "", err
	}
	img, err := rep.PNG(ChartWidth, ChartHeight)
	if err != nil {
		return "", "", err
	}
	for _, f := range []struct {
		path string
		data []byte
	}{{base + ".json", bz}, {base + ".png", img}, {filepath.Join(dir, "last.json"), bz}, {filepath.Join(dir, "last.png"), img}} {
		if err := os.WriteFile(f.path, f.data, 0o644); err != nil {
			return "", "", fmt.Errorf("write %s: %w", f.path, err)
		}
	}
	return base + ".png", base + ".json", nil
}
