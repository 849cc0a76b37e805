package bench

import (
	"context"
	"fmt"
	"time"
)

// pauseInFlight is the transactions each producer may have in flight in the fault row.
const pauseInFlight = 64

// measurePause is the fault row: half the measured peak rate for cfg.PauseSeconds with every
// validator up, then as long again with the last validator paused (SIGSTOP, as a stalled VM
// or a long GC pause), then resumed. A BFT log must keep committing at the pace it is offered
// while one of four is silent; the row's records/s and p99 are the paused phase's, and the
// note gives the phase before it.
func (c *chain) measurePause(cfg Config, wl workload, topic string, rate float64) (Result, error) {
	phase := time.Duration(cfg.PauseSeconds) * time.Second
	producers := c.signers[:cfg.Producers]
	build := wl.builder(topic, cfg.Partitions)
	run := func(what string) (*tracker, time.Duration, error) {
		cfg.Log("  %s: %.0f records/s for %s", what, rate, phase)
		ctx, cancel := context.WithTimeout(context.Background(), phase)
		defer cancel()
		// The budget outlasts the phase: the deadline ends it. Under a paced load a batch
		// holds a linger's worth of records, so a producer needs many in flight to offer the
		// rate while the paused validator stretches heights: with cfg.InFlight (4) the client's
		// own pipeline, not the chain, capped an all-up phase at 57% of the rate.
		return load(ctx, cfg, c, producers, build, int(rate*phase.Seconds()*2), cfg.BatchRecords, max(cfg.InFlight, pauseInFlight), rate)
	}
	before, beforeElapsed, err := run("all validators up")
	if err != nil {
		return Result{}, err
	}
	victim := c.net.Nodes[len(c.net.Nodes)-1]
	victim.Pause()
	paused, pausedElapsed, err := run(fmt.Sprintf("validator %d of %d paused", len(c.net.Nodes)-1, len(c.net.Nodes)))
	victim.Resume()
	if err != nil {
		return Result{}, err
	}
	perSec := func(n int64, d time.Duration) float64 {
		if d <= 0 {
			return 0
		}
		return float64(n) / d.Seconds()
	}
	pausedRate, beforeRate := perSec(paused.committed.Load(), pausedElapsed), perSec(before.committed.Load(), beforeElapsed)
	res := Result{
		System: pauseSystem(len(c.net.Nodes)), Validators: len(c.net.Nodes),
		Records: int(paused.committed.Load()), Seconds: pausedElapsed.Seconds(),
		RecordsPerSec: pausedRate, MBPerSec: perSec(paused.payload.Load(), pausedElapsed) / 1e6,
		LatencyP50Ms: paused.lat.pct(50), LatencyP95Ms: paused.lat.pct(95), LatencyP99Ms: paused.lat.pct(99),
		PayloadBytesPerRec: float64(cfg.RecordBytes),
		Note: fmt.Sprintf("offered %.0f records/s (half the peak) for %s each: all up %.0f records/s, p99 %.0f ms; one paused %.0f records/s (%.0f%%), p99 %.0f ms",
			rate, phase, beforeRate, before.lat.pct(99), pausedRate, 100*pausedRate/max(1, beforeRate), paused.lat.pct(99)),
	}
	cfg.Log("  %s", res.Note)
	return res, nil
}

// pauseSystem names the fault row of an n-validator network.
func pauseSystem(n int) string { return fmt.Sprintf("bftlog, 1 of %d paused", n) }
