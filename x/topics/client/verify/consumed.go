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
// height, must hold exactly these records. recs must be consecutive offsets, in order.
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
