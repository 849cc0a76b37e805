package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	syncCommitGroup  = "bench-sync-commits"
	syncCommitSystem = "Kafka sync-commit consumer"
)

// runSyncCommits measures a Kafka consumer that commits synchronously after every record, as
// many services do (franz-go's CommitRecords, kafka-go's Reader without a commit interval):
// each commit is one transaction, answered by the gateway once admitted. It reads count of the
// records already in topic; the rate counts from the first record on, so the group's join (the
// chain's initial rebalance delay and a few blocks) is measured apart, as a one-time cost.
// Latency is from CommitRecords to its answer.
func runSyncCommits(cfg Config, gateway, topic string, count int) (Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(gateway), kgo.ConsumerGroup(syncCommitGroup), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return Result{}, err
	}
	defer cl.Close()
	cfg.Log("Kafka consumer via gateway: %d records, a synchronous commit after each", count)
	lat := &latencies{}
	start := time.Now()
	var joined time.Time
	got := 0
	for got < count {
		fs := cl.PollRecords(ctx, count-got)
		if err := ctx.Err(); err != nil {
			return Result{}, fmt.Errorf("after %d records: %w", got, err)
		}
		// franz-go reports group errors (a failed join or heartbeat) in the poll and retries them.
		for _, e := range fs.Errors() {
			cfg.Log("sync-commit consumer: %s/%d: %v", e.Topic, e.Partition, e.Err)
		}
		for _, r := range fs.Records() {
			if joined.IsZero() {
				joined = time.Now()
			}
			sent := time.Now()
			if err := cl.CommitRecords(ctx, r); err != nil {
				return Result{}, fmt.Errorf("commit of record %d: %w", got, err)
			}
			lat.add(time.Since(sent))
			got++
		}
	}
	reading := time.Since(joined).Seconds()
	return Result{
		System: syncCommitSystem, Validators: 1, Records: got, Seconds: reading,
		RecordsPerSec: float64(got) / reading,
		LatencyP50Ms:  lat.pct(50), LatencyP95Ms: lat.pct(95), LatencyP99Ms: lat.pct(99),
		Note: fmt.Sprintf("franz-go group consumer committing after each record through bftlogd kafka serve, latency per commit; records/s from the first record on; joining the group and the first fetch took %.1f s before it",
			joined.Sub(start).Seconds()),
	}, nil
}
