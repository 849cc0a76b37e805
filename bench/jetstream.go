package bench

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bftlog/bftlog/testutil/node"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startJetStream starts `replicas` embedded nats-server processes' worth of servers (in this
// process) with file storage on loopback, clustered when replicas > 1.
func startJetStream(dir string, replicas int) ([]*server.Server, string, error) {
	ports := make([]int, replicas)
	cports := make([]int, replicas)
	for i := range ports {
		ports[i], cports[i] = freePort(), freePort()
	}
	var routes []string
	for _, p := range cports {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	var servers []*server.Server
	for i := 0; i < replicas; i++ {
		opts := &server.Options{
			ServerName: fmt.Sprintf("n%d", i), Host: "127.0.0.1", Port: ports[i],
			JetStream: true, StoreDir: fmt.Sprintf("%s/n%d", dir, i), NoLog: true, NoSigs: true,
		}
		if replicas > 1 {
			opts.Cluster = server.ClusterOpts{Name: "bench", Host: "127.0.0.1", Port: cports[i]}
			opts.Routes = server.RoutesFromStr(strings.Join(routes, ","))
		}
		s, err := server.NewServer(opts)
		if err != nil {
			return servers, "", err
		}
		go s.Start()
		servers = append(servers, s)
	}
	for _, s := range servers {
		if !s.ReadyForConnections(20 * time.Second) {
			return servers, "", fmt.Errorf("nats server not ready")
		}
	}
	return servers, fmt.Sprintf("nats://127.0.0.1:%d", ports[0]), nil
}

// jetStreamProducer is one producer's connection, publishing asynchronously with up to 4,096
// publishes awaiting their acknowledgement.
func jetStreamProducer(url string) (*nats.Conn, nats.JetStreamContext, error) {
	pc, err := nats.Connect(url)
	if err != nil {
		return nil, nil, err
	}
	pjs, err := pc.JetStream(nats.PublishAsyncMaxPending(4096))
	if err != nil {
		pc.Close()
		return nil, nil, err
	}
	return pc, pjs, nil
}

// onProducers runs f for each of n producers at once, each on a connection of its own, and
// returns the first error.
func onProducers(url string, n int, f func(p int, pjs nats.JetStreamContext) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for p := 0; p < n; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			pc, pjs, err := jetStreamProducer(url)
			if err == nil {
				defer pc.Close()
				err = f(p, pjs)
			}
			errs <- err
		}(p)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// runJetStream publishes cfg.JetRecords records asynchronously from cfg.Producers connections
// to a file-backed stream with `replicas` replicas, counting acknowledged publishes.
func runJetStream(cfg Config, replicas int) (Result, error) {
	dir, err := os.MkdirTemp("", "bftlogbench-js-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(dir)
	servers, url, err := startJetStream(dir, replicas)
	defer func() {
		for _, s := range servers {
			s.Shutdown()
		}
	}()
	if err != nil {
		return Result{}, err
	}
	nc, err := nats.Connect(url)
	if err != nil {
		return Result{}, err
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		return Result{}, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err = js.AddStream(&nats.StreamConfig{Name: "BENCH", Subjects: []string{"bench.>"}, Storage: nats.FileStorage, Replicas: replicas})
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond) // the cluster is still electing a meta leader
	}
	if err != nil {
		return Result{}, err
	}
	cfg.Log("JetStream R%d: %d records of %d B, %d producers", replicas, cfg.JetRecords, cfg.RecordBytes, cfg.Producers)
	// The servers run inside the harness: its own peak RSS (servers and clients) is the figure.
	node.ResetPeakRSS(os.Getpid())
	value := make([]byte, cfg.RecordBytes)
	lat := &latencies{}
	var acked atomic.Int64
	per := cfg.JetRecords / cfg.Producers
	cpuBefore := node.ProcCPU(os.Getpid())
	began := time.Now()
	err = onProducers(url, cfg.Producers, func(p int, pjs nats.JetStreamContext) error {
		type sent struct {
			f  nats.PubAckFuture
			at time.Time
		}
		futures := make(chan sent, 8192)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for s := range futures {
				select {
				case <-s.f.Ok():
					acked.Add(1)
					lat.add(time.Since(s.at))
				case <-s.f.Err():
				}
			}
		}()
		for i := 0; i < per; i++ {
			at := time.Now()
			f, err := pjs.PublishAsync(fmt.Sprintf("bench.%d", (i+p)%cfg.Partitions), value)
			if errors.Is(err, nats.ErrTooManyStalledMsgs) {
				// Back-pressure: let the outstanding publishes drain, then retry.
				select {
				case <-pjs.PublishAsyncComplete():
				case <-time.After(30 * time.Second):
				}
				i--
				continue
			}
			if err != nil {
				close(futures)
				return err
			}
			futures <- sent{f, at}
		}
		close(futures)
		<-done
		return nil
	})
	elapsed := time.Since(began)
	if err != nil {
		return Result{}, err
	}
	n := int(acked.Load())
	cpu := node.ProcCPU(os.Getpid()) - cpuBefore
	res := Result{
		CPUSecondsPerGB: cpu.Seconds() / (float64(n*cfg.RecordBytes) / 1e9),
		System:          fmt.Sprintf("JetStream R%d", replicas), Records: n, Seconds: elapsed.Seconds(),
		RecordsPerSec: float64(n) / elapsed.Seconds(), MBPerSec: float64(n*cfg.RecordBytes) / elapsed.Seconds() / 1e6,
		LatencyP50Ms: lat.pct(50), LatencyP95Ms: lat.pct(95), LatencyP99Ms: lat.pct(99),
		PayloadBytesPerRec: float64(cfg.RecordBytes),
		PeakRSSMiB:         []int{int(node.ProcStatus(os.Getpid(), "VmHWM") >> 20)}, PeakRSSOf: "harness process",
		Note: "embedded nats-server, file storage, async publish; CPU is the harness process's: servers and clients",
	}
	if cfg.Sweep {
		step := func(rate float64) (SweepPoint, error) { return jetStreamStep(cfg, url, rate, cfg.SweepStep) }
		pts, err := sweep(cfg, res.System, step)
		if err != nil {
			return res, err
		}
		if err := applySweep(cfg, &res, pts, step); err != nil {
			return res, err
		}
	}
	return res, nil
}

// jetStreamStep offers rate records/s in total for dur from cfg.Producers connections, each
// publishing its share asynchronously at a constant rate; a record's latency runs from when
// its publish was due to its acknowledgement, so a publish that had to wait counts.
func jetStreamStep(cfg Config, url string, rate float64, dur time.Duration) (SweepPoint, error) {
	point := SweepPoint{OfferedPerSec: rate}
	value := make([]byte, cfg.RecordBytes)
	lat := &latencies{}
	var acked, unacked atomic.Int64
	var overloaded atomic.Bool
	per := rate / float64(cfg.Producers)
	// Counted by acknowledgement time, as bftlog's by commit time.
	tr := &tracker{}
	cpuBefore := node.ProcCPU(os.Getpid())
	began := time.Now()
	window := newRateWindow(tr, began, dur)
	err := onProducers(url, cfg.Producers, func(p int, pjs nats.JetStreamContext) error {
		type sent struct {
			f   nats.PubAckFuture
			due time.Time
		}
		futures := make(chan sent, 1<<16)
		done := make(chan struct{})
		go func() {
			defer close(done)
			// Closed, not sent once: every future still waiting then is given up on.
			giveUp := make(chan struct{})
			defer time.AfterFunc(time.Until(began.Add(dur+drainWait(dur))), func() { close(giveUp) }).Stop()
			ok := func(s sent) {
				acked.Add(1)
				tr.committed.Add(1)
				lat.add(time.Since(s.due))
			}
			for s := range futures {
				select {
				case <-s.f.Ok():
					ok(s)
				case <-s.f.Err():
					unacked.Add(1)
				case <-giveUp:
					select {
					case <-s.f.Ok(): // acknowledged in time after all
						ok(s)
					default:
						unacked.Add(1)
						lat.add(time.Since(s.due))
					}
				}
			}
		}()
		defer func() { close(futures); <-done }()
		for i := 0; ; i++ {
			due := began.Add(time.Duration(float64(i) / per * float64(time.Second)))
			if due.Sub(began) >= dur {
				return nil
			}
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			} else if -d > backlogLimit {
				overloaded.Store(true)
				return nil
			}
			f, err := pjs.PublishAsync(fmt.Sprintf("bench.%d", (i+p)%cfg.Partitions), value)
			for errors.Is(err, nats.ErrTooManyStalledMsgs) && time.Since(due) < backlogLimit {
				f, err = pjs.PublishAsync(fmt.Sprintf("bench.%d", (i+p)%cfg.Partitions), value)
			}
			if errors.Is(err, nats.ErrTooManyStalledMsgs) {
				overloaded.Store(true)
				return nil
			}
			if err != nil {
				return err
			}
			futures <- sent{f, due}
		}
	})
	window.close()
	if err != nil {
		return point, err
	}
	n := acked.Load()
	cpu := node.ProcCPU(os.Getpid()) - cpuBefore
	point.Records = int(n)
	point.CommittedPerSec = window.rate()
	point.P50Ms, point.P99Ms = lat.pct(50), lat.pct(99)
	point.Overloaded = overloaded.Load() || unacked.Load() > 0
	if n > 0 {
		point.CPUSecondsPerGB = cpu.Seconds() / (float64(n*int64(cfg.RecordBytes)) / 1e9)
	}
	return point, nil
}
