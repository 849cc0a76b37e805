package kafka

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cosmos/cosmos-sdk/client"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/client/txclient"
	"github.com/bftlog/bftlog/x/topics/types"
)

// KIP-932 share groups (ShareGroupHeartbeat 76, ShareGroupDescribe 77, ShareFetch 78,
// ShareAcknowledge 79) over the chain's share groups (x/topics/keeper/share_groups.go). Which
// record goes to which member is decided on chain, so two gateways never hand one record to two
// members: a ShareFetch becomes a MsgShareFetch (acknowledge, then acquire) and the gateway
// answers with the acquired records read back from chain state. One gateway's fetches within
// shareLinger go to the chain as one transaction. A fetch with nothing to acknowledge and
// nothing to acquire waits on the chain's state, without a transaction.

var errShareAnswers = errors.New("the share fetch transaction's answers do not match its messages")

// shareLinger is how long a share fetch waits for others to share its transaction.
const shareLinger = 20 * time.Millisecond

// maxShareBatch bounds the fetches in one transaction.
const maxShareBatch = 64

// maxShareSessions bounds the share sessions one identity keeps; sessions idle for
// shareSessionIdle are dropped first.
const (
	maxShareSessions = 1_000
	shareSessionIdle = time.Minute
)

// shareCoordinator is one identity's share sessions and its batch of fetches to the chain.
type shareCoordinator struct {
	signer    shareSigner // nil without a key
	clientCtx client.Context
	ops       chan *shareOp
	stop      chan struct{}
	done      chan struct{}

	mu       sync.Mutex
	sessions map[[2]string]*shareSession // by (group, member)
}

// shareSigner sends a transaction and waits for its block (*txclient.Signer).
type shareSigner interface {
	Address() string
	SubmitAndWait(msgs ...sdk.Msg) (*sdk.TxResponse, error)
}

// shareSession is Kafka's share session: the partitions a member fetches and the epoch its
// next request must carry.
type shareSession struct {
	epoch int32
	parts map[types.TopicPartition]bool
	used  time.Time
}

type shareOp struct {
	msg  *types.MsgShareFetch
	done chan shareResult
}

type shareResult struct {
	res *types.MsgShareFetchResponse
	err error
}

func newShareCoordinator(clientCtx client.Context, signer *txclient.Signer) *shareCoordinator {
	c := &shareCoordinator{clientCtx: clientCtx, ops: make(chan *shareOp, maxShareBatch), stop: make(chan struct{}), done: make(chan struct{}),
		sessions: map[[2]string]*shareSession{}}
	if signer != nil {
		c.signer = signer
	}
	go c.batches()
	return c
}

func (c *shareCoordinator) close() {
	close(c.stop)
	<-c.done
}

// fetch sends msg in the next batch and waits for its result.
func (c *shareCoordinator) fetch(ctx context.Context, msg *types.MsgShareFetch) (*types.MsgShareFetchResponse, error) {
	if c.signer == nil {
		return nil, errNoSigner
	}
	op := &shareOp{msg: msg, done: make(chan shareResult, 1)}
	select {
	case c.ops <- op:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-op.done:
		return r.res, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// batches sends the fetches that arrive within shareLinger of each other as one transaction, one
// transaction at a time: a member's acknowledgements and acquisitions land in the order sent.
func (c *shareCoordinator) batches() {
	defer close(c.done)
	for {
		var batch []*shareOp
		select {
		case <-c.stop:
			return
		case op := <-c.ops:
			batch = append(batch, op)
		}
		linger := time.NewTimer(shareLinger)
	collect:
		for len(batch) < maxShareBatch {
			select {
			case op := <-c.ops:
				batch = append(batch, op)
			case <-linger.C:
				break collect
			case <-c.stop:
				linger.Stop()
				for _, op := range batch {
					op.done <- shareResult{err: context.Canceled}
				}
				return
			}
		}
		linger.Stop()
		c.send(batch)
	}
}

// send submits a batch; if the transaction fails as a whole, each fetch is sent alone, so one
// member's fault is not the others'.
func (c *shareCoordinator) send(batch []*shareOp) {
	msgs := make([]sdk.Msg, len(batch))
	for i, op := range batch {
		msgs[i] = op.msg
	}
	res, err := c.signer.SubmitAndWait(msgs...)
	if err == nil {
		var out []types.MsgShareFetchResponse
		if out, err = txclient.Responses[types.MsgShareFetchResponse](c.clientCtx, res); err == nil && len(out) != len(batch) {
			err = errShareAnswers
		}
		if err == nil {
			for i, op := range batch {
				op.done <- shareResult{res: &out[i]}
			}
			return
		}
	}
	// Sent alone again only when the chain refused the transaction, so it did nothing: one that
	// may have run (not seen in a block in time, or answered oddly) is never run twice.
	var refused *txclient.TxError
	if len(batch) == 1 || !errors.As(err, &refused) {
		for _, op := range batch {
			op.done <- shareResult{err: err}
		}
		return
	}
	for _, op := range batch {
		c.send([]*shareOp{op})
	}
}

// session applies a request's session epoch: 0 opens a session (replacing one), -1 is the last
// request of one, any other must be the session's next epoch. It returns the session's
// partitions after the request's additions and forgotten partitions, or a top-level error code.
func (c *shareCoordinator) session(group, member string, epoch int32, add, forget []types.TopicPartition) (map[types.TopicPartition]bool, int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := [2]string{group, member}
	now := time.Now()
	s := c.sessions[key]
	switch {
	case epoch == 0:
		if s == nil && len(c.sessions) >= maxShareSessions {
			for k, x := range c.sessions {
				if now.Sub(x.used) > shareSessionIdle {
					delete(c.sessions, k)
				}
			}
			if len(c.sessions) >= maxShareSessions {
				return nil, kerr.ShareSessionLimitReached.Code
			}
		}
		s = &shareSession{parts: map[types.TopicPartition]bool{}}
		c.sessions[key] = s
	case s == nil:
		return nil, kerr.ShareSessionNotFound.Code
	case epoch != -1 && epoch != s.epoch:
		return nil, kerr.InvalidShareSessionEpoch.Code
	}
	for _, tp := range forget {
		delete(s.parts, tp)
	}
	for _, tp := range add {
		if !s.parts[tp] && len(s.parts) >= types.MaxShareFetchPartitions {
			return nil, kerr.InvalidRequest.Code // a session of more partitions than one fetch acquires
		}
		s.parts[tp] = true
	}
	s.used = now
	s.epoch = max(1, s.epoch+1) // MaxInt32 wraps to 1, as in Kafka
	parts := make(map[types.TopicPartition]bool, len(s.parts))
	for tp := range s.parts {
		parts[tp] = true
	}
	if epoch == -1 {
		delete(c.sessions, key)
	}
	return parts, 0
}

func (c *shareCoordinator) forgetMember(group, member string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.sessions, [2]string{group, member})
}

// shareGroupHeartbeat answers a share member's heartbeat: a join, a leave or a new subscription
// is a transaction; every other heartbeat is answered from the chain's state.
func (s *Server) shareGroupHeartbeat(ctx context.Context, r *kmsg.ShareGroupHeartbeatRequest) kmsg.Response {
	resp := kmsg.NewPtrShareGroupHeartbeatResponse()
	resp.SetVersion(r.Version)
	fail := func(code int16, msg string) kmsg.Response {
		resp.ErrorCode, resp.ErrorMessage = code, kmsg.StringPtr(msg)
		return resp
	}
	switch {
	case r.GroupID == "":
		return fail(kerr.InvalidRequest.Code, "GroupId can't be empty")
	case r.MemberID == "":
		return fail(kerr.InvalidRequest.Code, "MemberId can't be empty")
	case r.MemberEpoch < types.ConsumerLeaveEpoch:
		return fail(kerr.InvalidRequest.Code, "MemberEpoch is invalid")
	case r.MemberEpoch == 0 && len(r.SubscribedTopicNames) == 0:
		return fail(kerr.InvalidRequest.Code, "SubscribedTopicNames must be set in first request")
	}
	id := s.ident(ctx)
	co := id.groups
	st, err := s.shareGroupState(ctx, r.GroupID)
	if err != nil {
		return fail(kerr.CoordinatorNotAvailable.Code, err.Error())
	}
	m := findShareMember(st, r.MemberID)
	if m != nil && m.Owner != co.chain.owner() {
		m = nil // another account's member: this identity cannot speak for it
	}
	msg := &types.MsgShareGroupHeartbeat{Owner: co.chain.owner(), GroupId: r.GroupID, MemberId: r.MemberID, MemberEpoch: r.MemberEpoch, ClientId: clientID(ctx)}
	if r.RackID != nil {
		msg.RackId = *r.RackID
	}
	if r.MemberEpoch == types.ConsumerLeaveEpoch {
		co.forget(r.GroupID, r.MemberID)
		id.shares.forgetMember(r.GroupID, r.MemberID)
		if m == nil {
			return fail(kerr.UnknownMemberID.Code, "not a member")
		}
		if err := co.chain.submit(ctx, msg); err != nil {
			return fail(kafkaCode(err), err.Error())
		}
		resp.MemberID, resp.MemberEpoch = kmsg.StringPtr(r.MemberID), r.MemberEpoch
		return resp
	}
	if r.MemberEpoch > 0 {
		switch {
		case m == nil:
			co.forget(r.GroupID, r.MemberID)
			return fail(kerr.UnknownMemberID.Code, "not a member")
		case r.MemberEpoch > m.MemberEpoch:
			return fail(kerr.FencedMemberEpoch.Code, "the member epoch is not the chain's")
		}
	}
	if m != nil {
		msg.SubscribedTopicNames = m.SubscribedTopicNames
		if msg.RackId == "" {
			msg.RackId = m.RackId
		}
	}
	if r.SubscribedTopicNames != nil {
		msg.SubscribedTopicNames = slices.Compact(slices.Sorted(slices.Values(r.SubscribedTopicNames)))
	}
	if r.MemberEpoch == 0 || m == nil || !slices.Equal(msg.SubscribedTopicNames, m.SubscribedTopicNames) || s.shareTopicsMoved(ctx, co, st) {
		if err := co.chain.submit(ctx, msg); err != nil {
			return fail(kafkaCode(err), err.Error())
		}
		if st, err = s.shareGroupState(ctx, r.GroupID); err != nil {
			return fail(kerr.CoordinatorNotAvailable.Code, "the group's state could not be read")
		}
		if m = findShareMember(st, r.MemberID); m == nil {
			return fail(kerr.UnknownMemberID.Code, "not a member")
		}
	}
	co.touch(r.GroupID, r.MemberID, defaultSession)
	resp.MemberID, resp.MemberEpoch = kmsg.StringPtr(m.MemberId), m.MemberEpoch
	resp.HeartbeatIntervalMillis = types.ShareHeartbeatIntervalMs
	a := kmsg.NewShareGroupHeartbeatResponseAssignment()
	for _, tp := range m.Assigned {
		t, found, err := s.topic(ctx, tp.Topic)
		if err != nil {
			return fail(kerr.CoordinatorNotAvailable.Code, err.Error())
		}
		if !found {
			continue
		}
		at := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
		at.TopicID = s.topicIDs.learn(t)
		for _, p := range tp.Partitions {
			at.Partitions = append(at.Partitions, int32(p))
		}
		a.TopicPartitions = append(a.TopicPartitions, at)
	}
	resp.Assignment = &a
	return resp
}

// shareTopicsMoved tells whether the subscribed topics changed (partitions added, a topic made or
// deleted) since the members were dealt: the heartbeat then goes to the chain, which deals again.
// At most once per group and consumerTopicCheckEvery.
func (s *Server) shareTopicsMoved(ctx context.Context, co *coordinator, st *types.QueryShareGroupResponse) bool {
	if st == nil || !co.topicCheckDue(st.Group.GroupId) {
		return false
	}
	counts := map[string]uint32{}
	for _, c := range st.Group.PartitionCounts {
		counts[c.Topic] = c.Partitions
	}
	seen := map[string]bool{}
	for _, m := range st.Members {
		for _, name := range m.SubscribedTopicNames {
			if seen[name] {
				continue
			}
			seen[name] = true
			t, found, err := s.topic(ctx, name)
			if err != nil {
				return false
			}
			if n, known := counts[name]; found != known || (found && t.Partitions != n) {
				return true
			}
		}
	}
	return false
}

// shareGroupState reads a share group; nil when the chain has no share group of that id.
func (s *Server) shareGroupState(ctx context.Context, group string) (*types.QueryShareGroupResponse, error) {
	res, err := s.query.ShareGroup(ctx, &types.QueryShareGroupRequest{GroupId: group})
	if unknownGroup(err) {
		return nil, nil
	}
	return res, err
}

func findShareMember(st *types.QueryShareGroupResponse, id string) *types.ShareMember {
	if st == nil {
		return nil
	}
	for i := range st.Members {
		if st.Members[i].MemberId == id {
			return &st.Members[i]
		}
	}
	return nil
}

// shareGroupDescribe answers ShareGroupDescribe from the chain's state.
func (s *Server) shareGroupDescribe(ctx context.Context, r *kmsg.ShareGroupDescribeRequest) kmsg.Response {
	resp := kmsg.NewPtrShareGroupDescribeResponse()
	resp.SetVersion(r.Version)
	for _, id := range r.GroupIDs {
		g := kmsg.NewShareGroupDescribeResponseGroup()
		g.GroupID = id
		st, err := s.shareGroupState(ctx, id)
		switch {
		case err != nil:
			g.ErrorCode = kerr.CoordinatorNotAvailable.Code
		case st == nil:
			g.ErrorCode, g.ErrorMessage = kerr.GroupIDNotFound.Code, kmsg.StringPtr("group "+id+" is not a share group")
		default:
			g.GroupState, g.GroupEpoch, g.AssignmentEpoch, g.Assignor = stateEmpty, st.Group.GroupEpoch, st.Group.GroupEpoch, "simple"
			if len(st.Members) > 0 {
				g.GroupState = stateStable
			}
			for _, m := range st.Members {
				dm := kmsg.NewShareGroupDescribeResponseGroupMember()
				dm.MemberID, dm.MemberEpoch, dm.ClientID, dm.ClientHost = m.MemberId, m.MemberEpoch, m.ClientId, "/"+m.Owner
				if m.RackId != "" {
					dm.RackID = kmsg.StringPtr(m.RackId)
				}
				dm.SubscribedTopicNames = m.SubscribedTopicNames
				for _, tp := range m.Assigned {
					if t, found, err := s.topic(ctx, tp.Topic); err == nil && found {
						at := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
						at.TopicID, at.Topic = s.topicIDs.learn(t), tp.Topic
						for _, p := range tp.Partitions {
							at.Partitions = append(at.Partitions, int32(p))
						}
						dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, at)
					}
				}
				g.Members = append(g.Members, dm)
			}
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp
}
