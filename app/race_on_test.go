//go:build race

package app_test

// raceDetector says the test binary runs with -race.
const raceDetector = true
