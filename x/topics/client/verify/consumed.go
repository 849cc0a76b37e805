package verify

import (
	"context"
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
// height, must hold exactly these records. recs must be in offset order as the node served
// them (compacted partitions leave gaps between offsets).
func (c *Client) CheckConsumed(ctx context.Context, topic string, partition uint32, recs []types.Record) (FetchResult, error) {
	if len(recs) == 0 {
		return FetchResult{}, nil
	}
	deadline := time.Now().Add(ConsumedWait)
	for {
		res, err := c.Fetch(ctx, 0, topic, partition, recs[0].Offset, uint32(len(recs)))
		if err != nil {
			return res, err
		}
		if len(res.Records) == len(recs) {
			for i := range recs {
				got, _ := recs[i].Marshal()
				proven, _ := res.Records[i].Marshal()
				if string(got) != string(proven) {
					return res, &Error{What: fmt.Sprintf("record %s/%d offset %d", topic, partition, recs[i].Offset), Height: res.Height,
						Err: fmt.Errorf("the node served a record the validators did not commit")}
				}
			}
			return res, nil
		}
		if time.Now().After(deadline) {
			return res, &Error{What: fmt.Sprintf("records %s/%d from offset %d", topic, partition, recs[0].Offset), Height: res.Height,
				Err: fmt.Errorf("the node served %d records but only %d are proven", len(recs), len(res.Records))}
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// CheckRange checks a fetch answer read from the node without proofs before a consumer moves
// its position to next: recs must be exactly the records at offsets [offset, next), proven at
// the newest provable height. A node answering "no records, next offset = high watermark" (or
// any range wider than the records it served) would otherwise make the consumer commit past
// records it never saw. Compacted partitions have offsets without records: the proof shows
// those hold nothing, and the first proven record after the served ones lies at or past next.
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
	deadline := time.Now().Add(ConsumedWait)
	for {
		res, err := c.Fetch(ctx, 0, topic, partition, offset, uint32(len(recs))+1)
		if err != nil {
			return res, err
		}
		covered := len(res.Records) > len(recs) || res.NextOffset >= next
		if len(res.Records) >= len(recs) && covered {
			for i := range recs {
				got, _ := recs[i].Marshal()
				proven, _ := res.Records[i].Marshal()
				if string(got) != string(proven) {
					return res, &Error{What: fmt.Sprintf("record %s/%d offset %d", topic, partition, recs[i].Offset), Height: res.Height,
						Err: fmt.Errorf("the node served a record the validators did not commit (proven: offset %d)", res.Records[i].Offset)}
				}
			}
			if len(res.Records) > len(recs) && res.Records[len(recs)].Offset < next {
				return res, &Error{What: what, Height: res.Height,
					Err: fmt.Errorf("the node moved the position to %d past the record at offset %d it did not serve", next, res.Records[len(recs)].Offset)}
			}
			res.Records, res.NextOffset = res.Records[:len(recs)], next
			return res, nil
		}
		if time.Now().After(deadline) {
			return res, &Error{What: what, Height: res.Height,
				Err: fmt.Errorf("the node served %d records up to offset %d but only %d are proven, up to %d", len(recs), next, len(res.Records), res.NextOffset)}
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
