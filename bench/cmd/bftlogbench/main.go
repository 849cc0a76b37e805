// Command bftlogbench measures bftlog against JetStream and the one-record-per-transaction
// design in one run (see docs/performance.md). `make bench` runs it with the defaults;
// `make bench-large` runs it with -large-gb, which compares one validator empty and full;
// `make bench-regions` with -regions, which adds round-trip time between 4 validators.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/bftlog/bftlog/bench"
)

func main() {
	var (
		validators = flag.String("validators", "1,4,7", "comma-separated validator counts to measure")
		codecs     = flag.String("events-compression", "none,lz4", "producer codecs for the JSON-events runs (none, gzip, snappy, lz4, zstd)")
		largeGB    = flag.Float64("large-gb", 0, "instead of the usual run: fill one validator with this many GB of log and compare the measured load empty and full")
		regions    = flag.String("regions", "", "instead of the usual run: round-trip times in ms between validators (e.g. 0,20,50,100), each measured on a fresh network")
		figures    = flag.String("figures", "", "instead of a run: rewrite this README's headline table from the latest results files in -out (make figures)")
		cfg        bench.Config
	)
	flag.BoolVar(&cfg.Sweep, "sweep", true, "measure each system's capacity with an offered-load sweep (constant rates rising in steps)")
	flag.Float64Var(&cfg.SweepStart, "sweep-start", 20_000, "-sweep: the first offered rate, records/s")
	flag.Float64Var(&cfg.SweepFactor, "sweep-factor", 1.5, "-sweep: each offered rate over the one before")
	flag.DurationVar(&cfg.SweepStep, "sweep-step", 10*time.Second, "-sweep: how long each rate is offered")
	flag.DurationVar(&cfg.SweepStopP99, "sweep-stop-p99", 2*time.Second, "-sweep: stop rising once a step's p99 passes this")
	flag.IntVar(&cfg.SweepRefine, "sweep-refine", 2, "-sweep: narrower steps between the last rate within -capacity-p99 and the next")
	flag.Float64Var(&cfg.SweepMax, "sweep-max", 0, "-sweep: the highest rate to offer, records/s (0: no limit)")
	flag.DurationVar(&cfg.SweepSettle, "sweep-settle", 10*time.Second, "-sweep: pause after a step that did not keep up and before the half-capacity step, for what it left behind (a backlog, compactions) to settle")
	flag.DurationVar(&cfg.CapacityP99, "capacity-p99", time.Second, "a system's capacity is the highest committed rate whose p99 stays within this")
	flag.IntVar(&cfg.Records, "records", 200_000, "records per bftlog run")
	flag.IntVar(&cfg.RecordBytes, "record-bytes", 100, "record value size")
	flag.IntVar(&cfg.Partitions, "partitions", 8, "topic partitions")
	flag.IntVar(&cfg.Producers, "producers", 4, "concurrent producer accounts")
	flag.IntVar(&cfg.BatchRecords, "batch-records", 5000, "records per transaction (producer batch size)")
	flag.DurationVar(&cfg.Linger, "linger", 10*time.Millisecond, "producer linger (Kafka's linger.ms): a batch goes when full or when its first record has waited this long")
	flag.IntVar(&cfg.InFlight, "in-flight", 5, "transactions in flight per producer (Kafka's max.in.flight.requests.per.connection)")
	flag.IntVar(&cfg.PeerInFlight, "peer-in-flight", 100, "transactions in flight per producer for the one-record-per-tx peer")
	flag.IntVar(&cfg.PeerProducers, "peer-producers", 32, "producer accounts for the one-record-per-tx peer")
	flag.IntVar(&cfg.PeerRecords, "peer-records", 200_000, "records for the one-record-per-tx peer (0: skip)")
	flag.DurationVar(&cfg.PeerDuration, "peer-duration", 20*time.Second, "time cap for the one-record-per-tx peer")
	flag.BoolVar(&cfg.JetStream, "jetstream", true, "measure NATS JetStream R1 and R3")
	flag.IntVar(&cfg.JetRecords, "jet-records", 0, "records for JetStream (0: same as -records)")
	flag.BoolVar(&cfg.HalfLoad, "half-load", true, "also measure latency at half the peak rate")
	flag.IntVar(&cfg.FetchRecords, "fetch-records", 10_000, "records per fetch request")
	flag.IntVar(&cfg.KafkaRecords, "kafka-records", 100_000, "records for the franz-go producer through the Kafka gateway (0: skip)")
	flag.IntVar(&cfg.SyncCommitRecords, "sync-commit-records", 2000, "of the Kafka run's records, how many a consumer reads committing synchronously after each (0: skip)")
	flag.IntVar(&cfg.EventsRecords, "events-records", 200_000, "JSON event records per -events-compression codec, each on a fresh one-validator chain (0: skip)")
	flag.IntVar(&cfg.FillProducers, "fill-producers", 4, "-large-gb: producer accounts filling the log")
	flag.IntVar(&cfg.FillInFlight, "fill-in-flight", 2, "-large-gb: fill transactions in flight per producer")
	flag.IntVar(&cfg.FillBatchBytes, "fill-batch-bytes", 1_000_000, "-large-gb: bytes per fill batch (incompressible 1,000-byte values)")
	flag.IntVar(&cfg.FillBatchesPerTx, "fill-batches-per-tx", 4, "-large-gb: fill batches per transaction (each on its own partition; max_batch_bytes bounds their sum)")
	flag.IntVar(&cfg.RegionValidators, "region-validators", 4, "-regions: validators")
	flag.DurationVar(&cfg.RegionDuration, "region-duration", 45*time.Second, "-regions: length of the full-speed load per round-trip time (half load: half of it)")
	flag.StringVar(&cfg.ProfileDir, "profile-dir", "", "write validators' CPU and heap profiles here (run with BFTLOG_PPROF_LADDR=auto)")
	flag.IntVar(&cfg.ProfileSeconds, "profile-seconds", 5, "length of each CPU profile")
	flag.IntVar(&cfg.PauseSeconds, "pause-seconds", 20, "the fault row on networks of 4 or more: seconds of half load with all validators up, then as long with one paused (0: skip)")
	flag.BoolVar(&cfg.OrderByDigest, "order-by-digest", true, "run this tree's validators with ordering.by-digest (blocks name record batches instead of carrying them); false: blocks carry them")
	flag.StringVar(&cfg.Baseline, "baseline", "", "a git commit to measure first on the same validator counts (the before of a change)")
	flag.BoolVar(&cfg.BaselineByDigest, "baseline-order-by-digest", false, "run the -baseline commit's validators with ordering.by-digest on too (a commit that has it)")
	flag.StringVar(&cfg.OutDir, "out", "bench/results", "where to write the JSON report")
	flag.Parse()
	if *figures != "" {
		if err := writeFigures(*figures, cfg.OutDir); err != nil {
			log.Fatal(err)
		}
		return
	}
	for _, v := range strings.Split(*validators, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			log.Fatalf("-validators %q: want numbers like 1,4", *validators)
		}
		cfg.Validators = append(cfg.Validators, n)
	}
	for _, c := range strings.Split(*codecs, ",") {
		if c = strings.TrimSpace(c); c != "" {
			cfg.EventsCodecs = append(cfg.EventsCodecs, c)
		}
	}
	if *regions != "" {
		for _, v := range strings.Split(*regions, ",") {
			ms, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || ms < 0 {
				log.Fatalf("-regions %q: want round-trip milliseconds like 0,20,50,100", *regions)
			}
			cfg.RegionRTTs = append(cfg.RegionRTTs, time.Duration(ms)*time.Millisecond)
		}
	}
	cfg.Log = func(format string, args ...any) { log.Printf(format, args...) }
	var (
		rep *bench.Report
		err error
	)
	switch {
	case len(cfg.RegionRTTs) > 0:
		rep, err = bench.RunRegions(cfg)
	case *largeGB > 0:
		cfg.LargeBytes = uint64(*largeGB * 1e9)
		rep, err = bench.RunLarge(cfg)
	default:
		rep, err = bench.Run(cfg)
	}
	if rep != nil && len(rep.Results) > 0 {
		rep.Command = append([]string{"go", "run", "./bench/cmd/bftlogbench"}, os.Args[1:]...)
		rep.Commit = commit()
		rep.WriteTable(os.Stdout)
		if name, werr := rep.WriteJSON(cfg.OutDir); werr == nil {
			fmt.Println("wrote", name)
			if png, perr := rep.WritePNG(name); perr != nil {
				log.Printf("chart: %v", perr)
			} else if png != "" {
				fmt.Println("wrote", png)
			}
		}
	}
	if err != nil {
		log.Fatal(err)
	}
}

// writeFigures rewrites readme's headline table from the latest results files in dir.
func writeFigures(readme, dir string) error {
	reps, err := bench.ReadLatest(dir)
	if err != nil {
		return err
	}
	old, err := os.ReadFile(readme)
	if err != nil {
		return err
	}
	out, err := bench.SpliceHeadline(old, bench.Headline(reps))
	if err != nil {
		return err
	}
	return os.WriteFile(readme, out, 0o644)
}

// commit is the measured tree, as git describes it ("-dirty" with uncommitted changes).
func commit() string {
	out, err := exec.Command("git", "describe", "--always", "--dirty").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
