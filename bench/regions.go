package bench

import (
	"fmt"
	"os"
	"time"

	"github.com/bftlog/bftlog/testutil/node"
)

// blockTiming is the CometBFT consensus timeouts (config.toml [consensus]) a network runs with.
type blockTiming struct {
	Propose time.Duration // timeout_propose
	Vote    time.Duration // timeout_prevote and timeout_precommit
	Commit  time.Duration // timeout_commit
}

func (b blockTiming) String() string {
	return fmt.Sprintf("commit %s, propose %s, prevote/precommit %s", b.Commit, b.Propose, b.Vote)
}

// regionTiming is the block timing recommended for validators rtt apart (docs/performance.md).
// timeout_propose stays at bftlogd's 3 s: at 100 ms RTT and peak load a proposal of several
// megabytes took 1.3-1.9 s to arrive and be checked here, and the timeout costs time only when
// a proposer is down. The vote timeouts wait for the last votes once two thirds have come, so
// they grow by the round trip. timeout_commit stays at 200 ms up to a 200 ms round trip: in
// CometBFT 0.38 it runs from the commit, so the block's execution (0.7-0.8 s a height at peak)
// hides it, and at 100 ms RTT 50 ms, 200 ms and 1 s measured the same records/s and half-load
// p99 within noise (1 s the worst); it must only outlast the one-way delay to the farthest
// validator, whose precommit would otherwise miss the next block's last commit.
func regionTiming(rtt time.Duration) blockTiming {
	return blockTiming{Propose: 3 * time.Second, Vote: 300*time.Millisecond + rtt, Commit: max(200*time.Millisecond, rtt)}
}

// withEnv runs f with the timing in the environment of the processes it starts: bftlogd reads
// BFTLOGD_CONSENSUS_TIMEOUT_COMMIT and the like over its config.toml (the SDK binds the
// environment, prefixed with the binary's name, to every configuration key), so the nodes'
// homes are left as `bftlogd init` writes them.
func (b blockTiming) withEnv(f func() error) error {
	vars := map[string]time.Duration{
		"BFTLOGD_CONSENSUS_TIMEOUT_PROPOSE":   b.Propose,
		"BFTLOGD_CONSENSUS_TIMEOUT_PREVOTE":   b.Vote,
		"BFTLOGD_CONSENSUS_TIMEOUT_PRECOMMIT": b.Vote,
		"BFTLOGD_CONSENSUS_TIMEOUT_COMMIT":    b.Commit,
	}
	for k, v := range vars {
		old, had := os.LookupEnv(k)
		if err := os.Setenv(k, v.String()); err != nil {
			return err
		}
		defer func() {
			if had {
				_ = os.Setenv(k, old)
			} else {
				_ = os.Unsetenv(k)
			}
		}()
	}
	return f()
}

// RunRegions measures cfg.RegionValidators validators as in different data centres: every peer
// connection goes through its own proxy that delays each direction by half the round-trip
// time, for each of cfg.RegionRTTs in turn on a fresh network with regionTiming's block timing.
// Each runs the measured load of `make bench` for cfg.RegionDuration (half load for half that).
func RunRegions(cfg Config) (*Report, error) {
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	rep := newReport(cfg, "regions")
	for _, rtt := range cfg.RegionRTTs {
		r, err := runRegion(cfg, rtt)
		if err != nil {
			return rep, fmt.Errorf("bftlog at %s round trip: %w", rtt, err)
		}
		rep.Results = append(rep.Results, r)
	}
	return rep, nil
}

func runRegion(cfg Config, rtt time.Duration) (res Result, err error) {
	timing := regionTiming(rtt)
	err = inTempDir("bftlogbench-regions-", func(t *runT) error {
		var c *chain
		opts := node.NetworkOptions{Validators: cfg.RegionValidators, Proxied: true}
		if err := timing.withEnv(func() (err error) {
			c, err = startNetwork(t, cfg, opts, cfg.Producers)
			return err
		}); err != nil {
			return err
		}
		c.net.SetDelay(rtt / 2)
		if err := c.createTopic("bench", cfg.Partitions); err != nil {
			return err
		}
		cfg.Log("bftlog N=%d, %s round trip between validators, %s: %s of %d B records, %d producers, %d records per tx",
			cfg.RegionValidators, rtt, timing, cfg.RegionDuration, cfg.RecordBytes, cfg.Producers, cfg.BatchRecords)
		// The duration, not a record count, ends each load.
		if res, err = c.measure(cfg, "bench", randomValues(cfg), 1<<40, cfg.RegionDuration, cfg.HalfLoad); err != nil {
			return err
		}
		res.System, res.Validators = fmt.Sprintf("bftlog, %d ms RTT", rtt.Milliseconds()), cfg.RegionValidators
		res.RTTMs, res.BlockTiming = float64(rtt.Microseconds())/1000, timing.String()
		return nil
	})
	return res, err
}
