package bench

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// SweepPoint is one step of an offered-load sweep: a constant rate offered for Config.SweepStep
// whatever the system did with it (an open loop), and what it committed.
type SweepPoint struct {
	OfferedPerSec float64 `json:"offered_records_per_sec"`
	// CommittedPerSec is the records committed per second over the step's last three quarters
	// (the first quarter lets the pipeline fill).
	CommittedPerSec float64 `json:"committed_records_per_sec"`
	Records         int     `json:"records_committed"`
	// Latencies are of records, each from its creation by the producer to the acknowledgement
	// of its commit: time spent waiting for an in-flight slot or in a backlog counts.
	P50Ms float64 `json:"latency_p50_ms"`
	P99Ms float64 `json:"latency_p99_ms"`
	// Overloaded says the step was cut short: a producer's backlog passed two seconds of its
	// rate, or records were still uncommitted when the drain after the step ended (they count
	// in the percentiles at the time the step gave up on them).
	Overloaded bool `json:"overloaded,omitempty"`
	// CPUSecondsPerGB is the CPU time per GB committed during the step: all validators' for
	// bftlog, the harness process's (servers and clients) for JetStream.
	CPUSecondsPerGB float64 `json:"cpu_seconds_per_gb,omitempty"`
	BlockIntervalMs float64 `json:"block_interval_ms,omitempty"`
	// LaterRoundBlocks of the step's blocks needed more than one consensus round; EmptyBlocks
	// carried nothing while submitted transactions waited.
	LaterRoundBlocks int `json:"later_round_blocks,omitempty"`
	EmptyBlocks      int `json:"empty_blocks,omitempty"`
	// AbsentPrecommits is validators' precommits missing from the step's blocks' last commits.
	AbsentPrecommits int `json:"absent_precommits,omitempty"`
	// CarriedWholePct is the share of the bytes of nameable transactions that the step's
	// proposals carried whole (bftlog by digest; see Result.CarriedWholeShare).
	CarriedWholePct float64 `json:"carried_whole_pct,omitempty"`
}

// sustained says the step kept up: every record offered was committed within the step's time
// (give or take the spread of a short window), no backlog grew.
func (p SweepPoint) sustained() bool {
	return !p.Overloaded && p.CommittedPerSec >= 0.9*p.OfferedPerSec
}

// within says the step counts toward capacity: sustained with p99 inside the bound.
func (p SweepPoint) within(bound time.Duration) bool {
	return p.sustained() && p.P99Ms <= float64(bound.Milliseconds())
}

func (p SweepPoint) String() string {
	s := fmt.Sprintf("offered %.0f records/s: committed %.0f/s, p50 %.0f ms, p99 %.0f ms", p.OfferedPerSec, p.CommittedPerSec, p.P50Ms, p.P99Ms)
	if p.CPUSecondsPerGB > 0 {
		s += fmt.Sprintf(", %.0f CPU-s/GB", p.CPUSecondsPerGB)
	}
	if p.BlockIntervalMs > 0 {
		s += fmt.Sprintf(", blocks %.0f ms apart", p.BlockIntervalMs)
	}
	if p.LaterRoundBlocks > 0 || p.EmptyBlocks > 0 || p.AbsentPrecommits > 0 {
		s += fmt.Sprintf(" (%d needed a later round, %d empty, %d precommits missing)", p.LaterRoundBlocks, p.EmptyBlocks, p.AbsentPrecommits)
	}
	if p.CarriedWholePct > 0 {
		s += fmt.Sprintf(", %.1f%% of batch bytes carried whole", p.CarriedWholePct)
	}
	if p.Overloaded {
		s += ", overloaded"
	}
	return s
}

// stepFunc offers rate records/s for one step and says what was committed.
type stepFunc func(rate float64) (SweepPoint, error)

// sweep offers rising constant rates, SweepFactor apart from SweepStart, until the committed
// rate stops rising, a step is overloaded, p99 passes SweepStopP99 or the rate SweepMax; then it narrows the step
// between the last rate within the capacity bound and the next one, SweepRefine times. The
// points come back sorted by offered rate.
func sweep(cfg Config, system string, step stepFunc) ([]SweepPoint, error) {
	var pts []SweepPoint
	var last SweepPoint
	run := func(rate float64) error {
		if last.Overloaded || !last.sustained() && last.OfferedPerSec > 0 {
			// What an overload left behind (a backlog, compactions) must not count against
			// the next step.
			time.Sleep(cfg.SweepSettle)
		}
		p, err := step(rate)
		last = p
		if err != nil {
			return err
		}
		cfg.Log("  %s, %s", system, p)
		pts = append(pts, p)
		sort.Slice(pts, func(i, j int) bool { return pts[i].OfferedPerSec < pts[j].OfferedPerSec })
		return nil
	}
	prev := 0.0
	for rate := cfg.SweepStart; cfg.SweepMax == 0 || rate <= cfg.SweepMax; rate *= cfg.SweepFactor {
		if err := run(rate); err != nil {
			return pts, err
		}
		p := pts[len(pts)-1]
		if p.Overloaded || p.P99Ms > float64(cfg.SweepStopP99.Milliseconds()) || p.CommittedPerSec < 1.05*prev {
			break
		}
		prev = p.CommittedPerSec
	}
	for i := 0; i < cfg.SweepRefine; i++ {
		good, bad := bracket(pts, cfg.CapacityP99)
		if good == nil || bad == nil || bad.OfferedPerSec/good.OfferedPerSec < 1.08 {
			break
		}
		if err := run(math.Sqrt(good.OfferedPerSec * bad.OfferedPerSec)); err != nil {
			return pts, err
		}
	}
	return pts, nil
}

// bracket is the highest offered rate within the bound and the next rate offered above it.
func bracket(pts []SweepPoint, bound time.Duration) (good, bad *SweepPoint) {
	for i := range pts {
		if pts[i].within(bound) {
			good, bad = &pts[i], nil
		} else if good != nil && bad == nil {
			bad = &pts[i]
		}
	}
	return good, bad
}

// capacity is the highest committed rate of a step within the bound (at most its offered
// rate), and that step.
func capacity(pts []SweepPoint, bound time.Duration) (float64, *SweepPoint) {
	var best *SweepPoint
	for i := range pts {
		if pts[i].within(bound) && (best == nil || pts[i].CommittedPerSec > best.CommittedPerSec) {
			best = &pts[i]
		}
	}
	if best == nil {
		return 0, nil
	}
	// A short window's count can come out above the rate offered; a capacity never does.
	return min(best.CommittedPerSec, best.OfferedPerSec), best
}

// applySweep makes a result's headline its capacity: records_per_sec becomes the highest
// committed rate whose p99 stayed within the bound (the closed-loop rate is kept beside it),
// and the latencies those of that step. Then, when half is given, it offers half the capacity
// for one more step: the half-load latencies.
func applySweep(cfg Config, res *Result, pts []SweepPoint, half stepFunc) error {
	res.Sweep = pts
	res.ClosedLoopPerSec = res.RecordsPerSec
	rate, at := capacity(pts, cfg.CapacityP99)
	res.RecordsPerSec = rate
	if at == nil {
		res.MBPerSec, res.LatencyP50Ms, res.LatencyP95Ms, res.LatencyP99Ms = 0, 0, 0, 0
		cfg.Log("  %s: no step kept p99 within %s", res.System, cfg.CapacityP99)
		return nil
	}
	res.MBPerSec = rate * res.PayloadBytesPerRec / 1e6
	res.LatencyP50Ms, res.LatencyP95Ms, res.LatencyP99Ms = at.P50Ms, 0, at.P99Ms
	cfg.Log("  %s capacity (p99 ≤ %s): %.0f records/s (closed loop %.0f)", res.System, cfg.CapacityP99, rate, res.ClosedLoopPerSec)
	if half == nil {
		return nil
	}
	// The steps past capacity leave work behind (compactions, a pool to trim): let it settle,
	// so that the half-load step measures half the load, not the tail of an overload.
	time.Sleep(cfg.SweepSettle)
	p, err := half(rate / 2)
	if err != nil {
		return err
	}
	cfg.Log("  %s at half capacity: %s", res.System, p)
	res.HalfLoadP50Ms, res.HalfLoadP99Ms = p.P50Ms, p.P99Ms
	return nil
}
