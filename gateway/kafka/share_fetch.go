package kafka

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/grpc"

	"github.com/bftlog/bftlog/x/topics/types"
)

// ShareFetch and ShareAcknowledge: a member's acknowledgements and its next records, one
// MsgShareFetch in its gateway's next batch (share_groups.go).

// defaultShareMaxRecords is what a ShareFetch acquires when it does not say (KIP-1206's 500);
// maxShareFetchRecords the most it acquires whatever it says.
const (
	defaultShareMaxRecords = 500
	maxShareFetchRecords   = 2_000
)

// sharePart is one partition of a share request: its name, its topic ID, the acknowledgements it
// carries and the error they got before reaching the chain.
type sharePart struct {
	tp      types.TopicPartition
	id      [16]byte
	acks    []types.ShareAcknowledgement
	ackCode int16
}

// ackBatch is a request's acknowledgement batch, of either request.
type ackBatch struct {
	first, last int64
	types       []int8
}

// shareAcks turns a batch into the chain's acknowledgements: one type for the whole run, or one
// per offset (runs of one type coalesced). A renewal, or a malformed batch, is refused for the
// partition (code).
func shareAcks(tp types.TopicPartition, b ackBatch) ([]types.ShareAcknowledgement, int16) {
	n := b.last - b.first + 1
	if b.first < 0 || n <= 0 || n > types.MaxShareInFlightRecords || len(b.types) == 0 || (len(b.types) != 1 && int64(len(b.types)) != n) {
		return nil, kerr.InvalidRequest.Code
	}
	var out []types.ShareAcknowledgement
	for i := int64(0); i < n; i++ {
		t := b.types[0]
		if len(b.types) > 1 {
			t = b.types[i]
		}
		if t < 0 || t > types.ShareAckReject { // 4 (renew the lock) is not served
			return nil, kerr.InvalidRequest.Code
		}
		o := uint64(b.first + i)
		if k := len(out); k > 0 && out[k-1].Type == uint32(t) && out[k-1].LastOffset+1 == o {
			out[k-1].LastOffset = o
			continue
		}
		out = append(out, types.ShareAcknowledgement{Topic: tp.Topic, Partition: tp.Partition, FirstOffset: o, LastOffset: o, Type: uint32(t)})
	}
	return out, 0
}

// shareCode maps a MsgShareFetch partition code to Kafka's.
func shareCode(code uint32) int16 {
	switch code {
	case 0, types.ErrPartitionNotAssigned.ABCICode():
		return 0 // dealt to another member since: nothing for this one, its heartbeat says why
	case types.ErrUnknownMember.ABCICode():
		return kerr.UnknownMemberID.Code
	case types.ErrInvalidRecordState.ABCICode():
		return kerr.InvalidRecordState.Code
	case types.ErrUnknownTopic.ABCICode():
		return kerr.UnknownTopicOrPartition.Code
	case types.ErrGroupAuthorization.ABCICode():
		return kerr.GroupAuthorizationFailed.Code
	case types.ErrUnknownGroup.ABCICode():
		return kerr.GroupIDNotFound.Code
	case types.ErrInvalidRequest.ABCICode():
		return kerr.InvalidRequest.Code
	}
	return kerr.UnknownServerError.Code
}

func newFetchTag() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// nameShareTopic resolves a request's topic ID; found false for an ID no topic has.
func (s *Server) nameShareTopic(ctx context.Context, id [16]byte) (string, bool, error) {
	t, found, err := s.topicByID(ctx, id)
	return t.Name, found, err
}

func (s *Server) shareFetch(ctx context.Context, r *kmsg.ShareFetchRequest) kmsg.Response {
	resp := kmsg.NewPtrShareFetchResponse()
	resp.SetVersion(r.Version)
	if r.GroupID == nil || r.MemberID == nil || *r.GroupID == "" || *r.MemberID == "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	group, member := *r.GroupID, *r.MemberID
	var parts []sharePart
	var add, forget []types.TopicPartition
	for _, t := range r.Topics {
		name, found, err := s.nameShareTopic(ctx, t.TopicID)
		if err != nil {
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp
		}
		for _, p := range t.Partitions {
			sp := sharePart{tp: types.TopicPartition{Topic: name, Partition: uint32(max(p.Partition, 0))}, id: t.TopicID}
			if !found || p.Partition < 0 {
				sp.ackCode = kerr.UnknownTopicID.Code
			} else {
				add = append(add, sp.tp)
				for _, b := range p.AcknowledgementBatches {
					acks, code := shareAcks(sp.tp, ackBatch{b.FirstOffset, b.LastOffset, b.AcknowledgeTypes})
					sp.acks, sp.ackCode = append(sp.acks, acks...), max(sp.ackCode, code)
				}
				if sp.ackCode != 0 {
					sp.acks = nil // all or none, as the chain takes a partition's
				}
			}
			parts = append(parts, sp)
		}
	}
	for _, t := range r.ForgottenTopicsData {
		if name, found, err := s.nameShareTopic(ctx, t.TopicID); err == nil && found {
			for _, p := range t.Partitions {
				forget = append(forget, types.TopicPartition{Topic: name, Partition: uint32(max(p, 0))})
			}
		}
	}
	id := s.ident(ctx)
	session, code := id.shares.session(group, member, r.ShareSessionEpoch, add, forget)
	if code != 0 {
		resp.ErrorCode = code
		return resp
	}
	if r.ShareSessionEpoch == 0 {
		for i := range parts {
			if len(parts[i].acks) > 0 { // a new session has delivered nothing yet
				parts[i].acks, parts[i].ackCode = nil, kerr.InvalidShareSessionEpoch.Code
			}
		}
	}
	msg := &types.MsgShareFetch{Owner: id.groups.chain.owner(), GroupId: group, MemberId: member, Tag: newFetchTag()}
	for _, p := range parts {
		msg.Acknowledgements = append(msg.Acknowledgements, p.acks...)
	}
	acquiring := r.ShareSessionEpoch != -1 && !r.IsRenewAck && len(session) > 0
	if acquiring {
		maxRecords := int(r.MaxRecords)
		if maxRecords <= 0 {
			maxRecords = defaultShareMaxRecords
		}
		// What one fetch acquires is read into one answer, and locked from the other members.
		maxRecords = min(maxRecords, maxShareFetchRecords)
		per := uint32((maxRecords + len(session) - 1) / len(session))
		for _, tp := range sortedParts(session) {
			msg.Acquire = append(msg.Acquire, types.ShareAcquire{Topic: tp.Topic, Partition: tp.Partition, MaxRecords: per})
		}
	}
	if len(msg.Acknowledgements) == 0 && acquiring {
		// Nothing to acknowledge: wait, on the chain's state and without a transaction, until
		// one of the member's partitions has a record to hand out.
		if !s.awaitShareRecords(ctx, group, member, session, time.Duration(r.MaxWaitMillis)*time.Millisecond) {
			msg.Acquire = nil
		}
	}
	var res *types.MsgShareFetchResponse
	if len(msg.Acknowledgements) > 0 || len(msg.Acquire) > 0 {
		// Refused here what the chain would refuse for the whole message, so it never costs the
		// other members' fetches their batch.
		if err := msg.Validate(); err != nil {
			resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error())
			return resp
		}
		var err error
		if res, err = id.shares.fetch(ctx, msg); err != nil {
			resp.ErrorCode = kafkaCode(err)
			return resp
		}
		resp.AcquisitionLockTimeoutMillis = int32(min(res.LockDurationMs, 1<<31-1))
	} else {
		resp.AcquisitionLockTimeoutMillis = types.DefaultShareRecordLockDurationMs
	}
	s.shareFetchResponse(ctx, resp, parts, res, r.MaxBytes)
	return resp
}

// shareFetchResponse answers each partition of the request, and each the chain acquired records
// on, with its codes, its acquired runs and the record batches that hold them.
func (s *Server) shareFetchResponse(ctx context.Context, resp *kmsg.ShareFetchResponse, parts []sharePart, res *types.MsgShareFetchResponse, maxBytes int32) {
	results := map[types.TopicPartition]types.SharePartitionResult{}
	var order []types.TopicPartition
	for _, p := range parts {
		if _, ok := results[p.tp]; !ok {
			order = append(order, p.tp)
			results[p.tp] = types.SharePartitionResult{}
		}
	}
	if res != nil {
		for _, pr := range res.Partitions {
			tp := types.TopicPartition{Topic: pr.Topic, Partition: pr.Partition}
			if _, ok := results[tp]; !ok {
				order = append(order, tp)
			}
			results[tp] = pr
		}
	}
	ackCodes := map[types.TopicPartition]int16{}
	for _, p := range parts {
		ackCodes[p.tp] = max(ackCodes[p.tp], p.ackCode)
	}
	topics := map[string]int{}
	budget := int(max(maxBytes, 1<<20))
	for _, tp := range order {
		pr := results[tp]
		t, found, err := s.topic(ctx, tp.Topic)
		if err != nil || !found {
			continue
		}
		rp := kmsg.NewShareFetchResponseTopicPartition()
		rp.Partition = int32(tp.Partition)
		rp.ErrorCode = shareCode(pr.AcquireCode)
		rp.AcknowledgeErrorCode = ackCodes[tp]
		if rp.AcknowledgeErrorCode == 0 {
			rp.AcknowledgeErrorCode = shareCode(pr.AckCode)
		}
		rp.Records = []byte{}
		for _, a := range pr.Acquired {
			ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
			ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = int64(a.FirstOffset), int64(a.LastOffset), int16(min(a.DeliveryCount, 1<<15-1))
			rp.AcquiredRecords = append(rp.AcquiredRecords, ar)
		}
		if len(pr.Acquired) > 0 {
			batches, err := s.shareBatches(ctx, tp, pr.Acquired, budget)
			if err != nil {
				// The records are acquired but cannot be read now: none are answered, and the
				// locks bring them back to the group.
				rp.ErrorCode, rp.AcquiredRecords = kerr.UnknownServerError.Code, nil
			} else {
				rp.Records = batches
			}
		}
		i, ok := topics[tp.Topic]
		if !ok {
			rt := kmsg.NewShareFetchResponseTopic()
			rt.TopicID = s.topicIDs.learn(t)
			resp.Topics = append(resp.Topics, rt)
			i = len(resp.Topics) - 1
			topics[tp.Topic] = i
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
}

// shareBatches reads the stored record batches holding the acquired runs, each batch once.
func (s *Server) shareBatches(ctx context.Context, tp types.TopicPartition, acquired []types.ShareRange, budget int) ([]byte, error) {
	var out []byte
	next := uint64(0) // the first offset not yet covered by a batch in out
	for _, a := range acquired {
		from := max(a.FirstOffset, next)
		for from <= a.LastOffset && len(out) < budget {
			res, err := s.query.Fetch(ctx, &types.QueryFetchRequest{Topic: tp.Topic, Partition: tp.Partition, Offset: from,
				MaxBytes: uint64(budget - len(out)), MaxRecords: uint32(min(a.LastOffset-from+1, maxFetchRecords)), Format: types.FETCH_FORMAT_BATCHES},
				grpc.MaxCallRecvMsgSize(maxFetchAnswer))
			if err != nil {
				return nil, err
			}
			progressed := false
			for _, b := range res.Batches {
				if b.BaseOffset > a.LastOffset {
					break
				}
				// A batch ends at its last offset, which compaction keeps though it drops records
				// (its record count no longer says where it ends).
				end := b.LastOffset() + 1
				if end <= next {
					continue
				}
				out = append(out, b.RecordBatch...)
				next, from, progressed = end, end, true
			}
			if !progressed {
				break // the rest of the run was compacted or deleted away: the client acknowledges the gap
			}
		}
	}
	return out, nil
}

// awaitShareRecords waits up to wait, polling the chain's state, until one of the session's
// partitions dealt to member has a record to hand out (a new one below the high watermark, or
// one released); false when none came.
func (s *Server) awaitShareRecords(ctx context.Context, group, member string, session map[types.TopicPartition]bool, wait time.Duration) bool {
	deadline := time.Now().Add(min(max(wait, 0), 30*time.Second))
	for {
		if s.shareRecordsReady(ctx, group, member, session) {
			return true
		}
		if time.Now().Add(sharePollInterval).After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(sharePollInterval):
		}
	}
}

// sharePollInterval is how often an idle share fetch reads the chain's state (three queries):
// a fifth of a block, not every 50 ms for each idle consumer.
const sharePollInterval = 200 * time.Millisecond

func (s *Server) shareRecordsReady(ctx context.Context, group, member string, session map[types.TopicPartition]bool) bool {
	st, err := s.shareGroupState(ctx, group)
	m := findShareMember(st, member)
	if err != nil || m == nil {
		return true // let the chain answer why
	}
	sps, err := s.query.SharePartitions(ctx, &types.QuerySharePartitionsRequest{GroupId: group})
	if err != nil {
		return true
	}
	state := map[types.TopicPartition]types.SharePartition{}
	for _, sp := range sps.Partitions {
		state[types.TopicPartition{Topic: sp.Topic, Partition: sp.Partition}] = sp
	}
	assigned := types.NewPartitionSet(m.Assigned)
	for tp := range session {
		if !assigned[tp] {
			continue
		}
		sp, ok := state[tp]
		if !ok {
			return true
		}
		for _, r := range sp.Ranges {
			if r.State == types.SHARE_RECORD_STATE_AVAILABLE {
				return true
			}
		}
		if sp.EndOffset-sp.StartOffset >= types.MaxShareInFlightRecords {
			continue
		}
		res, err := s.query.Partitions(ctx, &types.QueryPartitionsRequest{Name: tp.Topic})
		if err != nil {
			return true
		}
		for _, p := range res.Partitions {
			if p.Partition == tp.Partition && p.HighWatermark > sp.EndOffset {
				return true
			}
		}
	}
	return false
}

func (s *Server) shareAcknowledge(ctx context.Context, r *kmsg.ShareAcknowledgeRequest) kmsg.Response {
	resp := kmsg.NewPtrShareAcknowledgeResponse()
	resp.SetVersion(r.Version)
	if r.GroupID == nil || r.MemberID == nil || *r.GroupID == "" || *r.MemberID == "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	if r.ShareSessionEpoch == 0 {
		resp.ErrorCode = kerr.InvalidShareSessionEpoch.Code // acknowledgements need a session
		return resp
	}
	group, member := *r.GroupID, *r.MemberID
	id := s.ident(ctx)
	msg := &types.MsgShareFetch{Owner: id.groups.chain.owner(), GroupId: group, MemberId: member}
	var parts []sharePart
	for _, t := range r.Topics {
		name, found, err := s.nameShareTopic(ctx, t.TopicID)
		if err != nil {
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp
		}
		for _, p := range t.Partitions {
			sp := sharePart{tp: types.TopicPartition{Topic: name, Partition: uint32(max(p.Partition, 0))}, id: t.TopicID}
			if !found || p.Partition < 0 {
				sp.ackCode = kerr.UnknownTopicID.Code
			} else {
				for _, b := range p.AcknowledgementBatches {
					acks, code := shareAcks(sp.tp, ackBatch{b.FirstOffset, b.LastOffset, b.AcknowledgeTypes})
					sp.acks, sp.ackCode = append(sp.acks, acks...), max(sp.ackCode, code)
				}
				if r.IsRenewAck {
					sp.ackCode = kerr.InvalidRequest.Code
				}
				if sp.ackCode == 0 {
					msg.Acknowledgements = append(msg.Acknowledgements, sp.acks...)
				}
			}
			parts = append(parts, sp)
		}
	}
	if _, code := id.shares.session(group, member, r.ShareSessionEpoch, nil, nil); code != 0 {
		resp.ErrorCode = code
		return resp
	}
	var res *types.MsgShareFetchResponse
	if len(msg.Acknowledgements) > 0 {
		if err := msg.Validate(); err != nil {
			resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error())
			return resp
		}
		var err error
		if res, err = id.shares.fetch(ctx, msg); err != nil {
			resp.ErrorCode = kafkaCode(err)
			return resp
		}
	}
	codes := map[types.TopicPartition]uint32{}
	if res != nil {
		for _, pr := range res.Partitions {
			codes[types.TopicPartition{Topic: pr.Topic, Partition: pr.Partition}] = pr.AckCode
		}
	}
	topics := map[[16]byte]int{}
	for _, p := range parts {
		rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
		rp.Partition, rp.ErrorCode = int32(p.tp.Partition), p.ackCode
		if rp.ErrorCode == 0 {
			rp.ErrorCode = shareCode(codes[p.tp])
		}
		i, ok := topics[p.id]
		if !ok {
			rt := kmsg.NewShareAcknowledgeResponseTopic()
			rt.TopicID = p.id
			resp.Topics = append(resp.Topics, rt)
			i = len(resp.Topics) - 1
			topics[p.id] = i
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	return resp
}

func sortedParts(set map[types.TopicPartition]bool) []types.TopicPartition {
	list := types.PartitionSet(set).List()
	var out []types.TopicPartition
	for _, tp := range list {
		for _, p := range tp.Partitions {
			out = append(out, types.TopicPartition{Topic: tp.Topic, Partition: p})
		}
	}
	return out
}
