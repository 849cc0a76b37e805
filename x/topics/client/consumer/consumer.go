// Package consumer is a consumer-group client: it joins a group on chain, reads its assigned
// partitions from the committed offsets, and commits its positions fenced by the generation,
// as a Kafka consumer does with a group coordinator.
package consumer

import (
	"context"
	"errors"
	"fmt"

	"github.com/cosmos/cosmos-sdk/client"

	"github.com/bftlog/bftlog/x/topics/client/txclient"
	"github.com/bftlog/bftlog/x/topics/types"
)

// Record is a consumed record with its place.
type Record struct {
	Topic     string
	Partition uint32
	types.Record
}

type tp struct {
	topic     string
	partition uint32
}

// GroupConsumer is one member of a consumer group.
type GroupConsumer struct {
	clientCtx  client.Context
	signer     *txclient.Signer
	query      types.QueryClient
	group      string
	topics     []string
	generation uint64
	assignment []types.TopicPartitions
	positions  map[tp]uint64
	// dirty are the partitions whose position moved since the last commit.
	dirty map[tp]bool
	// polls rotates the partition each poll starts with.
	polls int
	// prover, when set, proves every position before the consumer takes it.
	prover Prover
}

// Prover proves what a consumer reads from the node (package verifycli implements it with the
// light client). With one, a consumer starts from proven committed offsets and moves a position
// only over records proven to be exactly those of [position, next), so it never commits past a
// record it did not see nor beyond the proven high watermark, whatever the node answers.
type Prover interface {
	// Start proves, at a height of at least minHeight (the join's), the group's committed
	// offset for a partition (found false: none) and the partition itself.
	Start(ctx context.Context, minHeight int64, group, topic string, partition uint32) (committed uint64, found bool, part types.Partition, err error)
	// CheckRange proves that recs are exactly the records at offsets [offset, next).
	CheckRange(ctx context.Context, topic string, partition uint32, offset, next uint64, recs []types.Record) error
	// Partition proves a partition at the newest provable height (its log start offset).
	Partition(ctx context.Context, topic string, partition uint32) (types.Partition, error)
}

// Option configures Join.
type Option func(*GroupConsumer)

// WithProver makes the consumer prove its positions with p.
func WithProver(p Prover) Option { return func(c *GroupConsumer) { c.prover = p } }

// Join joins group as the signer's account, subscribed to topics, and loads the committed
// offsets of the assigned partitions (the log start offset where nothing is committed).
func Join(ctx context.Context, clientCtx client.Context, signer *txclient.Signer, group string, topics []string, opts ...Option) (*GroupConsumer, error) {
	c := &GroupConsumer{clientCtx: clientCtx, signer: signer, query: types.NewQueryClient(clientCtx), group: group, topics: topics}
	for _, o := range opts {
		o(c)
	}
	res, err := signer.SubmitAndWait(&types.MsgJoinGroup{Member: signer.Address(), GroupId: group, Topics: topics})
	if err != nil {
		return nil, err
	}
	joins, err := txclient.Responses[types.MsgJoinGroupResponse](clientCtx, res)
	if err != nil || len(joins) != 1 {
		return nil, fmt.Errorf("join group %s: no join response (%v)", group, err)
	}
	if err := c.adopt(ctx, res.Height, joins[0].Generation, joins[0].Assignment); err != nil {
		return nil, err
	}
	return c, nil
}

// adopt takes a generation's assignment and positions from the committed offsets. A
// partition this member keeps across a single generation step was never owned by anyone else
// in between, so its local position (with any uncommitted progress) stays; every other
// partition starts from the committed offset (proven at a height of at least height, the
// generation's, when the consumer has a prover). Nothing changes unless every query succeeds.
func (c *GroupConsumer) adopt(ctx context.Context, height int64, generation uint64, assignment []types.TopicPartitions) error {
	keep := c.generation != 0 && generation == c.generation+1
	positions, dirty := map[tp]uint64{}, map[tp]bool{}
	committed := map[tp]uint64{}
	if c.prover == nil {
		offs, err := c.query.GroupOffsets(ctx, &types.QueryGroupOffsetsRequest{GroupId: c.group})
		if err != nil {
			return err
		}
		for _, o := range offs.Offsets {
			committed[tp{o.Committed.Topic, o.Committed.Partition}] = o.Committed.Offset
		}
	}
	for _, a := range assignment {
		var parts []types.Partition
		if c.prover == nil {
			res, err := c.query.Partitions(ctx, &types.QueryPartitionsRequest{Name: a.Topic})
			if err != nil {
				return err
			}
			parts = res.Partitions
		}
		for _, p := range a.Partitions {
			key := tp{a.Topic, p}
			if old, retained := c.positions[key]; keep && retained {
				positions[key], dirty[key] = old, c.dirty[key]
				continue
			}
			if c.prover != nil {
				pos, found, part, err := c.prover.Start(ctx, height, c.group, a.Topic, p)
				if err != nil {
					return err
				}
				if !found || pos < part.LogStartOffset {
					pos = part.LogStartOffset
				}
				positions[key] = pos
				continue
			}
			pos, ok := committed[key]
			if int(p) < len(parts) && (!ok || pos < parts[p].LogStartOffset) {
				// Nothing committed, or retention passed it: start at the log start (Kafka's
				// auto.offset.reset=earliest).
				pos = parts[p].LogStartOffset
			}
			positions[key] = pos
		}
	}
	c.generation, c.assignment, c.positions, c.dirty = generation, assignment, positions, dirty
	return nil
}

// Generation is the group generation this member works in.
func (c *GroupConsumer) Generation() uint64 { return c.generation }

// Assignment is this member's partitions in the current generation.
func (c *GroupConsumer) Assignment() []types.TopicPartitions { return c.assignment }

// Poll fetches up to maxRecords from the assigned partitions from the current positions and
// advances them. Each poll starts one partition further along, so a backlog on one partition
// does not starve the others. Positions move only when the poll succeeds, so a caller that drops
// the records of a failed poll never commits past them. A position that retention has passed
// jumps to the log start offset (Kafka's auto.offset.reset=earliest). It returns no records when
// every partition is at its high watermark.
func (c *GroupConsumer) Poll(ctx context.Context, maxRecords uint32) ([]Record, error) {
	var keys []tp
	for _, a := range c.assignment {
		for _, p := range a.Partitions {
			keys = append(keys, tp{a.Topic, p})
		}
	}
	var out []Record
	moved := map[tp]uint64{}
	for i := range keys {
		if uint32(len(out)) >= maxRecords {
			break
		}
		key := keys[(c.polls+i)%len(keys)]
		pos := c.positions[key]
		res, err := FetchRecords(ctx, c.query, &types.QueryFetchRequest{Topic: key.topic, Partition: key.partition, Offset: pos, MaxRecords: maxRecords - uint32(len(out))})
		if err != nil {
			// A query's error reaches us as a gRPC status, without the module's code: whether
			// retention passed the position is read from the partition itself.
			start, perr := c.logStart(ctx, key)
			if perr != nil {
				return nil, err
			}
			if pos < start {
				pos = start
				moved[key] = pos
				res, err = FetchRecords(ctx, c.query, &types.QueryFetchRequest{Topic: key.topic, Partition: key.partition, Offset: pos, MaxRecords: maxRecords - uint32(len(out))})
			}
		}
		if err != nil {
			return nil, err
		}
		// Whole batches come back: keep the poll within maxRecords, the rest is read next poll.
		Truncate(res, maxRecords-uint32(len(out)))
		if c.prover != nil {
			// The records and the next offset come from the node: prove them before the
			// position moves (and can be committed) past them.
			if err := c.prover.CheckRange(ctx, key.topic, key.partition, pos, res.NextOffset, res.Records); err != nil {
				return nil, err
			}
		}
		for _, r := range res.Records {
			out = append(out, Record{Topic: key.topic, Partition: key.partition, Record: r})
		}
		if res.NextOffset != pos {
			moved[key] = res.NextOffset
		}
	}
	if len(keys) > 0 {
		c.polls++
	}
	for key, pos := range moved {
		c.positions[key], c.dirty[key] = pos, true
	}
	return out, nil
}

// FetchRecords fetches the stored batches (FETCH_FORMAT_BATCHES) and decodes them here, so
// the node only reads its store. It answers with every record of those batches from
// req.Offset on (the first batch may start before it, as in Kafka) and NextOffset after the
// last batch: whole batches, so at most req.MaxRecords (0: the node's default) records unless
// the first batch alone holds more. Truncate cuts an answer to a hard cap.
func FetchRecords(ctx context.Context, qc types.QueryClient, req *types.QueryFetchRequest) (*types.QueryFetchResponse, error) {
	breq := *req
	breq.Format = types.FETCH_FORMAT_BATCHES
	res, err := qc.Fetch(ctx, &breq)
	if err != nil {
		return nil, err
	}
	out := &types.QueryFetchResponse{HighWatermark: res.HighWatermark, LogStartOffset: res.LogStartOffset, NextOffset: res.NextOffset}
	for _, b := range res.Batches {
		recs, err := b.Records()
		if err != nil {
			return nil, fmt.Errorf("fetch %s/%d from offset %d: batch at offset %d: %w", req.Topic, req.Partition, req.Offset, b.BaseOffset, err)
		}
		for _, r := range recs {
			if r.Offset >= req.Offset {
				out.Records = append(out.Records, r)
			}
		}
	}
	return out, nil
}

// Truncate keeps at most n of res's records; when it drops some, NextOffset moves to just
// after the last one kept, so the rest is fetched again.
func Truncate(res *types.QueryFetchResponse, n uint32) {
	if uint32(len(res.Records)) <= n {
		return
	}
	res.NextOffset = res.Records[n].Offset
	res.Records = res.Records[:n]
}

// logStart is a partition's log start offset, proven when the consumer has a prover.
func (c *GroupConsumer) logStart(ctx context.Context, key tp) (uint64, error) {
	if c.prover != nil {
		p, err := c.prover.Partition(ctx, key.topic, key.partition)
		return p.LogStartOffset, err
	}
	parts, err := c.query.Partitions(ctx, &types.QueryPartitionsRequest{Name: key.topic})
	if err != nil {
		return 0, err
	}
	if int(key.partition) >= len(parts.Partitions) {
		return 0, fmt.Errorf("topic %s has no partition %d", key.topic, key.partition)
	}
	return parts.Partitions[key.partition].LogStartOffset, nil
}

// ErrRebalanced means the group moved to a new generation: the commit was fenced, and the
// consumer has adopted the new assignment from the committed offsets.
var ErrRebalanced = errors.New("group rebalanced")

// CommitMsg is the commit of every moved position, to send alone or in a transaction with
// other messages (consume-transform-produce). It is nil when nothing moved.
func (c *GroupConsumer) CommitMsg() *types.MsgCommitOffsets {
	msg := &types.MsgCommitOffsets{Member: c.signer.Address(), GroupId: c.group, Generation: c.generation}
	for _, a := range c.assignment {
		for _, p := range a.Partitions {
			key := tp{a.Topic, p}
			if c.dirty[key] {
				msg.Offsets = append(msg.Offsets, types.OffsetCommit{Topic: a.Topic, Partition: p, Offset: c.positions[key]})
			}
		}
	}
	if len(msg.Offsets) == 0 {
		return nil
	}
	return msg
}

// Commit commits the moved positions. When the group has rebalanced it returns ErrRebalanced
// after adopting the new generation (positions from the committed offsets, so records read
// since the last commit are read again by whoever owns them: at-least-once).
func (c *GroupConsumer) Commit(ctx context.Context) error {
	msg := c.CommitMsg()
	if msg == nil {
		return c.Heartbeat(ctx)
	}
	if _, err := c.signer.SubmitAndWait(msg); err != nil {
		if errors.Is(err, types.ErrIllegalGeneration) || errors.Is(err, types.ErrPartitionNotAssigned) {
			if herr := c.Heartbeat(ctx); herr != nil && !errors.Is(herr, ErrRebalanced) {
				return herr
			}
			return ErrRebalanced
		}
		return err
	}
	c.dirty = map[tp]bool{}
	return nil
}

// Heartbeat keeps the member alive; if the generation moved it adopts the new assignment and
// returns ErrRebalanced.
func (c *GroupConsumer) Heartbeat(ctx context.Context) error {
	res, err := c.signer.SubmitAndWait(&types.MsgHeartbeat{Member: c.signer.Address(), GroupId: c.group})
	if err != nil {
		return err
	}
	hbs, err := txclient.Responses[types.MsgHeartbeatResponse](c.clientCtx, res)
	if err != nil || len(hbs) != 1 {
		return fmt.Errorf("heartbeat: no response (%v)", err)
	}
	if hbs[0].Generation == c.generation {
		return nil
	}
	if err := c.adopt(ctx, res.Height, hbs[0].Generation, hbs[0].Assignment); err != nil {
		return err
	}
	return ErrRebalanced
}

// Leave leaves the group; its partitions go to the other members.
func (c *GroupConsumer) Leave(context.Context) error {
	_, err := c.signer.SubmitAndWait(&types.MsgLeaveGroup{Member: c.signer.Address(), GroupId: c.group})
	return err
}
