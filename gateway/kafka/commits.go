package kafka

import (
	"sync"
	"time"

	"github.com/bftlog/bftlog/x/topics/types"
)

// An OffsetCommit is answered once its transaction is admitted — a node's CheckTx accepted it
// and the gateway's simulation of it on the chain's state passed (fencing by generation and
// member, the group's policy, the offsets' bounds) — not once it is in a block: a consumer
// that commits after every record would otherwise read one record per block. Until the
// transaction's block, OffsetFetch through this gateway answers the admitted offsets (read your
// writes); other gateways answer the chain's. If the transaction then fails in its block (a
// rebalance fenced it between simulation and block) or never lands (the node crashed), the
// chain keeps the offsets committed before it: a consumer resuming there reads again records it
// had read, it never skips one. Transactional commits (TxnOffsetCommit, EndTxn) still wait for
// their block.

// pendingGrace keeps a landed commit in the pending view a little longer: a block's results are
// answered before the node's queries see its state.
const pendingGrace = 2 * time.Second

// pendingCommits is this gateway's view of admitted commits not yet in a block.
type pendingCommits struct {
	mu   sync.Mutex
	next uint64
	by   map[string]map[partitionKey]pendingOffset
}

type pendingOffset struct {
	offset   uint64
	metadata string
	id       uint64 // the commit that set it: a later commit of the partition replaces it
}

func newPendingCommits() *pendingCommits {
	return &pendingCommits{by: map[string]map[partitionKey]pendingOffset{}}
}

// add records an admitted commit's offsets and returns its id, for settle.
func (p *pendingCommits) add(group string, offsets []types.OffsetCommit) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	if p.by[group] == nil {
		p.by[group] = map[partitionKey]pendingOffset{}
	}
	for _, o := range offsets {
		p.by[group][partitionKey{o.Topic, int32(o.Partition)}] = pendingOffset{offset: o.Offset, metadata: o.Metadata, id: p.next}
	}
	return p.next
}

// settle drops commit id's offsets that no later commit replaced: its transaction is in a
// block (the chain answers them now) or failed there (the chain's older offsets stand).
func (p *pendingCommits) settle(group string, id uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, o := range p.by[group] {
		if o.id == id {
			delete(p.by[group], k)
		}
	}
	if len(p.by[group]) == 0 {
		delete(p.by, group)
	}
}

// forget drops a deleted group's pending offsets: its commits can no longer land.
func (p *pendingCommits) forget(group string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.by, group)
}

// forgetPartitions drops a group's pending offsets on partitions whose offsets were deleted.
func (p *pendingCommits) forgetPartitions(group string, parts []types.DeleteGroupOffsetsPartition) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, x := range parts {
		delete(p.by[group], partitionKey{x.Topic, int32(x.Partition)})
	}
	if len(p.by[group]) == 0 {
		delete(p.by, group)
	}
}

// overlay replaces the chain's committed offsets of group with the pending ones.
func (p *pendingCommits) overlay(group string, committed map[partitionKey]types.CommittedOffset) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, o := range p.by[group] {
		committed[k] = types.CommittedOffset{Topic: k.topic, Partition: uint32(k.partition), Offset: o.offset, Metadata: o.metadata}
	}
}

// landing is an admitted commit's wait for its block: nil when the commit waited already.
type landing func() error

// commitAdmitted answers a commit whose transaction was admitted: its offsets enter the pending
// view until its block, which a goroutine waits for.
func (c *coordinator) commitAdmitted(group string, offsets []types.OffsetCommit, land landing) {
	if land == nil {
		return
	}
	id := c.pending.add(group, offsets)
	go func() {
		if err := land(); err != nil {
			c.log("kafka gateway: an acknowledged offset commit of group %q did not land (the chain keeps its earlier offsets; the consumer may read records again): %v", group, err)
			c.pending.settle(group, id)
			return
		}
		time.AfterFunc(pendingGrace, func() { c.pending.settle(group, id) })
	}()
}
