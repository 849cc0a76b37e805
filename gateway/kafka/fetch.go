package kafka

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/grpc"

	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// fetch reads each requested partition from chain state and, while fewer than MinBytes are
// ready, waits for new blocks up to MaxWaitMillis, as a broker waits for new appends. What the
// answer holds stays counted against the connection's bytes until it is sent.
func (s *Server) fetch(ctx context.Context, r *kmsg.FetchRequest) kmsg.Response {
	deadline := time.Now().Add(time.Duration(r.MaxWaitMillis) * time.Millisecond)
	answer := answerOf(ctx)
	codes, failed := s.fetchTopicsByID(ctx, r)
	for {
		resp, bytes, held := s.fetchOnce(ctx, r, codes, answer.conn())
		if bytes >= int(max(r.MinBytes, 1)) || r.MinBytes <= 0 || failed || !time.Now().Before(deadline) || ctx.Err() != nil {
			answer.keep(held)
			return resp
		}
		answer.conn().give(held)
		select {
		case <-ctx.Done():
			return resp
		case <-time.After(min(100*time.Millisecond, time.Until(deadline))):
		}
	}
}

// fetchOnce reads each partition once (a partition named again is answered once, as by a
// broker), within the request's max bytes and MaxFetchBytes; each partition asks the node for
// no more than cb can hold, and what the answer holds is returned. A topic whose entry in codes
// is not 0 (an unknown topic ID) is answered with that code in every partition.
func (s *Server) fetchOnce(ctx context.Context, r *kmsg.FetchRequest, codes []int16, cb *connBytes) (*kmsg.FetchResponse, int, grant) {
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(r.Version)
	total := 0
	budget := int(orDefault(s.cfg.MaxFetchBytes, DefaultMaxFetchBytes))
	if r.MaxBytes > 0 {
		budget = min(budget, int(r.MaxBytes))
	}
	var held grant
	seen := map[partitionKey]bool{}
	for ti, t := range r.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		if ti < len(codes) && codes[ti] != 0 {
			for _, p := range t.Partitions {
				rp := kmsg.NewFetchResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.HighWatermark, rp.RecordBatches = p.Partition, codes[ti], -1, []byte{}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		for _, p := range t.Partitions {
			if seen[partitionKey{t.Topic, p.Partition}] {
				continue
			}
			seen[partitionKey{t.Topic, p.Partition}] = true
			// An empty record set, not a null one: librdkafka rejects null.
			// From the constructor: its -1 defaults keep the v12 tagged fields (diverging epoch,
			// current leader, snapshot) out of the response.
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition, rp.RecordBatches = p.Partition, []byte{}
			g := cb.takeUpTo(int64(max(min(int(p.PartitionMaxBytes), budget-total), 0)))
			if p.Partition < 0 || p.FetchOffset < 0 {
				rp.ErrorCode = kerr.OffsetOutOfRange.Code
			} else if g.n > 0 {
				// Whole stored batches, as produced (compressed as they came): the first may
				// start before the fetch offset, and clients skip those records, as with Kafka.
				res, err := s.query.Fetch(ctx, &types.QueryFetchRequest{Topic: t.Topic, Partition: uint32(p.Partition), Offset: uint64(p.FetchOffset),
					MaxBytes: uint64(g.n), MaxRecords: maxFetchRecords, Format: types.FETCH_FORMAT_BATCHES}, grpc.MaxCallRecvMsgSize(maxFetchAnswer))
				if err != nil {
					rp.ErrorCode = s.fetchCode(ctx, t.Topic, p.Partition, p.FetchOffset, err)
				} else {
					rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = int64(res.HighWatermark), int64(res.HighWatermark), int64(res.LogStartOffset)
					if r.Version < 10 && holdsZstd(res.Batches) {
						// As Kafka: a client fetching below v10 cannot read zstd.
						rp.ErrorCode = kerr.UnsupportedCompressionType.Code
					} else {
						rp.RecordBatches = appendBatches(rp.RecordBatches, res.Batches, total, budget)
						g = holdBatches(cb, g, &rp)
						total += len(rp.RecordBatches)
					}
				}
			}
			held = held.plus(cb.trim(g, int64(len(rp.RecordBatches))))
			rt.Partitions = append(rt.Partitions, rp)
		}
		if len(rt.Partitions) > 0 || len(t.Partitions) == 0 {
			resp.Topics = append(resp.Topics, rt)
		}
	}
	return resp, total, held
}

// holdBatches extends g to a first batch larger than it (the node sends one whatever the
// limits, so the client makes progress), or drops the batches when the connection cannot hold
// them now: the client asks again.
func holdBatches(cb *connBytes, g grant, rp *kmsg.FetchResponseTopicPartition) grant {
	extra := int64(len(rp.RecordBatches)) - g.n
	if extra <= 0 {
		return g
	}
	more := cb.takeUpTo(extra)
	if more.n < extra {
		cb.trim(more, 0)
		rp.RecordBatches = []byte{}
		return g
	}
	return g.plus(more)
}

// maxFetchRecords is the most records one partition's fetch asks for (the chain's own cap).
const maxFetchRecords = 10_000

// appendBatches appends the stored batches' bytes to out while the response (total bytes so
// far) stays within budget. The chain returns a partition's first batch whatever its size
// (past it, within the partition's max bytes); it is kept when it fits the budget or when the
// response is still empty, so a batch larger than the client's limits is still delivered, as
// Kafka does for the first batch of a fetch (KIP-74).
func appendBatches(out []byte, batches []types.RecordBatch, total, budget int) []byte {
	for _, b := range batches {
		if total+len(out) > 0 && total+len(out)+len(b.RecordBatch) > budget {
			break
		}
		out = append(out, b.RecordBatch...)
	}
	return out
}

// holdsZstd tells whether any of the stored batches is compressed with zstd.
func holdsZstd(batches []types.RecordBatch) bool {
	for _, b := range batches {
		if kbatch.RecordBatchCompression(b.RecordBatch) == kbatch.CompressionZstd {
			return true
		}
	}
	return false
}

// fetchCode is Kafka's code for a failed fetch. A node serving queries on its RPC endpoint
// answers an offset outside the log with the gRPC code Unknown, so such an error is checked
// against the partition's bounds: outside [log start offset, high watermark] is
// OFFSET_OUT_OF_RANGE, which makes clients reset their position.
func (s *Server) fetchCode(ctx context.Context, topic string, partition int32, offset int64, err error) int16 {
	code := queryCode(err)
	if code != kerr.UnknownServerError.Code {
		return code
	}
	res, perr := s.query.Partitions(ctx, &types.QueryPartitionsRequest{Name: topic})
	if perr != nil || int(partition) >= len(res.Partitions) {
		return code
	}
	if lp := res.Partitions[partition]; uint64(offset) < lp.LogStartOffset || uint64(offset) > lp.HighWatermark {
		return kerr.OffsetOutOfRange.Code
	}
	return code
}
