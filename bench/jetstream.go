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
	var wg sync.WaitGroup
	errs := make(chan error, cfg.Producers)
	for p := 0; p < cfg.Producers; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			pc, err := nats.Connect(url)
			if err != nil {
				errs <- err
				return
			}
			defer pc.Close()
			pjs, err := pc.JetStream(nats.PublishAsyncMaxPending(4096))
			if err != nil {
				errs <- err
				return
			}
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
					errs <- err
					break
				}
				futures <- sent{f, at}
			}
			close(futures)
			<-done
		}(p)
	}
	wg.Wait()
	elapsed := time.Since(began)
	close(errs)
	for err := range errs {
		if err != nil {
			return Result{}, err
		}
	}
	n := int(acked.Load())
	cpu := node.ProcCPU(os.Getpid()) - cpuBefore
	return Result{
		CPUSecondsPerGB: cpu.Seconds() / (float64(n*cfg.RecordBytes) / 1e9),
		System:          fmt.Sprintf("JetStream R%d", replicas), Records: n, Seconds: elapsed.Seconds(),
		RecordsPerSec: float64(n) / elapsed.Seconds(), MBPerSec: float64(n*cfg.RecordBytes) / elapsed.Seconds() / 1e6,
		LatencyP50Ms: lat.pct(50), LatencyP95Ms: lat.pct(95), LatencyP99Ms: lat.pct(99),
		PayloadBytesPerRec: float64(cfg.RecordBytes),
		PeakRSSMiB:         []int{int(node.ProcStatus(os.Getpid(), "VmHWM") >> 20)}, PeakRSSOf: "harness process",
		Note: "embedded nats-server, file storage, async publish; CPU is the harness process's: servers and clients",
	}, nil
}
