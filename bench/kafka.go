package bench

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/bftlog/bftlog/app"
	"github.com/bftlog/bftlog/gateway/kafka"
	"github.com/bftlog/bftlog/testutil/node"
	"github.com/bftlog/bftlog/x/topics/types"
)

// runKafka measures an unchanged Kafka client (franz-go, idempotent, acks=all) producing through
// the gateway to one validator: the gateway coalesces the client's produce requests into
// MsgProduce transactions signed with its own key. Latency is from Produce to acknowledgement.
// With cfg.SyncCommitRecords, a consumer then reads that many of them committing after each
// one (runSyncCommits), a second result.
func runKafka(cfg Config) ([]Result, error) {
	dir, err := os.MkdirTemp("", "bftlogbench-kafka-")
	if err != nil {
		return nil, err
	}
	t := &runT{dir: dir}
	defer t.close()
	var res []Result
	err = func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%v", r)
			}
		}()
		net := node.StartNetwork(t, node.NetworkOptions{Validators: 1, Accounts: []string{"gateway"}})
		n0 := net.Nodes[0]
		conn, err := grpc.NewClient(n0.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20)))
		if err != nil {
			return err
		}
		defer conn.Close()
		cctx, signer := n0.ClientContext(n0.Home, "gateway")
		cctx = cctx.WithGRPCClient(conn)
		signer.SetFixedGas()
		signer.UseRawIngress(n0.API + app.RawTxPath)
		gw, err := kafka.Listen(kafka.Config{Addr: "127.0.0.1:0", ClientCtx: cctx, Signer: signer, Log: cfg.Log})
		if err != nil {
			return err
		}
		go func() { _ = gw.Serve() }()
		defer gw.Close()
		ctx := context.Background()
		cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr()), kgo.DefaultProduceTopic("bench"),
			kgo.ProducerLinger(cfg.Linger), kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(1<<20),
			kgo.ProducerBatchCompression(kgo.NoCompression()))
		if err != nil {
			return err
		}
		defer cl.Close()
		create := kmsg.NewPtrCreateTopicsRequest()
		create.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "bench", NumPartitions: int32(cfg.Partitions), ReplicationFactor: -1}}
		if _, err := create.RequestWith(ctx, cl); err != nil {
			return err
		}
		cfg.Log("Kafka client via gateway: %d records of %d B through franz-go", cfg.KafkaRecords, cfg.RecordBytes)
		value := make([]byte, cfg.RecordBytes)
		lat := &latencies{}
		var acked atomic.Int64
		var firstErr error
		var once sync.Once
		var wg sync.WaitGroup
		stopProfiles := profileKafka(cfg, n0)
		defer stopProfiles()
		start := time.Now()
		for i := 0; i < cfg.KafkaRecords; i++ {
			wg.Add(1)
			sent := time.Now()
			cl.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: value}, func(_ *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				acked.Add(1)
				lat.add(time.Since(sent))
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		stopProfiles()
		if firstErr != nil {
			return firstErr
		}
		if h, err := n0.Height(); err == nil {
			_ = n0.WaitForHeight(h+1, 30*time.Second)
		}
		parts, err := types.NewQueryClient(cctx).Partitions(ctx, &types.QueryPartitionsRequest{Name: "bench"})
		if err != nil {
			return err
		}
		var hwm uint64
		for _, p := range parts.Partitions {
			hwm += p.HighWatermark
		}
		if hwm != uint64(acked.Load()) {
			return fmt.Errorf("the client saw %d acknowledgements, but high watermarks add to %d", acked.Load(), hwm)
		}
		secs := elapsed.Seconds()
		res = append(res, Result{
			System: "Kafka client via gateway", Validators: 1, Records: int(acked.Load()), Seconds: secs,
			RecordsPerSec: float64(acked.Load()) / secs, MBPerSec: float64(acked.Load()*int64(cfg.RecordBytes)) / secs / 1e6,
			LatencyP50Ms: lat.pct(50), LatencyP95Ms: lat.pct(95), LatencyP99Ms: lat.pct(99),
			PayloadBytesPerRec: float64(cfg.RecordBytes),
			PeakRSSMiB:         []int{int(n0.PeakRSS() >> 20)}, PeakRSSOf: "validators",
			Note: "franz-go producer (idempotent, acks=all, no compression) through bftlogd kafka serve to one validator",
		})
		if cfg.Sweep {
			step := func(rate float64) (SweepPoint, error) { return kafkaStep(cfg, cl, rate, cfg.SweepStep) }
			pts, err := sweep(cfg, res[0].System, step)
			if err != nil {
				return err
			}
			if err := applySweep(cfg, &res[0], pts, step); err != nil {
				return err
			}
		}
		if cfg.SyncCommitRecords <= 0 {
			return nil
		}
		r, err := runSyncCommits(cfg, gw.Addr(), "bench", min(cfg.SyncCommitRecords, int(hwm)))
		if err != nil {
			return fmt.Errorf("synchronous commits: %w", err)
		}
		// Every answered commit lands: the chain's offsets of the group add up to what was read.
		deadline := time.Now().Add(30 * time.Second)
		for {
			offs, err := types.NewQueryClient(cctx).GroupOffsets(ctx, &types.QueryGroupOffsetsRequest{GroupId: syncCommitGroup})
			var sum uint64
			if err == nil {
				for _, o := range offs.Offsets {
					sum += o.Committed.Offset
				}
			}
			if sum == uint64(r.Records) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("read %d records committing each, but the chain's offsets of the group add to %d (%v)", r.Records, sum, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
		res = append(res, r)
		return nil
	}()
	return res, err
}

// kafkaStep offers rate records/s for dur through the franz-go client: one goroutine hands
// records to Produce at a constant rate (Produce blocks when the client's buffer is full, and
// that wait counts: a record's latency runs from when it was due to its acknowledgement).
func kafkaStep(cfg Config, cl *kgo.Client, rate float64, dur time.Duration) (SweepPoint, error) {
	point := SweepPoint{OfferedPerSec: rate}
	value := make([]byte, cfg.RecordBytes)
	lat := &latencies{}
	tr := &tracker{}
	var failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), dur+drainWait(dur))
	defer cancel()
	overloaded := false
	began := time.Now()
	window := newRateWindow(tr, began, dur)
	for i := 0; ; i++ {
		due := began.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		if due.Sub(began) >= dur {
			break
		}
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		} else if -d > backlogLimit {
			overloaded = true
			break
		}
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: value}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			lat.add(time.Since(due))
			if err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err)
				return
			}
			tr.committed.Add(1)
		})
	}
	wg.Wait()
	window.close()
	if e, _ := firstErr.Load().(error); e != nil && ctx.Err() == nil {
		return point, e
	}
	point.Records = int(tr.committed.Load())
	point.CommittedPerSec = window.rate()
	point.P50Ms, point.P99Ms = lat.pct(50), lat.pct(99)
	point.Overloaded = overloaded || failed.Load() > 0
	return point, nil
}
