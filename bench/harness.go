// Package bench measures bftlog against its peers in one run on one machine: bftlog with
// batched produce on 1, 4 and 7 validators, JSON event records compressed by the producer,
// the same chain with one record per transaction, an unchanged Kafka client through the
// gateway, and NATS JetStream (R1 and R3); RunLarge compares one validator empty and holding
// gigabytes of log. Only committed records count: bftlog's from the committed blocks'
// transaction results, JetStream's from publish acknowledgements.
package bench

import (
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/bftlog/bftlog/testutil/node"
	"github.com/bftlog/bftlog/x/topics/kbatch"
)

// Config is one harness run.
type Config struct {
	Validators []int // networks to measure, e.g. 1 and 4
	// PauseSeconds > 0 adds the fault row on every network of 4 or more validators: half load
	// for PauseSeconds, then as long with one validator paused (bench/pause.go).
	PauseSeconds int
	// Baseline is a git commit whose bftlogd is measured first on the same networks, so that
	// a change's before and after come from one run (rows "bftlog @<commit>").
	Baseline string
	// BaselineByDigest runs the baseline's validators with ordering.by-digest on too (a commit
	// that has it), so a change to ordering by digest has its before in the same run.
	BaselineByDigest bool
	// OrderByDigest runs this tree's validators with ordering.by-digest on (app/ordering.go),
	// bftlogd's default: blocks name the record batches the validators hold instead of
	// carrying them. Off, they carry them. It holds for every chain of the run but -baseline's
	// (the Kafka, events and large-log runs too).
	OrderByDigest bool
	// The offered-load sweep (bench/sweep.go), on every system but the large-log and regions
	// runs: constant rates from SweepStart, SweepFactor apart, each offered for SweepStep, until
	// the committed rate stops rising or p99 passes SweepStopP99, then SweepRefine narrower
	// steps; a system's capacity (its records_per_sec) is the highest committed rate whose p99
	// stayed within CapacityP99.
	Sweep         bool
	SweepStart    float64
	SweepFactor   float64
	SweepStep     time.Duration
	SweepStopP99  time.Duration
	SweepRefine   int
	SweepMax      float64       // no step offers more (0: no limit)
	SweepSettle   time.Duration // pause after a step that did not keep up, and before the half-load step
	CapacityP99   time.Duration
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
	// SyncCommitRecords of those the Kafka run's records are then read by a consumer that
	// commits synchronously after each (0: skip).
	SyncCommitRecords int
	// EventsRecords JSON event records (about 240 B each) per codec of EventsCodecs, each on
	// a fresh one-validator chain, compressed by the producer (0: skip).
	EventsRecords int
	EventsCodecs  []string // Kafka codec names: none, gzip, snappy, lz4, zstd
	// The large-log run (RunLarge): fill one validator with LargeBytes of log, using
	// FillProducers accounts with FillInFlight transactions each, FillBatchesPerTx batches of
	// about FillBatchBytes per transaction.
	LargeBytes       uint64
	FillProducers    int
	FillInFlight     int
	FillBatchBytes   int
	FillBatchesPerTx int
	// The across-regions run (RunRegions): RegionValidators validators with each of
	// RegionRTTs added between every two of them, each load RegionDuration long.
	RegionRTTs       []time.Duration
	RegionValidators int
	RegionDuration   time.Duration
	// ProfileDir, when set, receives a CPU profile of every validator that serves pprof
	// (BFTLOG_PPROF_LADDR=auto) over the first ProfileSeconds of each full-speed load, and a
	// heap profile after it.
	ProfileDir     string
	ProfileSeconds int
	OutDir         string
	Log            func(format string, args ...any) `json:"-"`
}

// Result is one measured system.
type Result struct {
	System        string  `json:"system"`
	Validators    int     `json:"validators,omitempty"`
	Records       int     `json:"records_committed"`
	Seconds       float64 `json:"seconds"`
	RecordsPerSec float64 `json:"records_per_sec"`
	MBPerSec      float64 `json:"mb_per_sec"`
	LatencyP50Ms  float64 `json:"latency_p50_ms"`
	LatencyP95Ms  float64 `json:"latency_p95_ms"`
	LatencyP99Ms  float64 `json:"latency_p99_ms"`
	HalfLoadP99Ms float64 `json:"half_load_p99_ms,omitempty"`
	HalfLoadP50Ms float64 `json:"half_load_p50_ms,omitempty"`
	// Sweep is the offered-load sweep; with it, RecordsPerSec is the capacity (the highest
	// committed rate whose p99 stayed within Config.CapacityP99), the latencies are that step's,
	// the half-load ones a step at half of it, and ClosedLoopPerSec is what the producers
	// reached sending as fast as their in-flight limit let them.
	Sweep            []SweepPoint `json:"sweep,omitempty"`
	ClosedLoopPerSec float64      `json:"closed_loop_records_per_sec,omitempty"`
	FetchPerSec      float64      `json:"fetch_records_per_sec,omitempty"`
	// Blocks carried the full-speed load, BlockIntervalMs apart on average; LaterRoundBlocks of
	// them needed more than one consensus round (a timeout fired before a proposal or votes came).
	Blocks           int     `json:"blocks,omitempty"`
	BlockIntervalMs  float64 `json:"block_interval_ms,omitempty"`
	LaterRoundBlocks int     `json:"later_round_blocks,omitempty"`
	// EmptyBlocks is those blocks that carried no transaction while submitted ones waited.
	EmptyBlocks int `json:"empty_blocks,omitempty"`
	// AbsentPrecommits is validators' precommits missing from those blocks' last commits.
	AbsentPrecommits int `json:"absent_precommits,omitempty"`
	// CarriedWholeShare is the share of the bytes of nameable transactions (at least
	// dataplane.MinRefBytes) that the validators' proposals carried whole instead of naming,
	// over the chain's whole run (sweep, closed loop and half load); unset without the metric.
	CarriedWholeShare float64 `json:"carried_whole_share,omitempty"`
	// RTTMs is the round-trip time added between validators (RunRegions) and BlockTiming the
	// CometBFT consensus timeouts they ran with.
	RTTMs       float64 `json:"rtt_ms,omitempty"`
	BlockTiming string  `json:"block_timing,omitempty"`
	// NodeCPUMicrosPerRec is the CPU time all validators used per committed record under the
	// full-speed load: far steadier between runs on a shared machine than records/s.
	NodeCPUMicrosPerRec float64 `json:"node_cpu_us_per_record,omitempty"`
	// CPUSecondsPerGB is the CPU time per GB of committed payload: all validators' for bftlog,
	// the harness process's (servers and clients) for JetStream. What a BFT log costs in
	// energy beside a crash-tolerant one.
	CPUSecondsPerGB float64 `json:"cpu_seconds_per_gb,omitempty"`
	// PayloadBytesPerRec is the value bytes per record the producers handed over.
	PayloadBytesPerRec float64 `json:"payload_bytes_per_record,omitempty"`
	// DiskBytesPerRec is node 0's data directory (blocks, state, application store) per record.
	DiskBytesPerRec float64 `json:"disk_bytes_per_record,omitempty"`
	// DiskBreakdown is DiskBytesPerRec by database (application.db, blockstore.db, ...).
	DiskBreakdown map[string]float64 `json:"disk_breakdown,omitempty"`
	// LogBytesPerRec is the stored record batches (the partitions' byte counts) per record:
	// what the producer's compression left, before the store's own overhead.
	LogBytesPerRec float64 `json:"log_bytes_per_record,omitempty"`
	// PeakRSSMiB is the peak RSS during this measurement: of each validator, or of the
	// harness process for peers that run inside it (PeakRSSOf says which).
	PeakRSSMiB []int  `json:"peak_rss_mib,omitempty"`
	PeakRSSOf  string `json:"peak_rss_of,omitempty"`
	// LogBytesBefore is the log the chain already held when this measurement began (RunLarge).
	LogBytesBefore uint64 `json:"log_bytes_before,omitempty"`
	DataDirBytes   uint64 `json:"data_dir_bytes,omitempty"`
	Note           string `json:"note,omitempty"`
}

// Report is a whole run.
type Report struct {
	Mode    string   `json:"mode"` // "bench" (Run), "large" (RunLarge) or "regions" (RunRegions)
	Time    string   `json:"time"`
	Machine string   `json:"machine"`
	Config  Config   `json:"config"`
	Results []Result `json:"results"`
	// Command is how the run was started and Commit the tree it measured (git describe), so
	// the README's headline, written from this file, says how to reproduce it.
	Command []string `json:"command,omitempty"`
	Commit  string   `json:"commit,omitempty"`

	file string // the results file it was read from (ReadLatest)
}

// latencies collects samples safely; a sample may stand for several records (an open-loop
// producer's records created in one tick share a creation time), so percentiles are of records.
type latencies struct {
	mu      sync.Mutex
	samples []latencySample
}

type latencySample struct {
	ms float64
	n  int
}

func (l *latencies) add(d time.Duration) { l.addN(d, 1) }

func (l *latencies) addN(d time.Duration, n int) {
	l.mu.Lock()
	l.samples = append(l.samples, latencySample{float64(d.Microseconds()) / 1000, n})
	l.mu.Unlock()
}

func (l *latencies) pct(p float64) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.samples) == 0 {
		return 0
	}
	sort.Slice(l.samples, func(i, j int) bool { return l.samples[i].ms < l.samples[j].ms })
	var total int
	for _, s := range l.samples {
		total += s.n
	}
	// The record at rank p% (0-based, as for unweighted samples).
	rank, seen := int(p/100*float64(total-1)), 0
	for _, s := range l.samples {
		if seen += s.n; seen > rank {
			return s.ms
		}
	}
	return l.samples[len(l.samples)-1].ms
}

// Run runs every configured measurement and returns the report.
func Run(cfg Config) (*Report, error) {
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	if cfg.JetRecords == 0 {
		cfg.JetRecords = cfg.Records
	}
	codecs := make([]kbatch.Compression, len(cfg.EventsCodecs))
	for i, name := range cfg.EventsCodecs {
		c, err := kbatch.ParseCompression(name)
		if err != nil {
			return nil, err
		}
		codecs[i] = c
	}
	rep := newReport(cfg, "bench")
	for _, n := range cfg.Validators {
		if cfg.Baseline != "" {
			r, _, err := runChain(cfg, n, cfg.Baseline)
			if err != nil {
				return rep, fmt.Errorf("bftlog %s with %d validators: %w", cfg.Baseline, n, err)
			}
			rep.Results = append(rep.Results, r)
		}
	}
	for _, n := range cfg.Validators {
		r, extra, err := runChain(cfg, n, "")
		if err != nil {
			return rep, fmt.Errorf("bftlog with %d validators: %w", n, err)
		}
		rep.Results = append(rep.Results, r)
		rep.Results = append(rep.Results, extra...)
	}
	if cfg.EventsRecords > 0 {
		for _, c := range codecs {
			r, err := runEvents(cfg, c)
			if err != nil {
				return rep, fmt.Errorf("bftlog events %s: %w", c, err)
			}
			rep.Results = append(rep.Results, r)
		}
	}
	if cfg.KafkaRecords > 0 {
		rs, err := runKafka(cfg)
		if err != nil {
			return rep, fmt.Errorf("kafka client via gateway: %w", err)
		}
		rep.Results = append(rep.Results, rs...)
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

func newReport(cfg Config, mode string) *Report {
	host, _ := os.Hostname()
	return &Report{Mode: mode, Time: time.Now().UTC().Format(time.RFC3339), Machine: fmt.Sprintf("%s, %d CPUs", host, numCPU()), Config: cfg}
}

// ordering is the validators' ordering.by-digest, set either way: the bench measures what it
// says whatever bftlogd's default.
func (c Config) ordering() node.Ordering {
	if c.OrderByDigest {
		return node.OrderingByDigest
	}
	return node.OrderingCarry
}
