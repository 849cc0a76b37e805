package app_test

import (
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/testutil/sim"
)

// The randomized simulation of the state machine (testutil/sim): the real App driven block by
// block through FinalizeBlock and Commit with random sequences of every x/topics and x/poa
// message from ten accounts, three of them hostile, block times that make sessions expire and
// retention and compaction due; a twin App fed the same blocks; crashes before Commit and
// between Precommit and Commit, replayed; invariants after every block; an export round trip at
// the end. make test runs a short fixed seed; make sim SIM_SEED=… SIM_BLOCKS=… runs long ones.
func TestSimulation(t *testing.T) {
	seed, blocks := int64(27), 150
	if testing.Short() {
		blocks = 40
	}
	if s := os.Getenv("SIM_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		require.NoError(t, err)
		seed = v
	}
	if s := os.Getenv("SIM_BLOCKS"); s != "" {
		v, err := strconv.Atoi(s)
		require.NoError(t, err)
		blocks = v
	}
	dir := os.Getenv("SIM_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	t.Logf("simulation seed %d, %d blocks (SIM_SEED, SIM_BLOCKS); files in %s", seed, blocks, dir)
	res, err := sim.Run(sim.Config{Seed: seed, Blocks: blocks, Accounts: 10, Hostile: 3, Twin: true, CrashEvery: 25, Dir: dir,
		Logf: func(format string, args ...any) { t.Logf(format, args...) }})
	t.Logf("%s", res.Summary())
	require.NoError(t, err)
}
