package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cosmos/cosmos-sdk/types/query"

	"github.com/bftlog/bftlog/x/topics/types"
)

// maxDescribedProducers bounds what one partition's answer reads from the chain.
const maxDescribedProducers = 1_000

// describeProducers answers each partition's Kafka idempotent producers from chain state (the
// KafkaProducerStates query): producer id, epoch and the last sequence the chain accepted. The
// chain keeps no append time per producer and no open transaction (a Kafka transaction is
// one chain transaction at EndTxn), so the last timestamp, the coordinator epoch and the
// current transaction's start offset are -1, as Kafka answers them unknown.
func (s *Server) describeProducers(ctx context.Context, r *kmsg.DescribeProducersRequest) kmsg.Response {
	resp := kmsg.NewPtrDescribeProducersResponse()
	resp.SetVersion(r.Version)
	for _, t := range r.Topics {
		rt := kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition = p
			if p < 0 {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			res, err := s.query.KafkaProducerStates(ctx, &types.QueryKafkaProducerStatesRequest{Topic: t.Topic, Partition: uint32(p),
				Pagination: &query.PageRequest{Limit: maxDescribedProducers}})
			if err != nil {
				rp.ErrorCode, rp.ErrorMessage = queryCode(err), kmsg.StringPtr(err.Error())
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			for _, st := range res.Producers {
				ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				ap.ProducerID, ap.ProducerEpoch, ap.LastSequence = st.ProducerId, st.Epoch, -1
				if n := len(st.Batches); n > 0 {
					ap.LastSequence = st.Batches[n-1].LastSequence
				}
				ap.LastTimestamp, ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = -1, -1, -1
				rp.ActiveProducers = append(rp.ActiveProducers, ap)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
