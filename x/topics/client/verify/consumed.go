package verify

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bftlog/bftlog/x/topics/types"
)

// ConsumedWait bounds how long CheckConsumed waits for records to become provable: the state
// after block H is proven by header H+1, so records a node served from its newest block are
// provable one block later.
const ConsumedWait = 15 * time.Second

// CheckConsumed checks records that were read from the node without proofs (a group
// consumer's poll, say): the same offsets of topic/partition, proven at the newest provable
// height or a recent one (proveRecent), must hold exactly these records. recs must be in
// offset order as the node served them (compacted partitions leave gaps between offsets).
func (c *Client) CheckConsumed(ctx context.Context, topic string, partition uint32, recs []types.Record) (FetchResult, error) {
	if len(recs) == 0 {
		return FetchResult{}, nil
	}
	first := recs[0].Offset
	return c.proveServed(ctx, fmt.Sprintf("records %s/%d from offset %d", topic, partition, first), topic, partition, first, recs[len(recs)-1].Offset+1, recs)
}

// CheckRange checks a fetch answer read from the node without proofs before a consumer moves
// its position to next: recs must be exactly the records at offsets [offset, next), proven at
// the newest provable height or a recent one (proveRecent). A node answering "no records,
// next offset = high watermark" (or any range wider than the records it served) would
// otherwise make the consumer commit past records it never saw. Compacted partitions have
// offsets without records: the proof shows those hold nothing.
func (c *Client) CheckRange(ctx context.Context, topic string, partition uint32, offset, next uint64, recs []types.Record) (FetchResult, error) {
	what := fmt.Sprintf("fetch of %s/%d from offset %d", topic, partition, offset)
	var claim error
	if next < offset {
		claim = fmt.Errorf("the node's next offset %d is before the position", next)
	}
	prev := offset
	for i := 0; claim == nil && i < len(recs); i++ {
		if o := recs[i].Offset; o < prev || o >= next {
			claim = fmt.Errorf("record %d has offset %d, outside [%d, %d) or out of order", i, o, prev, next)
		}
		prev = recs[i].Offset + 1
	}
	if claim != nil {
		h, _ := c.LatestHeight(ctx)
		return FetchResult{Height: h, NextOffset: offset}, &Error{What: what, Height: h, Err: claim}
	}
	if next == offset {
		return FetchResult{NextOffset: offset}, nil
	}
	return c.proveServed(ctx, what, topic, partition, offset, next, recs)
}

// proveServed proves that the records served for [from, end) of topic/partition are exactly
// the proven ones, at the newest provable height or a recent one (proveRecent).
func (c *Client) proveServed(ctx context.Context, what, topic string, partition uint32, from, end uint64, served []types.Record) (FetchResult, error) {
	return c.proveRecent(ctx, func(h int64) (FetchResult, proof, error) {
		res, err := c.Fetch(ctx, h, topic, partition, from, uint32(len(served))+1)
		if err != nil {
			return res, fetchFailure(err, res, from), err
		}
		outcome, err := judge(what, res, served, end)
		if outcome == held {
			res.Records, res.NextOffset = res.Records[:len(served)], end
		}
		return res, outcome, err
	})
}

// proof is how a proof of served records at one height came out.
type proof int

const (
	held proof = iota
	// notYet: the height does not cover the served range, yet agrees with what it covers.
	notYet
	// fewer: the height holds only some of the served records — compaction may have removed
	// the others since the node served them.
	fewer
	// contradicted: the height holds a record in the range the node did not serve, or served
	// differently.
	contradicted
	// failed: the proven read itself failed.
	failed
)

// judge compares the records served for [served[0].Offset or the position, end) with the
// proven read res, which starts at the same offset and holds up to len(served)+1 records.
func judge(what string, res FetchResult, served []types.Record, end uint64) (proof, error) {
	i, n := 0, 0 // n: the proven records in the range
	for _, p := range res.Records {
		if p.Offset >= end {
			break
		}
		n++
		for i < len(served) && served[i].Offset < p.Offset {
			i++
		}
		if i == len(served) || served[i].Offset != p.Offset {
			return contradicted, &Error{What: what, Height: res.Height,
				Err: fmt.Errorf("the node did not serve the record at offset %d (it served up to %d)", p.Offset, end)}
		}
		if !sameRecord(served[i], p) {
			return contradicted, &Error{What: fmt.Sprintf("%s, record at offset %d", what, p.Offset), Height: res.Height,
				Err: fmt.Errorf("the node served a record the validators did not commit")}
		}
	}
	switch {
	case res.NextOffset < end && n == len(res.Records):
		return notYet, &Error{What: what, Height: res.Height,
			Err: fmt.Errorf("the node served %d records up to offset %d but only %d are proven, up to %d", len(served), end, n, res.NextOffset)}
	case n < len(served):
		return fewer, &Error{What: what, Height: res.Height,
			Err: fmt.Errorf("the node served %d records up to offset %d but only %d are proven there", len(served), end, n)}
	}
	return held, nil
}

// fetchFailure is how a proven read from offset that failed judges the served records: a
// proven log start offset past it means retention removed them since they were served (the
// heights before may hold them), a proven high watermark at or before it that they are not
// provable yet; any other failure is final.
func fetchFailure(err error, res FetchResult, offset uint64) proof {
	if !errors.Is(err, types.ErrOffsetOutOfRange) || res.Partition.Topic == "" {
		return failed
	}
	if offset < res.Partition.LogStartOffset {
		return fewer
	}
	return notYet
}

func sameRecord(a, b types.Record) bool {
	x, _ := a.Marshal()
	y, _ := b.Marshal()
	return string(x) == string(y)
}

// proveRecent runs prove at the newest provable height until it holds, waiting up to
// ConsumedWait for served records to become provable. The node served them from some height
// up to the newest provable one plus one, and offsets only lose records over heights
// (compaction, retention; appends go past the high watermark). So a height holding fewer of
// them — compaction removed some since they were served — sends the check to the heights
// before it, newest first, within the last types.RecordHistoryBlocks (whose bytes nodes
// keep), and the first that holds is the answer: it hides nothing, as an offset range
// covered at an earlier height holds every record it holds later. A height holding a record
// the node did not serve is a lie unless the node served from the next height, so that one
// is proven too.
func (c *Client) proveRecent(ctx context.Context, prove func(h int64) (FetchResult, proof, error)) (FetchResult, error) {
	deadline := time.Now().Add(ConsumedWait)
	contradictedAt := int64(-1)
	for {
		res, outcome, err := prove(0)
		switch outcome {
		case held, failed:
			return res, err
		case fewer:
			for h := res.Height - 1; h > 0 && h > res.Height-types.RecordHistoryBlocks; h-- {
				older, outcome, oerr := prove(h)
				switch outcome {
				case held:
					return older, nil
				case contradicted: // no later height held them: a lie, proven here
					return older, oerr
				}
				if outcome != fewer {
					break // before the node served them, or gone from its history
				}
			}
			return res, err
		case contradicted:
			if contradictedAt >= 0 && res.Height > contradictedAt {
				return res, err
			}
			if contradictedAt < 0 {
				contradictedAt = res.Height
			}
		}
		if time.Now().After(deadline) {
			return res, err
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// ConsumerStart proves where a group's consumption of a partition starts, at a height of at
// least minHeight (waiting up to ConsumedWait for it to become provable): the group's committed
// offset, or its proven absence, and the partition at the same height.
func (c *Client) ConsumerStart(ctx context.Context, minHeight int64, group, topic string, partition uint32) (CommittedOffsetResult, PartitionResult, error) {
	deadline := time.Now().Add(ConsumedWait)
	for {
		h, err := c.LatestHeight(ctx)
		if err != nil {
			return CommittedOffsetResult{}, PartitionResult{}, err
		}
		if h >= minHeight {
			off, err := c.CommittedOffset(ctx, h, group, topic, partition)
			if err != nil {
				return off, PartitionResult{Height: h}, err
			}
			p, err := c.Partition(ctx, h, topic, partition)
			return off, p, err
		}
		if time.Now().After(deadline) {
			return CommittedOffsetResult{Height: h}, PartitionResult{Height: h}, &Error{What: fmt.Sprintf("committed offset of group %s for %s/%d", group, topic, partition), Height: h,
				Err: fmt.Errorf("height %d is not provable yet", minHeight)}
		}
		select {
		case <-ctx.Done():
			return CommittedOffsetResult{}, PartitionResult{}, ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}
