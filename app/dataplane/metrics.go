package dataplane

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The data plane's metrics, outside consensus, in Prometheus' default registry (which
// CometBFT's instrumentation endpoint and the SDK's API serve).

// refusals counts what this node refused or dropped of each sender's pushes, by reason; a
// sender is a validator's consensus address or "client" (unsigned).
var refusals = registerCounterVec(prometheus.CounterOpts{
	Namespace: "bftlog", Subsystem: "data_plane", Name: "refused_total",
	Help: "Transactions or requests of a data-plane sender that this node refused or dropped, by reason.",
}, []string{"sender", "reason"})

// fetchFailures counts the fetches of a named transaction a peer failed to serve.
var fetchFailures = registerCounterVec(prometheus.CounterOpts{
	Namespace: "bftlog", Subsystem: "data_plane", Name: "fetch_failures_total",
	Help: "Requests for a named transaction a peer failed to answer with bytes of the right hash.",
}, []string{"peer"})

// heldProven counts the claims of a sender's held words that its receipts proved.
var heldProven = registerCounterVec(prometheus.CounterOpts{
	Namespace: "bftlog", Subsystem: "data_plane", Name: "held_proven_total",
	Help: "Claims that more than two thirds hold a transaction, proved by the receipts that came with them, by sender.",
}, []string{"sender"})

// proposedTxs and proposedBytes count the transactions large enough to be named
// (MinRefBytes) that this node's proposals took, by how: "named" (a reference) or "carried"
// (whole: not yet held by more than two thirds, nor pushed long enough ago). A carried one
// costs the proposer's bandwidth to every peer, and every validator's block store, consensus
// WAL and tx index a copy.
var (
	proposedTxs = registerCounterVec(prometheus.CounterOpts{
		Namespace: "bftlog", Subsystem: "data_plane", Name: "proposed_txs_total",
		Help: "Transactions large enough to be named that this node's proposals took, by how: named or carried (whole).",
	}, []string{"how"})
	proposedBytes = registerCounterVec(prometheus.CounterOpts{
		Namespace: "bftlog", Subsystem: "data_plane", Name: "proposed_bytes_total",
		Help: "Bytes of the transactions large enough to be named that this node's proposals took, by how: named or carried (whole).",
	}, []string{"how"})
)

// CountProposed counts a transaction of size bytes a proposal of this node took, named or
// carried whole; smaller than MinRefBytes, it always travels whole and is not counted.
func CountProposed(named bool, size int) {
	if size < MinRefBytes {
		return
	}
	how := "carried"
	if named {
		how = "named"
	}
	proposedTxs.WithLabelValues(how).Inc()
	proposedBytes.WithLabelValues(how).Add(float64(size))
}

// Proposed is what CountProposed counted in this process: transactions and bytes, named
// and carried whole.
func Proposed() (namedTxs, carriedTxs, namedBytes, carriedBytes float64) {
	read := func(c *prometheus.CounterVec, how string) float64 {
		var m dto.Metric
		if err := c.WithLabelValues(how).Write(&m); err != nil {
			return 0
		}
		return m.GetCounter().GetValue()
	}
	return read(proposedTxs, "named"), read(proposedTxs, "carried"), read(proposedBytes, "named"), read(proposedBytes, "carried")
}

// registerCounterVec registers a counter once per process (several apps may share one).
func registerCounterVec(opts prometheus.CounterOpts, labels []string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(opts, labels)
	if err := prometheus.DefaultRegisterer.Register(c); err != nil {
		var already prometheus.AlreadyRegisteredError
		if errors.As(err, &already) {
			if existing, ok := already.ExistingCollector.(*prometheus.CounterVec); ok {
				return existing
			}
		}
	}
	return c
}
