package kafka

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	errorsmod "cosmossdk.io/errors"

	"github.com/cosmos/cosmos-sdk/client"
	sdk "github.com/cosmos/cosmos-sdk/types"
	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"

	"github.com/bftlog/bftlog/x/topics/client/txclient"
	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// Coalescing: the producer gathers what arrives within lingerFor from every client into one
// MsgProduce, so a block carries few large transactions, not many small. A message holds at
// most the chain's default max_batch_bytes of record batches and max_records_per_batch records
// (the keeper counts both over the whole message).
const (
	lingerFor  = 20 * time.Millisecond
	maxTxBytes = types.DefaultMaxBatchBytes
	maxTxRecs  = types.DefaultMaxRecordsPerBatch
)

// errClosed fails the batches still waiting when the gateway closes.
var errClosed = errors.New("kafka gateway closed")

type partitionKey struct {
	topic     string
	partition int32
}

// appendReq is one Kafka record batch waiting to be appended, as the client sent it.
type appendReq struct {
	key     partitionKey
	batch   []byte
	records uint32
	done    chan appendRes
}

type appendRes struct {
	baseOffset uint64
	err        error
}

// producer appends through the gateway's account as an idempotent producer on chain: every
// (topic, partition) carries the next sequence, so a transaction retried after a lost answer
// is recognised by the chain as a duplicate instead of being appended twice. Partitions are
// spread over lanes, and a lane keeps several transactions in flight, in order. A batch the
// gateway sequences itself waits until its partition has none in flight: the chain answers a
// resend as a duplicate only if it carries the partition's last sequence, so with two in flight
// a lost answer would be resent under a new sequence and appended twice. A Kafka idempotent
// producer's batches carry their own sequences, which the chain remembers five deep, so they
// go on while earlier ones are in flight.
type producer struct {
	clientCtx client.Context
	signer    *txclient.Signer
	// states reads the chain's idempotent-producer state, to resync a partition's sequence.
	states producerStates
	// records reads back a batch the chain answered as a duplicate, to tell ours from another's.
	records recordFetcher
	log     func(format string, args ...any)
	lanes   []*lane
	stop    chan struct{}
	wg      sync.WaitGroup

	// Kafka idempotent producers: the last batch appended per (producer id, partition).
	mu   sync.Mutex
	last map[kafkaSeqKey]*kafkaSeq
}

type kafkaSeqKey struct {
	producerID int64
	partitionKey
}

// outcome is a queued batch's result, readable by every request that waits for it (the
// original and any retry of it) once done is closed.
type outcome struct {
	done       chan struct{}
	baseOffset uint64
	err        error
}

// watch turns a queued batch's single result into an outcome many waiters can read.
func watch(ar *appendReq) *outcome {
	o := &outcome{done: make(chan struct{})}
	go func() {
		res := <-ar.done
		o.baseOffset, o.err = res.baseOffset, res.err
		close(o.done)
	}()
	return o
}

// kafkaSeq is the last batch a Kafka idempotent producer sent to a partition, recorded when it
// is queued, so that a retry arriving while it is still in flight waits for its outcome.
type kafkaSeq struct {
	firstSequence int32
	count         int32
	*outcome
}

// failed tells whether the batch is known to have failed (a retry must then be appended).
func (k *kafkaSeq) failed() bool {
	select {
	case <-k.done:
		return k.err != nil
	default:
		return false
	}
}

// lane is one partition group's appender: its own queue and its partitions' sequences. It
// keeps up to laneDepth transactions in flight, in order: a Kafka client pipelines produce
// requests (franz-go keeps five in flight per broker), and with one transaction at a time each
// request waited behind the ones before it, a block each, so a record took about a second
// whatever the load (docs/performance.md, Capacity).
type lane struct {
	p  *producer
	in chan *appendReq
	// flights are the submitted transactions, oldest first; slots bounds them.
	flights chan *flight
	slots   chan struct{}
	// gate is held while a transaction is built and submitted, and while a failure is settled:
	// a failure drains the lane (every transaction in flight behind it settled too) before
	// anything new is sent, so no new transaction takes a sequence the chain has not caught
	// up with.
	gate sync.Mutex
	mu   sync.Mutex // seq, sent and busy
	// seq is each partition's last sequence the chain accepted from the gateway; sent, the
	// last put in a transaction (ahead of seq while one is in flight).
	seq  map[partitionKey]uint64
	sent map[partitionKey]uint64
	// busy counts, per partition, the unsettled transactions with a batch the gateway
	// sequenced; settled wakes the loop when one settles.
	busy    map[partitionKey]int
	settled chan struct{}
}

// flight is a transaction submitted and not yet settled.
type flight struct {
	reqs []*appendReq
	msg  *types.MsgProduce
	adm  *txclient.Admitted
	err  error // the node's refusal of it, instead of adm
}

// laneDepth is how many transactions a lane keeps in flight.
const laneDepth = 4

func newLane(p *producer) *lane {
	return &lane{p: p, in: make(chan *appendReq, 1024), flights: make(chan *flight, laneDepth), slots: make(chan struct{}, laneDepth),
		seq: map[partitionKey]uint64{}, sent: map[partitionKey]uint64{}, busy: map[partitionKey]int{}, settled: make(chan struct{}, 1)}
}

// lanes is how many partition groups the gateway appends for at once. Each transaction carries
// at most one batch per partition, and a Kafka client's batch is about 1 MiB (franz-go's default
// max), so a lane per partition is what keeps a topic's partitions all moving: with 4 lanes, a
// franz-go producer on 8 partitions committed 0.44x the records/s of the native client at N=1
// (docs/performance.md).
const lanes = 16

func newProducer(clientCtx client.Context, signer *txclient.Signer, log func(string, ...any)) *producer {
	q := types.NewQueryClient(clientCtx)
	p := &producer{clientCtx: clientCtx, signer: signer, states: q, records: q, log: log, stop: make(chan struct{}), last: map[kafkaSeqKey]*kafkaSeq{}}
	for i := 0; i < lanes; i++ {
		l := newLane(p)
		p.lanes = append(p.lanes, l)
		p.wg.Add(2)
		go func() { defer p.wg.Done(); l.loop() }()
		go func() { defer p.wg.Done(); l.settleFlights() }()
	}
	return p
}

// enqueue hands a batch to its partition's lane: a topic's partitions take consecutive lanes,
// so up to `lanes` of them never share one.
func (p *producer) enqueue(r *appendReq) {
	h := fnv.New32a()
	_, _ = h.Write([]byte(r.key.topic))
	p.lanes[(h.Sum32()+uint32(r.key.partition))%uint32(len(p.lanes))].in <- r
}

func (p *producer) close() {
	close(p.stop)
	p.wg.Wait()
}

// loop gathers the lane's batches into transactions and submits them, up to laneDepth in
// flight; settleFlights sees each through to its block.
func (l *lane) loop() {
	p := l.p
	defer close(l.flights)
	defer l.failQueued()
	var held []*appendReq // arrived, not yet sent: in arrival order
	for {
		if len(held) == 0 {
			select {
			case <-p.stop:
				return
			case r := <-l.in:
				held = append(held, r)
			}
		}
		// A slot first: while every slot is taken, what arrives joins the next transaction.
		select {
		case <-p.stop:
			p.fail(held, errClosed)
			return
		case l.slots <- struct{}{}:
		}
		timer := time.NewTimer(lingerFor)
	gather:
		for !full(held) {
			select {
			case r := <-l.in:
				held = append(held, r)
			case <-timer.C:
				break gather
			}
		}
		timer.Stop()
		l.mu.Lock()
		tx, rest := nextTx(held, l.busy)
		l.mu.Unlock()
		if len(tx) == 0 {
			// Every batch waits for its partition's transaction in flight.
			<-l.slots
			select {
			case <-p.stop:
				p.fail(held, errClosed)
				return
			case <-l.settled:
			case r := <-l.in:
				held = append(held, r)
			}
			continue
		}
		held = rest
		l.gate.Lock()
		msg := l.message(tx)
		l.mu.Lock()
		for _, b := range msg.Batches {
			if b.Sequence != 0 {
				l.busy[partitionKey{b.Topic, int32(b.Partition)}]++
			}
		}
		l.mu.Unlock()
		// Unless the operator gave a gas limit, the gas from the message's size: a simulation
		// would run it on the committed state, where the transactions still in flight have not
		// moved the partitions' sequences.
		var gas uint64
		if p.signer.Simulates() {
			gas = txclient.FixedGas(msg)
		}
		adm, err := p.signer.SubmitAdmitted(gas, msg)
		l.flights <- &flight{reqs: tx, msg: msg, adm: adm, err: err}
		l.gate.Unlock()
	}
}

// failQueued answers what is still queued for the lane when the gateway closes: its senders
// must not wait for an answer that will never come.
func (l *lane) failQueued() {
	for {
		select {
		case r := <-l.in:
			l.p.fail([]*appendReq{r}, errClosed)
		default:
			return
		}
	}
}

// settleFlights sees the lane's transactions through to their blocks, oldest first. A
// transaction that committed with every batch appended is answered at once; anything else
// (a refusal, an unknown outcome, a duplicate that is not ours) drains the lane: that one and
// every one in flight behind it are settled one by one, resyncing and resending as needed,
// before the lane sends again from the sequences the chain holds.
func (l *lane) settleFlights() {
	for f := range l.flights {
		if l.closing(f) {
			continue
		}
		res, err := f.wait()
		if err == nil && l.answered(f.reqs, f.msg, res) {
			l.done(f)
			continue
		}
		l.gate.Lock()
		l.settle(f.reqs, f.msg, res, err, 0)
		l.done(f)
	drain:
		for {
			select {
			case f, ok := <-l.flights:
				if !ok {
					break drain
				}
				if l.closing(f) {
					continue
				}
				res, err := f.wait()
				l.settle(f.reqs, f.msg, res, err, 0)
				l.done(f)
			default:
				break drain
			}
		}
		l.mu.Lock()
		l.sent = maps.Clone(l.seq)
		l.mu.Unlock()
		l.gate.Unlock()
	}
}

// closing fails f's senders without waiting for its block once the gateway closes (the
// transaction may still land: its records were never acknowledged, so a client resends them
// and the sequences make the resend a duplicate), and tells whether it did.
func (l *lane) closing(f *flight) bool {
	select {
	case <-l.p.stop:
		l.p.fail(f.reqs, errClosed)
		l.done(f)
		return true
	default:
		return false
	}
}

// done frees f's slot and its partitions.
func (l *lane) done(f *flight) {
	l.mu.Lock()
	for _, b := range f.msg.Batches {
		if k := (partitionKey{b.Topic, int32(b.Partition)}); b.Sequence != 0 {
			if l.busy[k]--; l.busy[k] <= 0 {
				delete(l.busy, k)
			}
		}
	}
	l.mu.Unlock()
	<-l.slots
	select {
	case l.settled <- struct{}{}:
	default:
	}
}

// wait is the transaction's committed result, or why there is none.
func (f *flight) wait() (*sdk.TxResponse, error) {
	if f.err != nil {
		return nil, f.err
	}
	return f.adm.Wait()
}

// full tells whether reqs hold a whole transaction's worth, so gathering more can stop.
func full(reqs []*appendReq) bool {
	bytes, recs := 0, 0
	for _, r := range reqs {
		bytes, recs = bytes+len(r.batch), recs+int(r.records)
	}
	return bytes >= maxTxBytes || recs >= maxTxRecs
}

// nextTx takes, in arrival order, the requests of the next transaction and returns the rest
// (in order). A transaction holds at most one batch per partition: the chain accepts one
// idempotent batch per partition in a message, and a partition's later batches must wait
// for its earlier ones. A batch the gateway sequences waits while its partition is busy (a
// transaction with such a batch of it in flight). It stays within maxTxBytes and maxTxRecs,
// except that the first request taken always is (alone too large, the chain refuses it with
// the fitting error).
func nextTx(held []*appendReq, busy map[partitionKey]int) (tx, rest []*appendReq) {
	blocked := map[partitionKey]bool{} // partitions with a batch in tx or held back
	bytes, recs := 0, 0
	for _, r := range held {
		fits := len(tx) == 0 || (bytes+len(r.batch) <= maxTxBytes && recs+int(r.records) <= maxTxRecs)
		if busy[r.key] > 0 && !kafkaIdempotent(r.batch) {
			blocked[r.key] = true
		}
		if blocked[r.key] || !fits {
			blocked[r.key] = true
			rest = append(rest, r)
			continue
		}
		blocked[r.key] = true
		tx = append(tx, r)
		bytes, recs = bytes+len(r.batch), recs+int(r.records)
	}
	return tx, rest
}

// maxResyncs bounds how often one append re-reads its sequence and sends again: another
// process signing with the gateway's key (a second gateway for availability) takes sequences
// from under it, and each round one of them wins, so a few rounds suffice.
const maxResyncs = 8

// maxFetchAnswer bounds a fetch answer the gateway accepts from the node (gRPC's default is
// 4 MiB): the chain returns up to 16 MiB of stored batches past the first batch, which itself
// may be as large as max_batch_bytes.
const maxFetchAnswer = 64 << 20

// recordFetcher is the query ours asks (types.QueryClient has it).
type recordFetcher interface {
	Fetch(ctx context.Context, in *types.QueryFetchRequest, opts ...grpc.CallOption) (*types.QueryFetchResponse, error)
}

// ours tells whether the batch the chain answered as a duplicate (at res's offsets) is exactly
// the batch sent: the chain matches a resend by the producer's sequence and record count only,
// and a process sharing the gateway's key may have used the same sequence for other records,
// which must not be acknowledged as if they were these. The chain stores a batch as it came
// with only its base offset (bytes 0-7) set, so the rest of the bytes must be equal.
func (l *lane) ours(k partitionKey, res types.ProduceResult, sent []byte) (bool, error) {
	if res.Count != kbatch.RecordBatchCount(sent) || len(sent) < kbatch.RecordBatchHeaderSize {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The batch holding the base offset, alone (the first batch comes whatever the limits).
	out, err := l.p.records.Fetch(ctx, &types.QueryFetchRequest{Topic: k.topic, Partition: uint32(k.partition), Offset: res.BaseOffset,
		MaxRecords: 1, MaxBytes: 1, Format: types.FETCH_FORMAT_BATCHES}, grpc.MaxCallRecvMsgSize(maxFetchAnswer))
	if err != nil {
		return false, err
	}
	if len(out.Batches) == 0 {
		return false, fmt.Errorf("duplicate of %s/%d at %d: no batch there", k.topic, k.partition, res.BaseOffset)
	}
	stored := out.Batches[0]
	return stored.BaseOffset == res.BaseOffset && len(stored.RecordBatch) == len(sent) &&
		bytes.Equal(stored.RecordBatch[8:], sent[8:]), nil
}

// producerStates is the query resync asks (types.QueryClient has it).
type producerStates interface {
	ProducerStates(ctx context.Context, in *types.QueryProducerStatesRequest, opts ...grpc.CallOption) (*types.QueryProducerStatesResponse, error)
}

// resync moves a partition's sequence (and the next one sent) to the last one the chain
// accepted from the gateway's account (after a restart of the gateway, or after a transaction whose outcome was lost), read
// from the chain's producer state; it reports whether it could read it.
func (l *lane) resync(k partitionKey) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := l.p.states.ProducerStates(ctx, &types.QueryProducerStatesRequest{Topic: k.topic, Partition: uint32(k.partition), Producer: l.p.signer.Address()})
	if err != nil {
		l.p.log("resync of %s/%d: %v", k.topic, k.partition, err)
		return false
	}
	var last uint64 // nothing accepted yet: the next sequence is 1
	for _, st := range res.States {
		last = st.LastSequence
	}
	// The lane's gate is held: the next transaction of k follows what the chain holds.
	l.mu.Lock()
	l.seq[k], l.sent[k] = last, last
	l.mu.Unlock()
	return true
}

// message is reqs (one batch per partition) as one transaction, each batch under its
// partition's next sequence.
func (l *lane) message(reqs []*appendReq) *types.MsgProduce {
	l.mu.Lock()
	defer l.mu.Unlock()
	msg := &types.MsgProduce{Producer: l.p.signer.Address()}
	for _, r := range reqs {
		// A Kafka idempotent producer's batch is deduplicated by the chain from its header;
		// the gateway's own sequence covers the others' resent transactions.
		var seq uint64
		if !kafkaIdempotent(r.batch) {
			seq = max(l.sent[r.key], l.seq[r.key]) + 1
			l.sent[r.key] = seq
		}
		msg.Batches = append(msg.Batches, types.ProduceBatch{Topic: r.key.topic, Partition: uint32(r.key.partition),
			RecordBatch: r.batch, RecordCount: r.records, Sequence: seq})
	}
	return msg
}

// results are a committed transaction's results by partition (unique in the message; the
// chain lists duplicates after the appended batches).
func (l *lane) results(reqs []*appendReq, res *sdk.TxResponse) (map[partitionKey]types.ProduceResult, error) {
	out, err := txclient.Responses[types.MsgProduceResponse](l.p.clientCtx, res)
	if err == nil && (len(out) != 1 || len(out[0].Results) != len(reqs)) {
		err = fmt.Errorf("produce response with %d results for %d batches", len(out), len(reqs))
	}
	if err != nil {
		return nil, err
	}
	byKey := map[partitionKey]types.ProduceResult{}
	for _, res := range out[0].Results {
		byKey[partitionKey{res.Topic, int32(res.Partition)}] = res
	}
	return byKey, nil
}

// answered answers reqs from their committed transaction when every batch was appended (or is
// a duplicate of exactly ours), and tells whether it did; otherwise it answers none of them.
func (l *lane) answered(reqs []*appendReq, msg *types.MsgProduce, res *sdk.TxResponse) bool {
	results, err := l.results(reqs, res)
	if err != nil {
		return false
	}
	for _, r := range reqs {
		res, ok := results[r.key]
		if !ok {
			return false
		}
		if res.Duplicate {
			if mine, err := l.ours(r.key, res, r.batch); err != nil || !mine {
				return false
			}
		}
	}
	l.mu.Lock()
	for i, r := range reqs {
		if seq := msg.Batches[i].Sequence; seq != 0 {
			l.seq[r.key] = max(l.seq[r.key], seq)
		}
	}
	l.mu.Unlock()
	for _, r := range reqs {
		r.done <- appendRes{baseOffset: results[r.key].BaseOffset}
	}
	return true
}

// append submits reqs (one batch per partition) as one transaction and waits for it, settling
// it as settle does. The lane's gate is held.
func (l *lane) append(reqs []*appendReq, resyncs int) {
	l.settle(reqs, l.message(reqs), nil, nil, resyncs)
}

// settle sees msg (reqs' batches) through: from its outcome when it is known (res or err),
// else by sending it. If the chain refuses it, each batch is tried alone so one bad batch
// fails only its own senders. resyncs counts how often these batches' sequence was re-read
// from the chain already. The lane's gate is held: nothing new is sent meanwhile.
func (l *lane) settle(reqs []*appendReq, msg *types.MsgProduce, res *sdk.TxResponse, err error, resyncs int) {
	p := l.p
	for attempt := 0; ; attempt++ {
		if attempt > 0 || (res == nil && err == nil) {
			res, err = p.signer.SubmitAndWait(msg)
		}
		if err == nil {
			results, rerr := l.results(reqs, res)
			if rerr != nil {
				p.fail(reqs, rerr)
				return
			}
			for i, r := range reqs {
				res, ok := results[r.key]
				if !ok {
					p.fail([]*appendReq{r}, fmt.Errorf("produce response without %s/%d", r.key.topic, r.key.partition))
					continue
				}
				if res.Duplicate {
					mine, err := l.ours(r.key, res, r.batch)
					if err != nil {
						p.fail([]*appendReq{r}, err)
						continue
					}
					if !mine {
						// The sequence was stale (a restart, or another process with the
						// gateway's key used it): this batch is not on chain yet. Re-read
						// the sequence and send it again under the next one.
						if resyncs >= maxResyncs || !l.resync(r.key) {
							p.fail([]*appendReq{r}, errorsmod.Wrapf(types.ErrOutOfOrderSequence, "%s/%d: sequence %d taken by other records %d times", r.key.topic, r.key.partition, msg.Batches[i].Sequence, resyncs+1))
							continue
						}
						l.append([]*appendReq{r}, resyncs+1)
						continue
					}
				}
				if seq := msg.Batches[i].Sequence; seq != 0 {
					l.mu.Lock()
					l.seq[r.key] = max(l.seq[r.key], seq)
					l.mu.Unlock()
				}
				r.done <- appendRes{baseOffset: res.BaseOffset}
			}
			return
		}
		switch afterFailure(err, len(reqs), resyncs, attempt) {
		case resyncAndResend:
			if l.resync(reqs[0].key) {
				l.append(reqs, resyncs+1)
				return
			}
			p.fail(reqs, err)
			return
		case splitByPartition:
			for i, r := range reqs {
				// Alone, under the sequence it had.
				one := &types.MsgProduce{Producer: msg.Producer, Batches: msg.Batches[i : i+1]}
				l.settle([]*appendReq{r}, one, nil, nil, resyncs)
			}
			return
		case giveUp:
			p.fail(reqs, err)
			return
		}
		// The outcome is unknown (timeout, node restarting): resend the same batches; the
		// sequences make a resend of an appended batch a duplicate, answered with its offsets.
		select {
		case <-p.stop:
			p.fail(reqs, err)
			return
		case <-time.After(time.Second):
		}
	}
}

// kafkaIdempotent tells whether a record batch carries a Kafka producer id (>= 0).
func kafkaIdempotent(batch []byte) bool {
	h, ok := kbatch.ReadBatchHeader(batch)
	return ok && h.ProducerID >= 0
}

// step is what a lane does after a failed append.
type step int

const (
	// resend the same batches: the outcome is unknown (the sequences make a resend of an
	// appended batch a duplicate).
	resend step = iota
	// resyncAndResend reads the partition's sequence from the chain and sends again (at most
	// maxResyncs times).
	resyncAndResend
	// splitByPartition sends each partition's batches alone, so that one bad batch fails only
	// its own senders.
	splitByPartition
	// giveUp fails the batches' senders with the error.
	giveUp
)

// afterFailure decides, from the error's code and type, what follows a failed append of
// batches partitions' batches, resynced resyncs times already, on its attempt-th try.
func afterFailure(err error, batches int, resyncs int, attempt int) step {
	refused := refusedByModule(err)
	switch {
	case errors.Is(err, types.ErrOutOfOrderSequence) && batches == 1 && resyncs < maxResyncs:
		return resyncAndResend
	case refused && batches > 1:
		return splitByPartition
	case refused || !retryable(err) || attempt >= 30:
		return giveUp
	}
	return resend
}

// refusedByModule tells whether x/topics refused the transaction (by its codespace): nothing of
// it was appended, and resending it would be refused again.
func refusedByModule(err error) bool {
	var txErr *txclient.TxError
	return errors.As(err, &txErr) && txErr.Codespace() == types.ModuleName
}

// retryable tells whether a failed append's outcome is unknown or its refusal passing, so the
// same batches may be sent again: the transaction was not found in a block in time, the node
// refused it for a reason that goes away (the account sequence moved, the mempool is full), or
// the node (every node of the gateway's list) could not be reached. Any other refusal from the
// chain is final. It decides by the error's code and type, never by its text.
func retryable(err error) bool {
	switch {
	case errors.Is(err, txclient.ErrNotCommitted),
		errors.Is(err, txclient.ErrUnreachable),
		errors.Is(err, txclient.ErrIngressUnavailable),
		errors.Is(err, sdkerrors.ErrWrongSequence),
		errors.Is(err, sdkerrors.ErrMempoolIsFull):
		return true
	}
	var txErr *txclient.TxError
	if errors.As(err, &txErr) {
		return false // the chain answered with a code
	}
	// No answer from the node: the connection failed, timed out or was closed.
	var netErr net.Error
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()) ||
		status.Code(err) == codes.Unavailable || status.Code(err) == codes.DeadlineExceeded
}

func (p *producer) fail(reqs []*appendReq, err error) {
	p.log("append of %d batches failed: %v", len(reqs), err)
	for _, r := range reqs {
		r.done <- appendRes{err: err}
	}
}

// produce answers Produce: v13 names topics by ID (topic_id_requests.go).
func (s *Server) produce(ctx context.Context, r *kmsg.ProduceRequest) func() kmsg.Response {
	if r.Version >= 13 {
		return s.produceByID(ctx, r)
	}
	return s.produceByName(ctx, r)
}

// produceByName enqueues every partition's batches in request order (so appends keep the order
// the client sent them in) and returns a function that waits for the outcome.
func (s *Server) produceByName(ctx context.Context, r *kmsg.ProduceRequest) func() kmsg.Response {
	prod := s.ident(ctx).producer
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(r.Version)
	type waiting struct {
		topic, part int
		result      *outcome
		code        int16 // refused before queueing
	}
	var waits []waiting
	if r.TransactionID != nil {
		resp = s.ident(ctx).txns.produce(r)
		return func() kmsg.Response { return resp }
	}
	for ti, t := range r.Topics {
		rt := kmsg.ProduceResponseTopic{Topic: t.Topic}
		for pi, pt := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition, rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = pt.Partition, -1, -1, -1
			batches, err := splitBatches(pt.Records)
			if pt.Partition < 0 {
				err = errorsmod.Wrapf(types.ErrInvalidPartition, "partition %d", pt.Partition)
			} else if err == nil && len(batches) == 0 {
				err = errorsmod.Wrap(types.ErrEmptyBatch, "no record batch")
			}
			for _, b := range batches {
				// As Kafka: zstd needs produce v7, so that older clients never meet it.
				if err == nil && b.compression == kbatch.CompressionZstd && r.Version < 7 {
					err = errorsmod.Wrapf(types.ErrUnsupportedCompression, "zstd needs produce v7 or later, the request is v%d", r.Version)
				}
			}
			for _, b := range batches {
				if err == nil && b.transactional {
					err = errorsmod.Wrap(types.ErrInvalidRecordBatch, "a transactional batch outside a transaction (no transactional id)")
				}
			}
			if err != nil {
				rp.ErrorCode, rp.ErrorMessage = kafkaCode(err), kmsg.StringPtr(err.Error())
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			key := partitionKey{t.Topic, pt.Partition}
			for _, b := range batches {
				w := waiting{topic: ti, part: pi}
				ar := &appendReq{key: key, batch: b.bytes, records: b.records, done: make(chan appendRes, 1)}
				if b.producerID < 0 {
					prod.enqueue(ar)
					w.result = watch(ar)
					waits = append(waits, w)
					continue
				}
				// Kafka's idempotent producer: the chain deduplicates by the batch header's
				// producer id and sequence (the last five batches, whichever gateway sent
				// them). Here only a resend of the batch still in flight from this gateway
				// waits for that batch's outcome instead of being sent twice at once.
				seqKey := kafkaSeqKey{b.producerID, key}
				count := int32(b.records)
				prod.mu.Lock()
				last := prod.last[seqKey]
				resend := last != nil && last.firstSequence == b.firstSequence && last.count == count && !last.failed()
				if resend {
					w.result = last.outcome
				} else {
					w.result = watch(ar)
					prod.last[seqKey] = &kafkaSeq{firstSequence: b.firstSequence, count: count, outcome: w.result}
				}
				prod.mu.Unlock()
				if !resend {
					// Outside the lock: a full lane waits for its block, and other
					// connections' producers must not wait for it.
					prod.enqueue(ar)
				}
				waits = append(waits, w)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if r.Acks == 0 {
		// Nothing is answered, but the request's bytes stay held until its records are
		// appended.
		return func() kmsg.Response {
			for _, w := range waits {
				<-w.result.done
			}
			return nil
		}
	}
	return func() kmsg.Response {
		for _, w := range waits {
			rp := &resp.Topics[w.topic].Partitions[w.part]
			if w.code != 0 {
				rp.ErrorCode = w.code
				continue
			}
			<-w.result.done
			if w.result.err != nil {
				rp.ErrorCode, rp.ErrorMessage = kafkaCode(w.result.err), kmsg.StringPtr(w.result.err.Error())
				continue
			}
			if rp.BaseOffset < 0 {
				rp.BaseOffset = int64(w.result.baseOffset)
			}
		}
		return resp
	}
}
