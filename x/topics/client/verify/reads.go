package verify

import (
	"context"
	"fmt"

	rpcclient "github.com/cometbft/cometbft/rpc/client"

	"github.com/bftlog/bftlog/x/topics/types"
)

// Every read returns a result that carries the height it was proven at (the state after block
// Height, committed to by the app hash in header Height+1), set even when the read fails after
// choosing a height, so a caller can prove further reads at the same height.

// TopicResult is a proven topic.
type TopicResult struct {
	Height int64
	Topic  types.Topic
}

// Topic returns the proven topic at height (0: latest provable).
func (c *Client) Topic(ctx context.Context, height int64, name string) (TopicResult, error) {
	h, appHash, err := c.at(ctx, height)
	if err != nil {
		return TopicResult{Height: h}, err
	}
	t, err := c.topic(ctx, h, appHash, name)
	return TopicResult{Height: h, Topic: t}, err
}

func (c *Client) topic(ctx context.Context, h int64, appHash []byte, name string) (types.Topic, error) {
	what := fmt.Sprintf("topic %s", name)
	p, err := c.get(ctx, h, appHash, types.TopicStoreKey(name), what)
	if err != nil {
		return types.Topic{}, err
	}
	if !p.exists {
		return types.Topic{}, fmt.Errorf("%w: %s (proven absent at height %d)", types.ErrUnknownTopic, name, h)
	}
	var t types.Topic
	if err := t.Unmarshal(p.value); err != nil || t.Name != name {
		return types.Topic{}, &Error{What: what, Height: h, Err: fmt.Errorf("proven value is not topic %s (%v)", name, err)}
	}
	return t, nil
}

// PartitionResult is a proven partition: high watermark, log start offset and counts.
type PartitionResult struct {
	Height    int64
	Partition types.Partition
}

// Partition returns one proven partition.
func (c *Client) Partition(ctx context.Context, height int64, topic string, partition uint32) (PartitionResult, error) {
	h, appHash, err := c.at(ctx, height)
	if err != nil {
		return PartitionResult{Height: h}, err
	}
	p, err := c.partition(ctx, h, appHash, topic, partition)
	return PartitionResult{Height: h, Partition: p}, err
}

// PartitionsResult is a proven topic with every one of its partitions, all at one height.
type PartitionsResult struct {
	Height     int64
	Topic      types.Topic
	Partitions []types.Partition
}

// Partitions proves the topic (so its partition count) and then each partition at the same
// height: a node cannot hide a partition by leaving it out.
func (c *Client) Partitions(ctx context.Context, height int64, topic string) (PartitionsResult, error) {
	h, appHash, err := c.at(ctx, height)
	if err != nil {
		return PartitionsResult{Height: h}, err
	}
	t, err := c.topic(ctx, h, appHash, topic)
	if err != nil {
		return PartitionsResult{Height: h}, err
	}
	res := PartitionsResult{Height: h, Topic: t, Partitions: make([]types.Partition, 0, t.Partitions)}
	for i := uint32(0); i < t.Partitions; i++ {
		p, err := c.partition(ctx, h, appHash, topic, i)
		if err != nil {
			return PartitionsResult{Height: h, Topic: t}, err
		}
		res.Partitions = append(res.Partitions, p)
	}
	return res, nil
}

func (c *Client) partition(ctx context.Context, h int64, appHash []byte, topic string, partition uint32) (types.Partition, error) {
	what := fmt.Sprintf("partition %s/%d", topic, partition)
	pr, err := c.get(ctx, h, appHash, types.PartitionStoreKey(topic, partition), what)
	if err != nil {
		return types.Partition{}, err
	}
	if !pr.exists {
		return types.Partition{}, fmt.Errorf("%w: %s (proven absent at height %d)", types.ErrInvalidPartition, what, h)
	}
	var p types.Partition
	if err := p.Unmarshal(pr.value); err != nil || p.Topic != topic || p.Partition != partition {
		return types.Partition{}, &Error{What: what, Height: h, Err: fmt.Errorf("proven value is not %s (%v)", what, err)}
	}
	return p, nil
}

// FetchResult is a proven fetch: Records are exactly the records stored at offsets
// [first requested offset, NextOffset), in order, with nothing left out.
type FetchResult struct {
	Height     int64
	Partition  types.Partition
	Records    []types.Record
	NextOffset uint64
	// Batches is how many stored batches were proven.
	Batches int
}

// Fetch reads up to maxRecords records of one partition from offset, all proven at one height.
// Batches are stored under their last offset, so the batch holding offset N is the first key at
// or after (topic, partition, N): the node proves either that key or its absence together with
// its right neighbour, which is that batch. Offsets between next and that batch's first record
// are proven to hold nothing (compaction removed them): no record in the range can be hidden,
// and the proven high watermark says where the log ends.
func (c *Client) Fetch(ctx context.Context, height int64, topic string, partition uint32, offset uint64, maxRecords uint32) (FetchResult, error) {
	h, appHash, err := c.at(ctx, height)
	if err != nil {
		return FetchResult{Height: h}, err
	}
	p, err := c.partition(ctx, h, appHash, topic, partition)
	if err != nil {
		return FetchResult{Height: h}, err
	}
	res := FetchResult{Height: h, Partition: p, NextOffset: offset}
	if offset < p.LogStartOffset || offset > p.HighWatermark {
		return res, fmt.Errorf("%w: offset %d of %s is outside [log start offset %d, high watermark %d] (proven at height %d)",
			types.ErrOffsetOutOfRange, offset, p.Label(), p.LogStartOffset, p.HighWatermark, h)
	}
	if maxRecords == 0 {
		maxRecords = 500
	}
	next := offset
	for next < p.HighWatermark && uint32(len(res.Records)) < maxRecords {
		what := fmt.Sprintf("batch holding offset %d of %s", next, p.Label())
		pr, err := c.get(ctx, h, appHash, types.BatchStoreKey(topic, partition, next), what)
		if err != nil {
			return res, err
		}
		key, value := types.BatchStoreKey(topic, partition, next), pr.value
		if !pr.exists {
			key, value = pr.nextKey, pr.nextValue
		}
		t, part, last, ok := types.ParseBatchStoreKey(key)
		if !ok || t != topic || part != partition {
			return res, &Error{What: what, Height: h, Err: fmt.Errorf("no batch holds it, yet the proven high watermark is %d", p.HighWatermark)}
		}
		// The records are decoded from the proven batch bytes themselves: their framing, CRC,
		// base offset and record count must match the proven metadata.
		var b types.RecordBatch
		err = b.Unmarshal(value)
		if err == nil {
			// The state commits to the bytes' SHA-256; the bytes come unproven from the
			// node's record store and must match it (CheckStored).
			b.RecordBatch, err = c.recordBytes(ctx, h, topic, partition, b.BaseOffset)
		}
		if err == nil {
			err = b.CheckStored()
		}
		if err != nil || b.LastOffset() != last {
			return res, &Error{What: what, Height: h, Err: fmt.Errorf("stored batch under last offset %d does not decode to one ending there (%v)", last, err)}
		}
		// A batch starting past next is a gap compaction left: the proof shows this batch is
		// the first key at or after next, so no stored batch holds an offset in between.
		recs, err := b.Records()
		if err != nil {
			return res, &Error{What: what, Height: h, Err: fmt.Errorf("stored batch under last offset %d does not decode: %w", last, err)}
		}
		res.Batches++
		// Compacted batches have gaps inside too: records carry their own offsets, bound to
		// the proven SHA-256 with the bytes, increasing and within the batch's span.
		prev, full := b.BaseOffset, false
		for _, r := range recs {
			if r.Offset < prev || r.Offset > last {
				return res, &Error{What: what, Height: h, Err: fmt.Errorf("stored batch under last offset %d holds offset %d out of order", last, r.Offset)}
			}
			prev = r.Offset + 1
			if r.Offset < next {
				continue
			}
			if uint32(len(res.Records)) == maxRecords {
				full = true
				break
			}
			res.Records = append(res.Records, r)
			next = r.Offset + 1
		}
		if !full {
			next = last + 1
		}
	}
	res.NextOffset = next
	return res, nil
}

// CommittedOffsetResult is a group's proven committed offset for one partition; Found is false
// when the proof shows there is none.
type CommittedOffsetResult struct {
	Height int64
	Offset types.CommittedOffset
	Found  bool
}

// CommittedOffset proves a group's committed offset for a partition, or its absence.
func (c *Client) CommittedOffset(ctx context.Context, height int64, group, topic string, partition uint32) (CommittedOffsetResult, error) {
	h, appHash, err := c.at(ctx, height)
	if err != nil {
		return CommittedOffsetResult{Height: h}, err
	}
	what := fmt.Sprintf("committed offset of group %s for %s/%d", group, topic, partition)
	pr, err := c.get(ctx, h, appHash, types.OffsetStoreKey(group, topic, partition), what)
	if err != nil || !pr.exists {
		return CommittedOffsetResult{Height: h}, err
	}
	var o types.CommittedOffset
	if err := o.Unmarshal(pr.value); err != nil || o.GroupId != group || o.Topic != topic || o.Partition != partition {
		return CommittedOffsetResult{Height: h}, &Error{What: what, Height: h, Err: fmt.Errorf("proven value is not that offset (%v)", err)}
	}
	return CommittedOffsetResult{Height: h, Offset: o, Found: true}, nil
}

// recordBytes asks the node for the bytes of the batch at base offset base (the Fetch query at
// height h); they are unproven until checked against the proven record_batch_sha256.
func (c *Client) recordBytes(ctx context.Context, h int64, topic string, partition uint32, base uint64) ([]byte, error) {
	req := types.QueryFetchRequest{Topic: topic, Partition: partition, Offset: base, MaxRecords: 1, MaxBytes: 1, Format: types.FETCH_FORMAT_BATCHES}
	bz, err := req.Marshal()
	if err != nil {
		return nil, err
	}
	res, err := c.rpc.ABCIQueryWithOptions(ctx, "/bftlog.topics.v1.Query/Fetch", bz, rpcclient.ABCIQueryOptions{Height: h})
	if err != nil {
		return nil, err
	}
	if res.Response.Code != 0 {
		return nil, fmt.Errorf("record bytes query failed: %s", res.Response.Log)
	}
	var out types.QueryFetchResponse
	if err := out.Unmarshal(res.Response.Value); err != nil {
		return nil, err
	}
	if len(out.Batches) == 0 || out.Batches[0].BaseOffset != base {
		return nil, fmt.Errorf("the node sent no batch at offset %d", base)
	}
	return out.Batches[0].RecordBatch, nil
}
