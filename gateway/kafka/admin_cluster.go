package kafka

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cosmos/cosmos-sdk/types/query"

	"github.com/bftlog/bftlog/x/topics/types"
)

// The cluster as Kafka's admin tools see it: one broker (this gateway) leading every partition
// of every topic, with one log directory holding what the chain stores.

// authorizedOperationsOmitted is Kafka's "not requested" for authorized operations.
const authorizedOperationsOmitted = -2147483648

// logDir names the one log directory: the chain's record store.
const logDir = "bftlog:records"

func (s *Server) describeCluster(r *kmsg.DescribeClusterRequest) kmsg.Response {
	resp := kmsg.NewPtrDescribeClusterResponse()
	resp.SetVersion(r.Version)
	resp.EndpointType = r.EndpointType
	if r.Version >= 1 && r.EndpointType != 1 { // 1: brokers; a gateway has no controllers
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		resp.ErrorMessage = kmsg.StringPtr("a gateway answers for brokers only (endpoint type 1)")
		return resp
	}
	resp.ClusterID, resp.ControllerID = clusterID, brokerID
	b := kmsg.NewDescribeClusterResponseBroker()
	b.NodeID, b.Host, b.Port = brokerID, s.host, s.port
	resp.Brokers = []kmsg.DescribeClusterResponseBroker{b}
	resp.ClusterAuthorizedOperations = authorizedOperationsOmitted
	return resp
}

// offsetForLeaderEpoch answers as a log whose leader epoch never changes (0): the end offset of
// any epoch at or after 0 is the high watermark, so a client checking for truncation finds none.
// Metadata gives no leader epochs (-1), so clients rarely ask.
func (s *Server) offsetForLeaderEpoch(ctx context.Context, r *kmsg.OffsetForLeaderEpochRequest) kmsg.Response {
	resp := kmsg.NewPtrOffsetForLeaderEpochResponse()
	resp.SetVersion(r.Version)
	for _, t := range r.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		parts, err := s.query.Partitions(ctx, &types.QueryPartitionsRequest{Name: t.Topic})
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition, rp.LeaderEpoch, rp.EndOffset = p.Partition, -1, -1
			switch {
			case err != nil:
				rp.ErrorCode = queryCode(err)
			case p.Partition < 0 || int(p.Partition) >= len(parts.Partitions):
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case r.Version >= 2 && p.CurrentLeaderEpoch > 0:
				rp.ErrorCode = kerr.UnknownLeaderEpoch.Code // newer than any this log had
			case p.LeaderEpoch >= 0:
				rp.LeaderEpoch, rp.EndOffset = 0, int64(parts.Partitions[p.Partition].HighWatermark)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// describeLogDirs answers each partition's stored bytes (the record batches as stored).
func (s *Server) describeLogDirs(ctx context.Context, r *kmsg.DescribeLogDirsRequest) kmsg.Response {
	resp := kmsg.NewPtrDescribeLogDirsResponse()
	resp.SetVersion(r.Version)
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir, dir.TotalBytes, dir.UsableBytes = logDir, -1, -1
	want := map[string][]int32{}
	var names []string
	if r.Topics == nil { // every topic
		res, err := s.query.Topics(ctx, &types.QueryTopicsRequest{Pagination: &query.PageRequest{Limit: 10_000}})
		if err != nil {
			dir.ErrorCode = kerr.KafkaStorageError.Code
		} else {
			for _, t := range res.Topics {
				names = append(names, t.Name)
			}
		}
	}
	for _, t := range r.Topics {
		if _, ok := want[t.Topic]; !ok {
			names = append(names, t.Topic)
		}
		want[t.Topic] = append(want[t.Topic], t.Partitions...)
	}
	for _, name := range names {
		parts, err := s.query.Partitions(ctx, &types.QueryPartitionsRequest{Name: name})
		if err != nil {
			continue // Kafka leaves out what the directory does not hold
		}
		dt := kmsg.NewDescribeLogDirsResponseDirTopic()
		dt.Topic = name
		for _, p := range parts.Partitions {
			if ps, ok := want[name]; ok && !slices.Contains(ps, int32(p.Partition)) {
				continue
			}
			dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			dp.Partition, dp.Size = int32(p.Partition), int64(p.ByteCount)
			dt.Partitions = append(dt.Partitions, dp)
		}
		dir.Topics = append(dir.Topics, dt)
	}
	resp.Dirs = []kmsg.DescribeLogDirsResponseDir{dir}
	return resp
}

// describeUserSCRAMCredentials lists the gateway's users and their SCRAM mechanisms (never a
// salt or key).
func (s *Server) describeUserSCRAMCredentials(r *kmsg.DescribeUserSCRAMCredentialsRequest) kmsg.Response {
	resp := kmsg.NewPtrDescribeUserSCRAMCredentialsResponse()
	resp.SetVersion(r.Version)
	var names []string
	if r.Users == nil {
		for name := range s.users {
			names = append(names, name)
		}
		slices.Sort(names)
	}
	for _, u := range r.Users {
		names = append(names, u.Name)
	}
	for _, name := range names {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = name
		if s.users[name] == nil {
			res.ErrorCode = kerr.ResourceNotFound.Code
			res.ErrorMessage = kmsg.StringPtr("no gateway user " + name)
		} else {
			for _, mech := range []int8{1, 2} { // SCRAM-SHA-256, SCRAM-SHA-512
				ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				ci.Mechanism, ci.Iterations = mech, scramIterations
				res.CredentialInfos = append(res.CredentialInfos, ci)
			}
		}
		resp.Results = append(resp.Results, res)
	}
	return resp
}
