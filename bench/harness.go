// Package bench measures bftlog against its peers in one run on one machine: bftlog with
// batched produce, the same chain with one record per transaction, an unchanged Kafka client
// through the gateway, and NATS JetStream (R1 and R3). Only committed records count: bftlog's from the committed blocks' transaction results,
// JetStream's from publish acknowledgements.
package bench

import (
	"fmt"
	"os"
	"sort"
	"sync"
	"time"
)

// Config is one harness run.
type Config struct {
	Validators    []int         // networks to measure, e.g. 1 and 4
	Records       int           // records per bftlog run
	RecordBytes   int           // value size
	Partitions    int           // topic partitions
	Producers     int           // concurrent producer accounts
	BatchRecords  int           // records per MsgProduce (the producer's batch.size, in records)
	Linger        time.Duration // how long a producer waits to fill a batch
	InFlight      int           // transactions in flight per producer
	PeerInFlight  int           // transactions in flight per producer for the one-record-per-tx peer
	PeerProducers int           // producer accounts for the one-record-per-tx peer (signing is per account and sequential)
	PeerDuration  time.Duration // cap for the one-record-per-tx peer
	PeerRecords   int           // records for the one-record-per-tx peer (capped by PeerDuration)
	JetStream     bool          // run the JetStream peers
	JetRecords    int           // records for JetStream runs (default Records)
	HalfLoad      bool          // also measure latency at half the peak rate
	FetchRecords  int           // records per fetch request when measuring fetch
	KafkaRecords  int           // records for the Kafka-client-through-the-gateway run (0: skip)
	OutDir        string
	Log           func(format string, args ...any) `json:"-"`
}

// Result is one measured system.
type Result struct {
	System          string  `json:"system"`
	Validators      int     `json:"validators,omitempty"`
	Records         int     `json:"records_committed"`
	Seconds         float64 `json:"seconds"`
	RecordsPerSec   float64 `json:"records_per_sec"`
	MBPerSec        float64 `json:"mb_per_sec"`
	LatencyP50Ms    float64 `json:"latency_p50_ms"`
	LatencyP95Ms    float64 `json:"latency_p95_ms"`
	LatencyP99Ms    float64 `json:"latency_p99_ms"`
	HalfLoadP99Ms   float64 `json:"half_load_p99_ms,omitempty"`
	FetchPerSec     float64 `json:"fetch_records_per_sec,omitempty"`
	DiskBytesPerRec float64 `json:"disk_bytes_per_record,omitempty"`
	PeakRSSMiB      []int   `json:"peak_rss_mib,omitempty"`
	Note            string  `json:"note,omitempty"`
}

// Report is a whole run.
type Report struct {
	Time    string   `json:"time"`
	Machine string   `json:"machine"`
	Config  Config   `json:"config"`
	Results []Result `json:"results"`
}

// latencies collects samples safely.
type latencies struct {
	mu sync.Mutex
	ms []float64
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.ms = append(l.ms, float64(d.Microseconds())/1000)
	l.mu.Unlock()
}

func (l *latencies) pct(p float64) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ms) == 0 {
		return 0
	}
	sort.Float64s(l.ms)
	i := int(p / 100 * float64(len(l.ms)-1))
	return l.ms[i]
}

// Run runs every configured measurement and returns the report.
func Run(cfg Config) (*Report, error) {
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	if cfg.JetRecords == 0 {
		cfg.JetRecords = cfg.Records
	}
	host, _ := os.Hostname()
	rep := &Report{Time: time.Now().UTC().Format(time.RFC3339), Machine: fmt.Sprintf("%s, %d CPUs", host, numCPU()), Config: cfg}
	for _, n := range cfg.Validators {
		r, peer, err := runChain(cfg, n)
		if err != nil {
			return rep, fmt.Errorf("bftlog with %d validators: %w", n, err)
		}
		rep.Results = append(rep.Results, r)
		if peer != nil {
			rep.Results = append(rep.Results, *peer)
		}
	}
	if cfg.KafkaRecords > 0 {
		r, err := runKafka(cfg)
		if err != nil {
			return rep, fmt.Errorf("kafka client via gateway: %w", err)
		}
		rep.Results = append(rep.Results, r)
	}
	if cfg.JetStream {
		for _, replicas := range []int{1, 3} {
			r, err := runJetStream(cfg, replicas)
			if err != nil {
				return rep, fmt.Errorf("jetstream R%d: %w", replicas, err)
			}
			rep.Results = append(rep.Results, r)
		}
	}
	return rep, nil
}
