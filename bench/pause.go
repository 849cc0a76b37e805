package bench

import (
	"fmt"
	"time"
)

// measurePause is the fault row: rate offered by open-loop producers (bench/openloop.go) for
// cfg.PauseSeconds with every validator up, then as long again with the last validator paused
// (SIGSTOP, as a stalled VM or a long GC pause), then resumed. A BFT log must keep committing
// at the pace it is offered while one of four is silent; the row's records/s and p99 are the
// paused phase's, and the note gives the phase before it.
func (c *chain) measurePause(cfg Config, wl workload, topic string, rate float64) (Result, error) {
	phase := time.Duration(cfg.PauseSeconds) * time.Second
	producers := c.signers[:cfg.Producers]
	build := wl.builder(topic, cfg.Partitions)
	run := func(what string) (SweepPoint, error) {
		cfg.Log("  %s: %.0f records/s for %s", what, rate, phase)
		// A paused proposer's turn costs timeout_propose: let the backlog outgrow a sweep's
		// limit, the phase is judged by its rate and p99.
		return c.openLoad(cfg, producers, build, rate, phase, phase)
	}
	before, err := run("all validators up")
	if err != nil {
		return Result{}, err
	}
	victim := c.net.Nodes[len(c.net.Nodes)-1]
	victim.Pause()
	paused, err := run(fmt.Sprintf("validator %d of %d paused", len(c.net.Nodes)-1, len(c.net.Nodes)))
	victim.Resume()
	if err != nil {
		return Result{}, err
	}
	res := Result{
		System: pauseSystem(len(c.net.Nodes)), Validators: len(c.net.Nodes),
		Records: paused.Records, Seconds: phase.Seconds(),
		RecordsPerSec: paused.CommittedPerSec, MBPerSec: paused.CommittedPerSec * float64(cfg.RecordBytes) / 1e6,
		LatencyP50Ms: paused.P50Ms, LatencyP99Ms: paused.P99Ms,
		PayloadBytesPerRec: float64(cfg.RecordBytes),
		Note: fmt.Sprintf("offered %.0f records/s (half the capacity) for %s each: all up %.0f records/s, p99 %.0f ms; one paused %.0f records/s (%.0f%% of all up), p99 %.0f ms (%.2fx)",
			rate, phase, before.CommittedPerSec, before.P99Ms, paused.CommittedPerSec, 100*paused.CommittedPerSec/max(1, before.CommittedPerSec), paused.P99Ms, paused.P99Ms/max(1, before.P99Ms)),
	}
	cfg.Log("  %s", res.Note)
	return res, nil
}

// pauseSystem names the fault row of an n-validator network.
func pauseSystem(n int) string { return fmt.Sprintf("bftlog, 1 of %d paused", n) }
