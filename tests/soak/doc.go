// Package soak is the long run under random faults (make soak): four validator processes,
// producers and a consumer group at a steady rate while a seeded nemesis kills, pauses,
// partitions and restarts nodes and starts a double-signing twin, then a check of the whole
// history. The suite is built only with -tags soak, so go test ./... does not run it.
package soak
