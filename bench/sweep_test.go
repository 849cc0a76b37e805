package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A system that keeps up to 100k records/s with a p99 that rises with load, and past it
// commits only 100k with a backlog: the sweep climbs until the committed rate stops rising,
// narrows the step between the last rate within the bound and the next, and the capacity is
// the highest committed rate within the bound.
func TestSweepFindsCapacity(t *testing.T) {
	cfg := Config{SweepStart: 10_000, SweepFactor: 2, SweepStopP99: 2 * time.Second, SweepRefine: 2, CapacityP99: time.Second, Log: t.Logf}
	var offered []float64
	step := func(rate float64) (SweepPoint, error) {
		offered = append(offered, rate)
		p := SweepPoint{OfferedPerSec: rate, CommittedPerSec: min(rate, 100_000), P50Ms: 100 + rate/1000}
		switch {
		case rate > 100_000:
			p.P99Ms, p.Overloaded = 5000, true
		case rate > 80_000:
			p.P99Ms = 1500 // kept up, but outside the bound
		default:
			p.P99Ms = 200 + rate/200
		}
		return p, nil
	}
	pts, err := sweep(cfg, "fake", step)
	require.NoError(t, err)
	// 10k, 20k, 40k, 80k within; 160k overloaded ends the climb; then sqrt(80k*160k) ≈ 113k
	// (overloaded) and sqrt(80k*113k) ≈ 95k (outside the bound).
	require.Len(t, offered, 7)
	require.InDelta(t, 113_137, offered[5], 1)
	require.InDelta(t, 95_137, offered[6], 1)
	for i := 1; i < len(pts); i++ {
		require.Less(t, pts[i-1].OfferedPerSec, pts[i].OfferedPerSec, "points sorted by offered rate")
	}
	rate, at := capacity(pts, cfg.CapacityP99)
	require.Equal(t, 80_000.0, rate)
	require.Equal(t, 600.0, at.P99Ms)

	res := Result{System: "fake", RecordsPerSec: 123_456, PayloadBytesPerRec: 100}
	var halfAt float64
	require.NoError(t, applySweep(cfg, &res, pts, func(rate float64) (SweepPoint, error) { halfAt = rate; return step(rate) }))
	require.Equal(t, 80_000.0, res.RecordsPerSec, "the headline is the capacity")
	require.Equal(t, 123_456.0, res.ClosedLoopPerSec, "the closed-loop rate is kept beside it")
	require.Equal(t, 8.0, res.MBPerSec)
	require.Equal(t, 40_000.0, halfAt)
	require.Equal(t, 400.0, res.HalfLoadP99Ms)
}

// A step that commits less than it was offered did not keep up, whatever its p99 in a short
// window: it is no capacity, and a sweep whose committed rate stops rising stops.
func TestSweepStopsWhenCommittedStopsRising(t *testing.T) {
	cfg := Config{SweepStart: 10_000, SweepFactor: 2, SweepStopP99: 2 * time.Second, CapacityP99: time.Second, Log: t.Logf}
	steps := 0
	pts, err := sweep(cfg, "fake", func(rate float64) (SweepPoint, error) {
		steps++
		return SweepPoint{OfferedPerSec: rate, CommittedPerSec: min(rate, 30_000), P99Ms: 300}, nil
	})
	require.NoError(t, err)
	require.Equal(t, 4, steps, "10k, 20k, 40k (30k committed), 80k (30k again: stop)")
	rate, _ := capacity(pts, cfg.CapacityP99)
	require.Equal(t, 20_000.0, rate, "40k offered, 30k committed: a backlog, not a capacity")
}

// Latency percentiles are of records: a sample standing for many records weighs as many.
func TestLatenciesWeighRecords(t *testing.T) {
	l := &latencies{}
	l.addN(10*time.Millisecond, 98)
	l.addN(900*time.Millisecond, 1)
	l.add(2 * time.Second)
	require.Equal(t, 10.0, l.pct(50))
	require.Equal(t, 10.0, l.pct(97))
	require.Equal(t, 900.0, l.pct(99))
	require.Equal(t, 2000.0, l.pct(100))
}

// The accumulator sends a batch when it is full, when its oldest record has waited linger, or
// when the producer closes; a batch never holds more than max records.
func TestAccumulatorBatches(t *testing.T) {
	a := newAccumulator()
	stop := make(chan struct{})
	t0 := time.Now().Add(-time.Second)
	a.append(t0, 30)
	a.append(t0, 30)
	batch, n, ok := a.next(stop, 50, time.Hour)
	require.True(t, ok)
	require.Equal(t, 50, n, "full: the first 50 go at once")
	require.Equal(t, []created{{t0, 30}, {t0, 20}}, batch)
	began := time.Now()
	batch, n, ok = a.next(stop, 50, 50*time.Millisecond)
	require.True(t, ok)
	require.Equal(t, 10, n)
	require.Equal(t, []created{{t0, 10}}, batch)
	require.Less(t, time.Since(began), 40*time.Millisecond, "the remainder had already waited past linger")
	a.append(time.Now(), 5)
	began = time.Now()
	_, n, _ = a.next(stop, 50, 50*time.Millisecond)
	require.Equal(t, 5, n)
	require.GreaterOrEqual(t, time.Since(began), 40*time.Millisecond, "a young batch waits for linger")
	a.append(time.Now(), 3)
	a.close()
	_, n, ok = a.next(stop, 50, time.Hour)
	require.True(t, ok)
	require.Equal(t, 3, n, "closing sends what is left")
	_, _, ok = a.next(stop, 50, time.Hour)
	require.False(t, ok)
}

// A short window can count a few records more than were offered; a capacity is never more
// than the rate offered.
func TestCapacityNeverAboveOffered(t *testing.T) {
	rate, _ := capacity([]SweepPoint{{OfferedPerSec: 20_000, CommittedPerSec: 20_700, P99Ms: 300}}, time.Second)
	require.Equal(t, 20_000.0, rate)
}

// A batch taken but never sent (the step halted while the mempool was full) goes back to the
// front of the queue, so that it is counted with what was never sent.
func TestAccumulatorPutBack(t *testing.T) {
	a := newAccumulator()
	t0 := time.Now().Add(-time.Second)
	a.append(t0, 10)
	a.append(t0.Add(time.Millisecond), 5)
	batch, n, ok := a.next(make(chan struct{}), 10, time.Hour)
	require.True(t, ok)
	require.Equal(t, 10, n)
	a.putBack(batch)
	require.Equal(t, []created{{t0, 10}, {t0.Add(time.Millisecond), 5}}, a.left())
	_, n, _ = a.next(make(chan struct{}), 100, 0)
	require.Equal(t, 15, n, "the records put back count again")
}
