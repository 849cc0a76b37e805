package kafka

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"sync"
	"time"

	errorsmod "cosmossdk.io/errors"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/client/txclient"
	"github.com/bftlog/bftlog/x/topics/types"
)

// Kafka transactions map onto what the chain already guarantees: everything a transactional
// producer sends between its first AddPartitionsToTxn and EndTxn — record batches on any
// partitions and TxnOffsetCommit offsets of consumer groups — is kept here and submitted at
// EndTxn(commit) as ONE chain transaction, so it all lands or none of it does; the chain writes
// the commit markers (x/topics/keeper/produce.go). An abort, a producer fenced by a newer
// InitProducerID of its transactional id, or a gateway that dies submits nothing. Nothing is
// visible before its block, so read_committed consumers see only committed transactions.
// Zombies across gateways are fenced by the consumer group: a transaction's offsets carry
// the member's generation, which the chain checks, and a refused commit takes its records with
// it.

// What transactions hold in the gateway is bounded per principal: one open transaction at
// most maxTxnBytes (it must fit one message), all of them with their transactional ids at most
// MaxTransactionBytes; past that, new records, offsets and ids are refused with
// THROTTLING_QUOTA_EXCEEDED until transactions end. As Kafka's coordinator does, a transaction
// open past its timeout is aborted and its producer fenced, and an id unused for
// txnIDExpiry is forgotten.
const (
	// maxTxnBytes bounds the record bytes one open transaction holds (the chain's default
	// max_batch_bytes: the transaction must fit one message).
	maxTxnBytes = 4 << 20
	// maxTxnTimeout is the longest transaction timeout a producer may ask for (Kafka's
	// transaction.max.timeout.ms).
	maxTxnTimeout = 15 * time.Minute
	// txnIDExpiry is how long an unused transactional id is kept (Kafka's
	// transactional.id.expiration.ms).
	txnIDExpiry = 7 * 24 * time.Hour
	// txnIDBytes is what an id holds besides its name.
	txnIDBytes = 256
	// sweepEvery is how often, at most, a full coordinator looks for expired transactions.
	sweepEvery = time.Second
)

type txnCoordinator struct {
	signer   *txclient.Signer
	maxBytes int64 // MaxTransactionBytes
	mu       sync.Mutex
	byID     map[string]*openTxn // by transactional id
	bytes    int64               // held by every id: its entry, batches and offsets
	swept    time.Time
}

// openTxn is a transactional producer's current transaction.
type openTxn struct {
	producerID int64
	epoch      int16
	timeout    time.Duration
	used       time.Time // last request naming it
	started    time.Time // when its first batch or offsets were kept; zero while empty
	batches    []types.ProduceBatch
	bytes      int                       // of batches and offsets
	offsets    []*types.MsgCommitOffsets // one per TxnOffsetCommit
}

func newTxnCoordinator(signer *txclient.Signer, maxBytes int64) *txnCoordinator {
	return &txnCoordinator{signer: signer, maxBytes: maxBytes, byID: map[string]*openTxn{}}
}

// initProducerID starts (or restarts, fencing the previous producer of the id) a transactional
// producer: a new random producer id, epoch 0, nothing open.
func (c *txnCoordinator) initProducerID(r *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse) {
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	timeout := time.Duration(r.TransactionTimeoutMillis) * time.Millisecond
	if timeout <= 0 || timeout > maxTxnTimeout {
		resp.ErrorCode = kerr.InvalidTransactionTimeout.Code // as Kafka's coordinator
		return
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		resp.ErrorCode = kerr.UnknownServerError.Code
		return
	}
	id, now := *r.TransactionalID, time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.byID[id]; old != nil {
		c.drop(id, old)
	}
	cost := int64(txnIDBytes + len(id))
	if !c.fits(cost, now) {
		resp.ErrorCode = kerr.ThrottlingQuotaExceeded.Code
		return
	}
	c.bytes += cost
	resp.ProducerID, resp.ProducerEpoch = int64(binary.BigEndian.Uint64(b[:])>>2), 0
	c.byID[id] = &openTxn{producerID: resp.ProducerID, timeout: timeout, used: now}
}

// fits tells whether n more bytes fit MaxTransactionBytes, after a sweep if they do not.
func (c *txnCoordinator) fits(n int64, now time.Time) bool {
	if c.bytes+n <= c.maxBytes {
		return true
	}
	if now.Sub(c.swept) >= sweepEvery {
		c.swept = now
		for id, t := range c.byID {
			c.expire(t, now)
			if now.Sub(t.used) > txnIDExpiry {
				c.drop(id, t)
			}
		}
	}
	return c.bytes+n <= c.maxBytes
}

// expire aborts t if it has been open longer than its timeout, fencing its producer (the
// epoch moves on), as Kafka's coordinator does.
func (c *txnCoordinator) expire(t *openTxn, now time.Time) {
	if !t.started.IsZero() && now.Sub(t.started) > t.timeout {
		c.clear(t)
		t.epoch++
	}
}

// clear empties t's transaction; the next starts empty.
func (c *txnCoordinator) clear(t *openTxn) {
	c.bytes -= int64(t.bytes)
	t.batches, t.offsets, t.bytes, t.started = nil, nil, 0, time.Time{}
}

func (c *txnCoordinator) drop(id string, t *openTxn) {
	c.clear(t)
	c.bytes -= int64(txnIDBytes + len(id))
	delete(c.byID, id)
}

// hold adds n bytes to t's transaction, or answers the code refusing them.
func (c *txnCoordinator) hold(t *openTxn, n int, now time.Time, tooLarge int16) int16 {
	switch {
	case t.bytes+n > maxTxnBytes:
		return tooLarge
	case !c.fits(int64(n), now):
		return kerr.ThrottlingQuotaExceeded.Code
	}
	if t.started.IsZero() {
		t.started = now
	}
	t.bytes += n
	c.bytes += int64(n)
	return 0
}

// txn returns the open transaction of id if producerID/epoch are its producer's, else the code.
func (c *txnCoordinator) txn(id string, producerID int64, epoch int16) (*openTxn, int16) {
	t := c.byID[id]
	if t == nil {
		return nil, kerr.InvalidProducerIDMapping.Code
	}
	now := time.Now()
	c.expire(t, now)
	if t.producerID != producerID || t.epoch != epoch {
		return nil, kerr.ProducerFenced.Code
	}
	t.used = now
	return t, 0
}

func (c *txnCoordinator) addPartitions(r *kmsg.AddPartitionsToTxnRequest) kmsg.Response {
	resp := kmsg.NewPtrAddPartitionsToTxnResponse()
	resp.SetVersion(r.Version)
	c.mu.Lock()
	_, code := c.txn(r.TransactionalID, r.ProducerID, r.ProducerEpoch)
	c.mu.Unlock()
	for _, t := range r.Topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (c *txnCoordinator) addOffsets(r *kmsg.AddOffsetsToTxnRequest) kmsg.Response {
	resp := kmsg.NewPtrAddOffsetsToTxnResponse()
	resp.SetVersion(r.Version)
	c.mu.Lock()
	_, resp.ErrorCode = c.txn(r.TransactionalID, r.ProducerID, r.ProducerEpoch)
	c.mu.Unlock()
	return resp
}

// produce keeps a transactional produce request's batches for EndTxn; their offsets are not
// known until then, so the answer carries -1 (Kafka clients do not need them to commit).
func (c *txnCoordinator) produce(r *kmsg.ProduceRequest) *kmsg.ProduceResponse {
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(r.Version)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range r.Topics {
		rt := kmsg.ProduceResponseTopic{Topic: t.Topic}
		for _, pt := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition, rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = pt.Partition, -1, -1, -1
			rp.ErrorCode = c.keep(*r.TransactionID, t.Topic, pt.Partition, pt.Records)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (c *txnCoordinator) keep(id, topic string, partition int32, records []byte) int16 {
	batches, err := splitBatches(records)
	if err == nil && partition < 0 {
		err = errorsmod.Wrapf(types.ErrInvalidPartition, "partition %d", partition)
	}
	if err != nil {
		return kafkaCode(err)
	}
	for _, b := range batches {
		if !b.transactional {
			return kerr.InvalidRecord.Code
		}
		t, code := c.txn(id, b.producerID, b.epoch)
		if code == 0 {
			code = c.hold(t, len(b.bytes), time.Now(), kerr.RecordListTooLarge.Code)
		}
		if code != 0 {
			return code
		}
		t.batches = append(t.batches, types.ProduceBatch{Topic: topic, Partition: uint32(partition), RecordBatch: append([]byte(nil), b.bytes...), RecordCount: b.records})
	}
	return 0
}

// txnOffsetCommit keeps a group's offsets for EndTxn, fenced on chain by member and generation.
func (c *txnCoordinator) txnOffsetCommit(r *kmsg.TxnOffsetCommitRequest) kmsg.Response {
	resp := kmsg.NewPtrTxnOffsetCommitResponse()
	resp.SetVersion(r.Version)
	c.mu.Lock()
	t, code := c.txn(r.TransactionalID, r.ProducerID, r.ProducerEpoch)
	if code == 0 {
		msg := &types.MsgCommitOffsets{Member: c.signer.Address(), GroupId: r.Group, Generation: uint64(max(r.Generation, 0)), KafkaMemberId: r.MemberID}
		for _, tp := range r.Topics {
			for _, p := range tp.Partitions {
				md := ""
				if p.Metadata != nil {
					md = *p.Metadata
				}
				msg.Offsets = append(msg.Offsets, types.OffsetCommit{Topic: tp.Topic, Partition: uint32(p.Partition), Offset: uint64(max(p.Offset, 0)), Metadata: md})
			}
		}
		if r.MemberID == "" {
			code = kerr.UnknownMemberID.Code // bftlog commits as a group member
		} else if code = c.hold(t, msg.Size(), time.Now(), kerr.OffsetMetadataTooLarge.Code); code == 0 {
			t.offsets = append(t.offsets, msg)
		}
	}
	c.mu.Unlock()
	for _, tp := range r.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = tp.Topic
		for _, p := range tp.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// endTxn submits a committed transaction as one chain transaction, or drops an aborted one.
func (c *txnCoordinator) endTxn(r *kmsg.EndTxnRequest) kmsg.Response {
	resp := kmsg.NewPtrEndTxnResponse()
	resp.SetVersion(r.Version)
	c.mu.Lock()
	t, code := c.txn(r.TransactionalID, r.ProducerID, r.ProducerEpoch)
	var msgs []sdk.Msg
	if code == 0 {
		if r.Commit {
			if len(t.batches) > 0 {
				msgs = append(msgs, &types.MsgProduce{Producer: c.signer.Producer(), Batches: t.batches})
			}
			for _, o := range t.offsets {
				msgs = append(msgs, o)
			}
		}
		// The next transaction starts empty whatever the outcome.
		c.clear(t)
	}
	c.mu.Unlock()
	resp.ErrorCode = code
	if code == 0 && len(msgs) > 0 {
		if _, err := c.signer.SubmitAndWait(msgs...); err != nil {
			resp.ErrorCode = kafkaCode(err)
		}
	}
	return resp
}

// initProducerID hands out producer IDs for idempotent Kafka producers. The chain keeps each
// id's sequences per account (x/topics/keeper/kafka_producers.go), so gateways of a fleet need
// no coordination: ids are random 62-bit numbers, which two gateways do not hand out twice.
func (s *Server) initProducerID(ctx context.Context, r *kmsg.InitProducerIDRequest) kmsg.Response {
	resp := kmsg.NewPtrInitProducerIDResponse()
	resp.SetVersion(r.Version)
	if r.TransactionalID != nil {
		s.ident(ctx).txns.initProducerID(r, resp)
		return resp
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		resp.ErrorCode = kerr.UnknownServerError.Code
		return resp
	}
	resp.ProducerID = int64(binary.BigEndian.Uint64(b[:]) >> 2)
	return resp
}

// txnOffsetCommit answers TxnOffsetCommit: v6 names topics by ID (topic_id_requests.go).
func (s *Server) txnOffsetCommit(ctx context.Context, r *kmsg.TxnOffsetCommitRequest) kmsg.Response {
	txns := s.ident(ctx).txns
	if r.Version >= 6 {
		return s.txnOffsetCommitByID(ctx, r, txns.txnOffsetCommit)
	}
	return txns.txnOffsetCommit(r)
}
