//go:build race

package keeper_test

// raceEnabled: the race detector is on, so allocation figures are not the build's (its
// instrumentation allocates, and sync.Pool drops pooled objects at random).
const raceEnabled = true
