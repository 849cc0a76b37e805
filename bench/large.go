package bench

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/bftlog/bftlog/testutil/node"
	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// RunLarge measures whether a node slows down or grows as its log grows: on one validator it
// runs the measured load of `make bench` (cfg.Records; half load and fetch as configured) on
// the empty chain, fills the chain with cfg.LargeBytes of log as fast as it takes them, then
// runs the same measured load again on a new topic of that node.
func RunLarge(cfg Config) (*Report, error) {
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	rep := newReport(cfg, "large")
	err := inTempDir("bftlogbench-large-", func(t *runT) error {
		c, err := startChain(t, cfg, 1, max(cfg.Producers, cfg.FillProducers))
		if err != nil {
			return err
		}
		measured := func(topic, system string) (Result, error) {
			if err := c.createTopic(topic, cfg.Partitions); err != nil {
				return Result{}, err
			}
			cfg.Log("%s: %d records of %d B, %d producers, %d records per tx", system, cfg.Records, cfg.RecordBytes, cfg.Producers, cfg.BatchRecords)
			res, err := c.measure(cfg, topic, randomValues(cfg), cfg.Records, 0, cfg.HalfLoad)
			res.System, res.Validators = system, 1
			return res, err
		}
		empty, err := measured("bench", "bftlog, empty chain")
		if err != nil {
			return err
		}
		rep.Results = append(rep.Results, empty)

		if err := c.createTopic("fill", cfg.Partitions); err != nil {
			return err
		}
		filled, err := c.fill(cfg, "fill")
		if err != nil {
			return err
		}
		large, err := measured("bench-large", fmt.Sprintf("bftlog, %.1f GB log", float64(filled)/1e9))
		if err != nil {
			return err
		}
		large.LogBytesBefore = filled
		large.DataDirBytes = c.n0.DataBytes()
		rep.Results = append(rep.Results, large)
		return nil
	})
	return rep, err
}

// fill appends incompressible records to topic until its stored bytes reach cfg.LargeBytes:
// cfg.FillProducers accounts, each transaction as large as the module allows (batches of
// cfg.FillBatchBytes, cfg.FillBatchesPerTx of them on different partitions). The batches are
// encoded once up front: filling is not what is measured. It prints progress every 10 s and
// returns the stored bytes reached.
func (c *chain) fill(cfg Config, topic string) (uint64, error) {
	const valueBytes = 1000
	perBatch := max(1, cfg.FillBatchBytes/(valueBytes+16))
	pool := make([]types.ProduceBatch, 8)
	for i := range pool {
		recs := make([]types.BatchRecord, perBatch)
		for j := range recs {
			v := make([]byte, valueBytes)
			_, _ = rand.Read(v)
			recs[j] = types.BatchRecord{Value: &types.Bytes{Data: v}, CreateTimeMs: time.Now().UnixMilli()}
		}
		b, err := types.NewProduceBatch(topic, 0, recs, kbatch.CompressionNone)
		if err != nil {
			return 0, err
		}
		pool[i] = b
	}
	perTx := max(1, min(cfg.FillBatchesPerTx, cfg.Partitions))
	build := func(producer string, pi, next, _ int, _ time.Time) (*types.MsgProduce, int, int64, error) {
		msg := &types.MsgProduce{Producer: producer}
		k := next / (perTx * perBatch) // this producer's message number
		var n int
		var payload int64
		for j := 0; j < perTx; j++ {
			b := pool[(k+j+pi)%len(pool)]
			b.Partition = uint32((pi*perTx + k + j) % cfg.Partitions)
			msg.Batches = append(msg.Batches, b)
			n += int(b.RecordCount)
			payload += int64(b.RecordCount) * valueBytes
		}
		return msg, n, payload, nil
	}

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	target := cfg.LargeBytes
	cfg.Log("filling topic %q to %.2f GB: %d producers, %d × %.2f MB batches per tx", topic, float64(target)/1e9,
		cfg.FillProducers, perTx, float64(pool[0].Size())/1e6)
	began := time.Now()
	watchErr := make(chan error, 1)
	go func() {
		var werr error
		defer func() { watchErr <- werr }()
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		lastLog := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			_, stored, err := c.logSize(ctx, topic)
			if err != nil {
				if ctx.Err() == nil {
					werr = err
					stop()
				}
				return
			}
			if stored >= target {
				stop()
			}
			if time.Since(lastLog) >= 10*time.Second || stored >= target {
				lastLog = time.Now()
				secs := time.Since(began).Seconds()
				pid := c.n0.Pid()
				cfg.Log("  filled %.2f / %.2f GB of log (%.1f MB/s), data dir %.2f GB, node RSS %d MiB (peak %d MiB)",
					float64(stored)/1e9, float64(target)/1e9, float64(stored)/secs/1e6, float64(c.n0.DataBytes())/1e9,
					node.ProcStatus(pid, "VmRSS")>>20, node.ProcStatus(pid, "VmHWM")>>20)
			}
		}
	}()
	// Producers stop when the watcher cancels ctx; load then waits for what is in flight.
	producers := c.signers[:cfg.FillProducers]
	_, _, err := load(ctx, cfg, c, producers, build, 1<<40, perTx*perBatch, cfg.FillInFlight)
	stop()
	if werr := <-watchErr; werr != nil {
		return 0, werr
	}
	if err != nil {
		return 0, fmt.Errorf("filling: %w", err)
	}
	c.waitCommitted()
	_, reached, err := c.logSize(context.Background(), topic)
	if err != nil {
		return 0, err
	}
	secs := time.Since(began).Seconds()
	cfg.Log("filled %.2f GB of log in %.0f s (%.1f MB/s); data dir %.2f GB", float64(reached)/1e9, secs, float64(reached)/secs/1e6, float64(c.n0.DataBytes())/1e9)
	if reached < target {
		return reached, fmt.Errorf("filled only %d of %d bytes", reached, target)
	}
	return reached, nil
}
