package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bftlog/bftlog/testutil/node"
	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// measure is one measured load on topic: `records` records from cfg.Producers producers as
// fast as they go (for at most dur, unless 0), cross-checked against the high watermarks;
// optionally latency at half that rate (half the records, at most dur/2); then a read of the
// whole topic. Peak RSS is each validator's over these phases.
func (c *chain) measure(cfg Config, topic string, wl workload, records int, dur time.Duration, halfLoad bool) (Result, error) {
	ctx := context.Background()
	within := func(d time.Duration) (context.Context, context.CancelFunc) {
		if dur == 0 {
			return context.WithCancel(ctx)
		}
		return context.WithTimeout(ctx, d)
	}
	c.resetPeakRSS()
	producers := c.signers[:cfg.Producers]
	build := wl.builder(topic, cfg.Partitions)
	before, _, err := c.logSize(ctx, topic)
	if err != nil {
		return Result{}, err
	}
	heap := c.profile(cfg, topic+"-"+wl.compression.String())
	steps := c.consensusTimings()
	cpu := c.cpuTimes()
	lctx, cancel := within(dur)
	tr, elapsed, err := load(lctx, cfg, c, producers, build, records, cfg.BatchRecords, cfg.InFlight)
	cancel()
	cfg.Log("  %s", steps())
	nodeCPU, harnessCPU := cpu()
	heap()
	if err != nil {
		return Result{}, err
	}
	committed := int(tr.committed.Load())
	// Cross-check against chain state: the high watermarks must add up.
	c.waitCommitted()
	hwm, _, err := c.logSize(ctx, topic)
	if err != nil {
		return Result{}, err
	}
	if hwm-before != uint64(committed) {
		return Result{}, fmt.Errorf("committed %d records by block results, but high watermarks grew by %d", committed, hwm-before)
	}
	secs := elapsed.Seconds()
	cfg.Log("  CPU: validators %.1f s (%.1f µs per record), this harness %.1f s (%.1f µs per record)", nodeCPU.Seconds(),
		float64(nodeCPU.Microseconds())/float64(committed), harnessCPU.Seconds(), float64(harnessCPU.Microseconds())/float64(committed))
	res := Result{
		Records: committed, Seconds: secs,
		NodeCPUMicrosPerRec: float64(nodeCPU.Microseconds()) / float64(committed),
		CPUSecondsPerGB:     nodeCPU.Seconds() / (float64(tr.payload.Load()) / 1e9),
		RecordsPerSec:       float64(committed) / secs, MBPerSec: float64(tr.payload.Load()) / secs / 1e6,
		LatencyP50Ms: tr.lat.pct(50), LatencyP95Ms: tr.lat.pct(95), LatencyP99Ms: tr.lat.pct(99),
		PayloadBytesPerRec: float64(tr.payload.Load()) / float64(committed),
	}
	blocks := tr.blockStats()
	res.Blocks, res.LaterRoundBlocks, res.AbsentPrecommits, res.EmptyBlocks = blocks.count, blocks.laterRounds, blocks.absent, blocks.empty
	res.BlockIntervalMs = float64(blocks.interval().Microseconds()) / 1000
	if halfLoad {
		// Half the rate, offered by open-loop producers (bench/openloop.go) for as long as the
		// full-speed load took (5–30 s).
		halfDur := min(max(elapsed, 5*time.Second), 30*time.Second)
		if dur > 0 {
			halfDur = dur / 2
		}
		cfg.Log("  latency at half load (%.0f records/s for %s)", res.RecordsPerSec/2, halfDur)
		half, err := c.openLoad(cfg, producers, build, res.RecordsPerSec/2, halfDur, halfDur)
		if err != nil {
			return Result{}, err
		}
		res.HalfLoadP50Ms, res.HalfLoadP99Ms = half.P50Ms, half.P99Ms
	}
	// Producers submit to node 0; the others get their transactions by mempool gossip, and a
	// transaction CheckTx refuses there (its account's previous one not yet arrived) is not
	// sent again.
	cfg.Log("  mempools: %s", c.mempoolRefusals())
	if nt, ct, nb, cb, ok := c.proposed(); ok && nb+cb > 0 {
		res.CarriedWholeShare = cb / (nb + cb)
		cfg.Log("  proposals since the chain started: %.0f transactions named (%.1f MB), %.0f carried whole (%.1f MB, %.1f%% of the bytes)",
			nt, nb/1e6, ct, cb/1e6, 100*res.CarriedWholeShare)
	}
	if res.FetchPerSec, err = c.measureFetch(ctx, cfg, topic); err != nil {
		return Result{}, err
	}
	res.PeakRSSMiB = c.peakRSS()
	res.PeakRSSOf = "validators"
	return res, nil
}

// runChain measures bftlog on n validators, then the one-record-per-tx design on the same chain.
// With a baseline commit the validators run that commit's bftlogd instead, and the peer is
// skipped: the row is the "before" of a change measured in the same run.
func runChain(cfg Config, n int, baseline string) (res Result, extra []Result, err error) {
	err = inTempDir("bftlogbench-", func(t *runT) error {
		opts := node.NetworkOptions{Validators: n}
		if baseline != "" {
			bin, ok := node.BinaryAt(t, baseline, "baseline")
			if !ok {
				return fmt.Errorf("-baseline %s: no such commit", baseline)
			}
			opts.Binary, cfg.PeerRecords = bin, 0
			if cfg.BaselineByDigest {
				opts.Ordering = node.OrderingByDigest
			}
		} else {
			opts.Ordering = cfg.ordering()
		}
		c, err := startNetwork(t, cfg, opts, max(cfg.Producers, cfg.PeerProducers))
		if err != nil {
			return err
		}
		if err := c.createTopic("bench", cfg.Partitions); err != nil {
			return err
		}
		cfg.Log("bftlog N=%d: %d records of %d B, %d producers, %d records per tx", n, cfg.Records, cfg.RecordBytes, cfg.Producers, cfg.BatchRecords)
		if res, err = c.measure(cfg, "bench", randomValues(cfg), cfg.Records, 0, cfg.HalfLoad && !cfg.Sweep); err != nil {
			return err
		}
		res.System, res.Validators = "bftlog", n
		if baseline != "" {
			res.System = "bftlog @" + baseline
			if cfg.BaselineByDigest {
				res.System += " by digest"
			}
		} else if cfg.OrderByDigest {
			res.System = "bftlog by digest"
		}
		// Disk per record before the peer runs: its one-record transactions cost far more
		// block store per record and would blur the batched figure.
		total, stored, err := c.logSize(context.Background(), "bench")
		if err != nil {
			return err
		}
		res.DiskBytesPerRec, res.DiskBreakdown = c.diskPerRecord(cfg, total)
		res.LogBytesPerRec = float64(stored) / float64(total)
		if cfg.Sweep {
			build := randomValues(cfg).builder("bench", cfg.Partitions)
			step := func(rate float64) (SweepPoint, error) {
				return c.openLoad(cfg, c.signers[:cfg.Producers], build, rate, cfg.SweepStep, backlogLimit)
			}
			cfg.Log("%s N=%d: offered-load sweep, %s per step, %d producers with linger %s and %d transactions in flight each", res.System, n, cfg.SweepStep, cfg.Producers, cfg.Linger, cfg.InFlight)
			pts, err := sweep(cfg, fmt.Sprintf("%s N=%d", res.System, n), step)
			if err != nil {
				return err
			}
			// With -profile-dir, the validators' profiles at half the capacity too: the load
			// the latency targets are set at.
			half := func(rate float64) (SweepPoint, error) {
				heap := c.profile(cfg, "half-capacity")
				defer heap()
				return step(rate)
			}
			if err := applySweep(cfg, &res, pts, half); err != nil {
				return err
			}
		}
		if cfg.PeerRecords > 0 {
			cfg.Log("one record per tx on N=%d: up to %d records or %s", n, cfg.PeerRecords, cfg.PeerDuration)
			c.resetPeakRSS()
			pctx, cancel := context.WithTimeout(context.Background(), cfg.PeerDuration)
			build := randomValues(cfg).builder("bench", cfg.Partitions)
			ptr, pel, err := load(pctx, cfg, c, c.signers[:max(1, cfg.PeerProducers)], build, cfg.PeerRecords, 1, cfg.PeerInFlight)
			cancel()
			note := "the seed design: same chain, one MsgProduce with one record per transaction"
			var failed *failedInBlocksError
			if errors.As(err, &failed) {
				// Only committed records count; the failed ones are said, not counted.
				cfg.Log("  %v", err)
				note += fmt.Sprintf("; %d records failed in their blocks (not counted)", failed.records)
			} else if err != nil {
				return err
			}
			pc := int(ptr.committed.Load())
			extra = append(extra, Result{
				System: "one record per tx", Validators: n, Records: pc, Seconds: pel.Seconds(),
				RecordsPerSec: float64(pc) / pel.Seconds(), MBPerSec: float64(ptr.payload.Load()) / pel.Seconds() / 1e6,
				LatencyP50Ms: ptr.lat.pct(50), LatencyP95Ms: ptr.lat.pct(95), LatencyP99Ms: ptr.lat.pct(99),
				PayloadBytesPerRec: float64(cfg.RecordBytes), PeakRSSMiB: c.peakRSS(), PeakRSSOf: "validators",
				Note: note,
			})
		}
		if cfg.PauseSeconds > 0 && n >= 4 && baseline == "" {
			cfg.Log("one of %d validators paused under half load", n)
			rate := res.RecordsPerSec / 2
			if rate == 0 { // no step of the sweep within the bound
				rate = res.ClosedLoopPerSec / 2
			}
			pause, err := c.measurePause(cfg, randomValues(cfg), "bench", rate)
			if err != nil {
				return err
			}
			extra = append(extra, pause)
		}
		return nil
	})
	return res, extra, err
}

// runEvents measures JSON event records compressed by the producer with codec on a fresh
// one-validator chain, so that its data directory holds only them: disk bytes per record
// against payload bytes per record is what compression saves end to end.
func runEvents(cfg Config, codec kbatch.Compression) (res Result, err error) {
	err = inTempDir("bftlogbench-events-", func(t *runT) error {
		c, err := startChain(t, cfg, 1, cfg.Producers)
		if err != nil {
			return err
		}
		if err := c.createTopic("events", cfg.Partitions); err != nil {
			return err
		}
		wl := workload{values: eventValues(10_000, 1), compression: codec}
		cfg.Log("bftlog events (%s): %d JSON records, %d producers, %d records per tx", codec, cfg.EventsRecords, cfg.Producers, cfg.BatchRecords)
		if res, err = c.measure(cfg, "events", wl, cfg.EventsRecords, 0, false); err != nil {
			return err
		}
		res.System, res.Validators = "bftlog events "+codec.String(), 1
		total, stored, err := c.logSize(context.Background(), "events")
		if err != nil {
			return err
		}
		res.DiskBytesPerRec, res.DiskBreakdown = c.diskPerRecord(cfg, total)
		res.LogBytesPerRec = float64(stored) / float64(total)
		res.Note = fmt.Sprintf("JSON events of about 240 B, producer compression %s", codec)
		return nil
	})
	return res, err
}

// measureFetch reads the whole topic from one node through gRPC queries as a consumer does:
// stored batches (FETCH_FORMAT_BATCHES), decoded here, the client.
func (c *chain) measureFetch(ctx context.Context, cfg Config, topic string) (float64, error) {
	q := types.NewQueryClient(c.cctxs[0])
	parts, err := q.Partitions(ctx, &types.QueryPartitionsRequest{Name: topic})
	if err != nil {
		return 0, err
	}
	began := time.Now()
	var got, want uint64
	for _, p := range parts.Partitions {
		want += p.HighWatermark - p.LogStartOffset
		for off := p.LogStartOffset; off < p.HighWatermark; {
			res, err := q.Fetch(ctx, &types.QueryFetchRequest{Topic: topic, Partition: p.Partition, Offset: off,
				MaxRecords: uint32(cfg.FetchRecords), Format: types.FETCH_FORMAT_BATCHES})
			if err != nil {
				return 0, err
			}
			for _, b := range res.Batches {
				recs, err := b.Records()
				if err != nil {
					return 0, err
				}
				// The first batch may start before the offset asked for, as in Kafka, and the
				// last may hold records committed after the partitions were read.
				for _, r := range recs {
					if r.Offset >= off && r.Offset < p.HighWatermark {
						got++
					}
				}
			}
			if res.NextOffset <= off {
				return 0, fmt.Errorf("fetch of %s/%d at offset %d made no progress", topic, p.Partition, off)
			}
			off = res.NextOffset
		}
	}
	if got != want {
		return 0, fmt.Errorf("fetched %d records of %s, the partitions hold %d", got, topic, want)
	}
	return float64(got) / time.Since(began).Seconds(), nil
}
