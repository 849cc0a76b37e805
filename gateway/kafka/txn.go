package kafka

import (
	"crypto/rand"
	"encoding/binary"
	"sync"

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

// maxTxnBytes bounds the record bytes one open transaction holds in the gateway (the chain's
// default max_batch_bytes: the transaction must fit one message).
const maxTxnBytes = 4 << 20

type txnCoordinator struct {
	signer *txclient.Signer
	mu     sync.Mutex
	byID   map[string]*openTxn // by transactional id
}

// openTxn is a transactional producer's current transaction.
type openTxn struct {
	producerID int64
	epoch      int16
	batches    []types.ProduceBatch
	bytes      int
	offsets    []*types.MsgCommitOffsets // one per group
}

func newTxnCoordinator(signer *txclient.Signer) *txnCoordinator {
	return &txnCoordinator{signer: signer, byID: map[string]*openTxn{}}
}

// initProducerID starts (or restarts, fencing the previous producer of the id) a transactional
// producer: a new random producer id, epoch 0, nothing open.
func (c *txnCoordinator) initProducerID(r *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		resp.ErrorCode = kerr.UnknownServerError.Code
		return
	}
	resp.ProducerID, resp.ProducerEpoch = int64(binary.BigEndian.Uint64(b[:])>>2), 0
	c.mu.Lock()
	c.byID[*r.TransactionalID] = &openTxn{producerID: resp.ProducerID}
	c.mu.Unlock()
}

// txn returns the open transaction of id if producerID/epoch are its producer's, else the code.
func (c *txnCoordinator) txn(id string, producerID int64, epoch int16) (*openTxn, int16) {
	t := c.byID[id]
	switch {
	case t == nil:
		return nil, kerr.InvalidProducerIDMapping.Code
	case t.producerID != producerID || t.epoch != epoch:
		return nil, kerr.ProducerFenced.Code
	}
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
		if code != 0 {
			return code
		}
		if t.bytes+len(b.bytes) > maxTxnBytes {
			return kerr.RecordListTooLarge.Code
		}
		t.bytes += len(b.bytes)
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
		} else {
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
				msgs = append(msgs, &types.MsgProduce{Producer: c.signer.Address(), Batches: t.batches})
			}
			for _, o := range t.offsets {
				msgs = append(msgs, o)
			}
		}
		// The next transaction starts empty whatever the outcome.
		c.byID[r.TransactionalID] = &openTxn{producerID: t.producerID, epoch: t.epoch}
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
