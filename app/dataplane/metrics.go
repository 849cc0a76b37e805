package dataplane

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
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
