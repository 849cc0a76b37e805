package kafka

import (
	"regexp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListTransactions and DescribeTransactions show a principal's open Kafka transactions: they
// live in this gateway until EndTxn submits them as one chain transaction (txn.go), so a gateway
// answers for the transactions its own clients opened, "Ongoing" once they hold records or
// offsets, "Empty" before.

func (t *openTxn) state() string {
	if t.started.IsZero() {
		return "Empty"
	}
	return "Ongoing"
}

func (c *txnCoordinator) listTransactions(r *kmsg.ListTransactionsRequest) kmsg.Response {
	resp := kmsg.NewPtrListTransactionsResponse()
	resp.SetVersion(r.Version)
	var pattern *regexp.Regexp
	if r.TransactionalIDPattern != nil && *r.TransactionalIDPattern != "" {
		var err error
		if pattern, err = regexp.Compile(*r.TransactionalIDPattern); err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return resp
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]string, 0, len(c.byID))
	for id := range c.byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		t := c.byID[id]
		switch {
		case len(r.StateFilters) > 0 && !slices.Contains(r.StateFilters, t.state()),
			len(r.ProducerIDFilters) > 0 && !slices.Contains(r.ProducerIDFilters, t.producerID),
			r.DurationFilterMillis > 0 && (t.started.IsZero() || time.Since(t.started) < time.Duration(r.DurationFilterMillis)*time.Millisecond),
			pattern != nil && !pattern.MatchString(id):
			continue
		}
		ts := kmsg.NewListTransactionsResponseTransactionState()
		ts.TransactionalID, ts.ProducerID, ts.TransactionState = id, t.producerID, t.state()
		resp.TransactionStates = append(resp.TransactionStates, ts)
	}
	return resp
}

func (c *txnCoordinator) describeTransactions(r *kmsg.DescribeTransactionsRequest) kmsg.Response {
	resp := kmsg.NewPtrDescribeTransactionsResponse()
	resp.SetVersion(r.Version)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range r.TransactionalIDs {
		ts := kmsg.NewDescribeTransactionsResponseTransactionState()
		ts.TransactionalID = id
		t := c.byID[id]
		if t == nil {
			ts.ErrorCode = kerr.TransactionalIDNotFound.Code
			resp.TransactionStates = append(resp.TransactionStates, ts)
			continue
		}
		ts.State, ts.TimeoutMillis, ts.ProducerID, ts.ProducerEpoch = t.state(), int32(t.timeout.Milliseconds()), t.producerID, t.epoch
		ts.StartTimestamp = -1
		if !t.started.IsZero() {
			ts.StartTimestamp = t.started.UnixMilli()
		}
		for _, b := range t.batches {
			i := slices.IndexFunc(ts.Topics, func(x kmsg.DescribeTransactionsResponseTransactionStateTopic) bool { return x.Topic == b.Topic })
			if i < 0 {
				tt := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				tt.Topic = b.Topic
				ts.Topics = append(ts.Topics, tt)
				i = len(ts.Topics) - 1
			}
			if !slices.Contains(ts.Topics[i].Partitions, int32(b.Partition)) {
				ts.Topics[i].Partitions = append(ts.Topics[i].Partitions, int32(b.Partition))
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, ts)
	}
	return resp
}
