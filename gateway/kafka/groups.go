package kafka

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/types"
)

// Kafka's group protocol runs on chain (x/topics/keeper/groups_kafka.go): members,
// generations, the leader's assignment and rebalances are chain state, so every gateway of a
// fleet coordinates every group and FindCoordinator may answer any of them. A gateway turns
// each JoinGroup, the leader's SyncGroup and LeaveGroup into a transaction, answers from the
// chain's state (polled while a request waits), and keeps the members its clients talk to alive
// with one heartbeat transaction per group and interval. A gateway that dies stops
// heartbeating its members; the chain expires them after their session timeout and the group
// rebalances over the members other gateways serve.

// pollInterval is how often a waiting JoinGroup or SyncGroup reads the group's state: well
// under a block, so an answer leaves within a block of the state changing.
const pollInterval = 50 * time.Millisecond

// defaultSession is how long a member known only from its commits is renewed after the last.
const defaultSession = 10 * time.Second

// heartbeatInterval is how often the gateway renews its live members' sessions on chain.
const heartbeatInterval = time.Second

type coordinator struct {
	chain groupChain
	stop  chan struct{}
	done  chan struct{}
	// pending: commits answered once admitted, until their block (commits.go).
	pending *pendingCommits
	// shareMember tells whether the chain has member in share group with this coordinator's
	// owner (set by the server; nil in tests without share groups).
	shareMember func(ctx context.Context, group, member string) bool
	log         func(format string, args ...any)

	mu sync.Mutex
	// live holds the members this gateway's clients talk to: last request time and session.
	live map[string]map[string]liveMember
	// topicChecked is when each consumer group's subscribed topics were last compared with its
	// target's (consumer_groups.go).
	topicChecked map[string]time.Time
}

type liveMember struct {
	seen    time.Time
	session time.Duration
	// generation is the member's generation in the chain's state as read at checked.
	generation int32
	checked    time.Time
	host       string // the client's host, for DescribeGroups
}

// host is the client host a member joined from, if it joined through this coordinator.
func (c *coordinator) host(group, member string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live[group][member].host
}

func (c *coordinator) setHost(group, member, host string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if lm, ok := c.live[group][member]; ok {
		lm.host = host
		c.live[group][member] = lm
	}
}

// fenceFresh is how long a commit trusts the chain's state read for the member's last commit or
// heartbeat instead of reading it again: a rebalance within it lets one commit through that
// the chain then refuses in its block (the group's new owner reads those records again).
const fenceFresh = 500 * time.Millisecond

// fenced answers whether the chain's state read within fenceFresh showed member at generation.
func (c *coordinator) fenced(group, member string, generation int32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	lm, ok := c.live[group][member]
	return ok && lm.generation == generation && !lm.checked.IsZero() && time.Since(lm.checked) < fenceFresh
}

// checked records that the chain's state showed member at generation now.
func (c *coordinator) checked(group, member string, generation int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if lm, ok := c.live[group][member]; ok {
		lm.generation, lm.checked = generation, time.Now()
		c.live[group][member] = lm
	}
}

// groupChain is what the coordinator asks of the chain.
type groupChain interface {
	// owner is the account the gateway signs members' requests with.
	owner() string
	submit(ctx context.Context, msgs ...sdk.Msg) error
	// kafkaGroup reads a Kafka group's state; nil with no such group.
	kafkaGroup(ctx context.Context, group string) (*types.QueryKafkaGroupResponse, error)
	// consumerGroup reads a KIP-848 consumer group's state; nil with no such group.
	consumerGroup(ctx context.Context, group string) (*types.QueryConsumerGroupResponse, error)
	// commitOffsets sends a Kafka member's commit and returns once it is admitted, with the
	// wait for its block.
	commitOffsets(ctx context.Context, msg *types.MsgCommitOffsets) (landing, error)
	// commit commits a member-less (simple) consumer's offsets as the gateway's own native
	// membership of group, returning once admitted, with the wait for its block.
	commit(ctx context.Context, group string, topics []string, offsets []types.OffsetCommit) (landing, error)
	offsets(ctx context.Context, group string) (*types.QueryGroupOffsetsResponse, error)
}

func newCoordinator(chain groupChain) *coordinator {
	c := &coordinator{chain: chain, stop: make(chan struct{}), done: make(chan struct{}), live: map[string]map[string]liveMember{},
		pending: newPendingCommits(), log: func(string, ...any) {}}
	go c.heartbeats()
	return c
}

func (c *coordinator) close() {
	close(c.stop)
	<-c.done
}

// touch records that a client spoke as member: its session is renewed on chain.
func (c *coordinator) touch(group, member string, session time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.live[group] == nil {
		c.live[group] = map[string]liveMember{}
	}
	lm := c.live[group][member]
	lm.seen = time.Now()
	if session > 0 {
		lm.session = session
	}
	c.live[group][member] = lm
}

// topicCheckDue says whether group's topics are due a comparison, and marks it done.
func (c *coordinator) topicCheckDue(group string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.topicChecked[group]) < consumerTopicCheckEvery {
		return false
	}
	if c.topicChecked == nil || len(c.topicChecked) > 10_000 {
		c.topicChecked = map[string]time.Time{} // bounded: a forgotten group is checked again
	}
	c.topicChecked[group] = time.Now()
	return true
}

func (c *coordinator) forget(group string, members ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range members {
		delete(c.live[group], m)
	}
	if len(c.live[group]) == 0 {
		delete(c.live, group)
	}
}

// heartbeats renews, each interval, the sessions of the members whose clients spoke within
// their session timeout, one transaction for all groups.
func (c *coordinator) heartbeats() {
	defer close(c.done)
	t := time.NewTicker(heartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		var msgs []sdk.Msg
		c.mu.Lock()
		now := time.Now()
		groups := make([]string, 0, len(c.live))
		for g := range c.live {
			groups = append(groups, g)
		}
		slices.Sort(groups)
		for _, g := range groups {
			var ids []string
			for id, lm := range c.live[g] {
				session := lm.session
				if session == 0 { // known only from its commits so far
					session = defaultSession
				}
				if now.Sub(lm.seen) > session {
					delete(c.live[g], id) // its client went quiet: let the chain expire it
					continue
				}
				ids = append(ids, id)
			}
			if len(ids) == 0 {
				delete(c.live, g)
				continue
			}
			slices.Sort(ids)
			msgs = append(msgs, &types.MsgKafkaHeartbeat{Owner: c.chain.owner(), GroupId: g, MemberIds: ids})
		}
		c.mu.Unlock()
		if len(msgs) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		// A member the chain has removed fails the whole transaction: send the groups one by
		// one then, so one group's stale member does not starve the others.
		if err := c.chain.submit(ctx, msgs...); err != nil {
			for _, m := range msgs {
				if len(msgs) > 1 {
					err = c.chain.submit(ctx, m)
				}
				if err != nil {
					c.dropRemoved(ctx, m.(*types.MsgKafkaHeartbeat))
				}
			}
		}
		cancel()
	}
}

// dropRemoved stops heartbeating the members of hb the chain no longer has (expired, or
// removed by their group's admin), so the others' next heartbeat succeeds.
func (c *coordinator) dropRemoved(ctx context.Context, hb *types.MsgKafkaHeartbeat) {
	st, err := c.state(ctx, hb.GroupId)
	if err != nil {
		return
	}
	// The group may be of either Kafka kind: a member is kept if the chain has it in either.
	cst, err := c.chain.consumerGroup(ctx, hb.GroupId)
	if err != nil {
		return
	}
	for _, id := range hb.MemberIds {
		m := findMember(st, id) != nil
		if !m && cst != nil {
			cm := findConsumer(cst, id)
			m = cm != nil && cm.Owner == c.chain.owner()
		}
		if !m && c.shareMember != nil {
			m = c.shareMember(ctx, hb.GroupId, id)
		}
		if !m {
			c.forget(hb.GroupId, id)
		}
	}
}

// state reads the group; a request waiting on it gives up with the connection.
func (c *coordinator) state(ctx context.Context, group string) (*types.QueryKafkaGroupResponse, error) {
	return c.chain.kafkaGroup(ctx, group)
}

func findMember(st *types.QueryKafkaGroupResponse, id string) *types.KafkaMember {
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

// sleep waits one poll interval; false when ctx ends first.
func sleep(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(pollInterval):
		return true
	}
}

func (c *coordinator) joinGroup(ctx context.Context, r *kmsg.JoinGroupRequest, clientID string) kmsg.Response {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.SetVersion(r.Version)
	resp.Generation = -1
	if r.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	if r.SessionTimeoutMillis < types.MinSessionTimeoutMs || r.SessionTimeoutMillis > 300_000 {
		resp.ErrorCode = kerr.InvalidSessionTimeout.Code
		return resp
	}
	id := r.MemberID
	if id == "" {
		id = newMemberID(clientID)
		if r.Version >= 4 { // the client must come back with the id (KIP-394)
			resp.ErrorCode, resp.MemberID = kerr.MemberIDRequired.Code, id
			return resp
		}
	}
	resp.MemberID = id
	join := &types.MsgKafkaJoinGroup{Owner: c.chain.owner(), GroupId: r.Group, MemberId: id, ClientId: clientID,
		ProtocolType: r.ProtocolType, SessionTimeoutMs: r.SessionTimeoutMillis, RebalanceTimeoutMs: max(r.RebalanceTimeoutMillis, 0)}
	for _, p := range r.Protocols {
		join.Protocols = append(join.Protocols, types.KafkaProtocol{Name: p.Name, Metadata: p.Metadata})
	}
	session := time.Duration(r.SessionTimeoutMillis) * time.Millisecond
	rebalance := time.Duration(max(r.RebalanceTimeoutMillis, r.SessionTimeoutMillis)) * time.Millisecond
	ctx, cancel := context.WithTimeout(ctx, rebalance+10*time.Second)
	defer cancel()
	submitted := false
	for {
		if !submitted {
			if err := c.chain.submit(ctx, join); err != nil {
				resp.ErrorCode = kafkaCode(err)
				return resp
			}
			submitted = true
			c.touch(r.Group, id, session)
			c.setHost(r.Group, id, connHost(ctx))
		}
		st, err := c.state(ctx, r.Group)
		if err != nil {
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp
		}
		m := findMember(st, id)
		switch {
		case m == nil:
			// Removed before the generation formed (it missed the deadline).
			c.forget(r.Group, id)
			resp.ErrorCode = kerr.UnknownMemberID.Code
			return resp
		case st.Group.State == types.KAFKA_GROUP_STATE_PREPARING_REBALANCE && !m.Joined:
			// A generation formed with this member and a new phase began before we looked: join
			// it as the client would on REBALANCE_IN_PROGRESS.
			submitted = false
			continue
		case m.Joined && (st.Group.State == types.KAFKA_GROUP_STATE_COMPLETING_REBALANCE || st.Group.State == types.KAFKA_GROUP_STATE_STABLE):
			c.touch(r.Group, id, 0)
			return joinResponse(resp, st, id)
		}
		if !sleep(ctx) {
			resp.ErrorCode = kerr.RebalanceInProgress.Code
			return resp
		}
	}
}

// joinResponse is the JoinGroup answer of a formed generation; the leader gets every member's
// metadata for the chosen protocol, in join order.
func joinResponse(resp *kmsg.JoinGroupResponse, st *types.QueryKafkaGroupResponse, id string) *kmsg.JoinGroupResponse {
	g := st.Group
	resp.Generation, resp.LeaderID, resp.MemberID = g.Generation, g.Leader, id
	resp.Protocol, resp.ProtocolType = kmsg.StringPtr(g.Protocol), kmsg.StringPtr(g.ProtocolType)
	if id == g.Leader {
		for _, m := range st.Members {
			for _, p := range m.Protocols {
				if p.Name == g.Protocol {
					jm := kmsg.NewJoinGroupResponseMember()
					jm.MemberID, jm.ProtocolMetadata = m.MemberId, p.Metadata
					resp.Members = append(resp.Members, jm)
				}
			}
		}
	}
	return resp
}

// newMemberID is Kafka's member id form: the client id, a dash, a random suffix.
func newMemberID(clientID string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	if clientID == "" {
		clientID = "member"
	}
	if len(clientID) > 200 {
		clientID = clientID[:200]
	}
	return clientID + "-" + hex.EncodeToString(b[:])
}

// checkCommitter answers a commit from the group's state: unknown member or stale generation
// (a group takes commits while it rebalances).
func checkCommitter(st *types.QueryKafkaGroupResponse, id string, generation int32) int16 {
	switch {
	case findMember(st, id) == nil:
		return kerr.UnknownMemberID.Code
	case generation != st.Group.Generation:
		return kerr.IllegalGeneration.Code
	}
	return 0
}

// checkMember answers a member's request from the group's state: unknown member, stale
// generation, or a rebalance to join.
func checkMember(st *types.QueryKafkaGroupResponse, id string, generation int32) int16 {
	if code := checkCommitter(st, id, generation); code != 0 {
		return code
	}
	if st.Group.State == types.KAFKA_GROUP_STATE_PREPARING_REBALANCE {
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

func (c *coordinator) syncGroup(ctx context.Context, r *kmsg.SyncGroupRequest) kmsg.Response {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.SetVersion(r.Version)
	st, err := c.state(ctx, r.Group)
	if err != nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	if resp.ErrorCode = checkMember(st, r.MemberID, r.Generation); resp.ErrorCode != 0 {
		return resp
	}
	c.touch(r.Group, r.MemberID, time.Duration(findMember(st, r.MemberID).SessionTimeoutMs)*time.Millisecond)
	if st.Group.State == types.KAFKA_GROUP_STATE_COMPLETING_REBALANCE && r.MemberID == st.Group.Leader {
		sync := &types.MsgKafkaSyncGroup{Owner: c.chain.owner(), GroupId: r.Group, MemberId: r.MemberID, Generation: r.Generation}
		for _, a := range r.GroupAssignment {
			sync.Assignments = append(sync.Assignments, types.KafkaAssignment{MemberId: a.MemberID, Assignment: a.MemberAssignment})
		}
		if err := c.chain.submit(ctx, sync); err != nil {
			resp.ErrorCode = kafkaCode(err)
			return resp
		}
	}
	for {
		if resp.ErrorCode = checkMember(st, r.MemberID, r.Generation); resp.ErrorCode != 0 {
			return resp
		}
		// v5+ names the protocol type and protocol the member joined with: as Kafka, one that
		// is not the group's is INCONSISTENT_GROUP_PROTOCOL.
		if inconsistent(r.ProtocolType, st.Group.ProtocolType) || inconsistent(r.Protocol, st.Group.Protocol) {
			resp.ErrorCode = kerr.InconsistentGroupProtocol.Code
			return resp
		}
		if st.Group.State == types.KAFKA_GROUP_STATE_STABLE {
			resp.Protocol, resp.ProtocolType = kmsg.StringPtr(st.Group.Protocol), kmsg.StringPtr(st.Group.ProtocolType)
			resp.MemberAssignment = findMember(st, r.MemberID).Assignment
			return resp
		}
		if !sleep(ctx) {
			resp.ErrorCode = kerr.RebalanceInProgress.Code
			return resp
		}
		if st, err = c.state(ctx, r.Group); err != nil {
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp
		}
	}
}

// inconsistent tells whether a SyncGroup's protocol type or name, when given, is not the group's
// (the group's is known once a generation formed).
func inconsistent(asked *string, group string) bool {
	return asked != nil && group != "" && *asked != group
}

func (c *coordinator) heartbeat(ctx context.Context, r *kmsg.HeartbeatRequest) kmsg.Response {
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.SetVersion(r.Version)
	st, err := c.state(ctx, r.Group)
	if err != nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	resp.ErrorCode = checkMember(st, r.MemberID, r.Generation)
	if m := findMember(st, r.MemberID); m == nil {
		c.forget(r.Group, r.MemberID)
	} else {
		// Possibly a member that joined through another gateway (which died): this gateway
		// renews it from now on.
		c.touch(r.Group, r.MemberID, time.Duration(m.SessionTimeoutMs)*time.Millisecond)
		c.checked(r.Group, r.MemberID, st.Group.Generation)
	}
	return resp
}

func (c *coordinator) leaveGroup(ctx context.Context, r *kmsg.LeaveGroupRequest) kmsg.Response {
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.SetVersion(r.Version)
	ids := []string{r.MemberID}
	if r.Version >= 3 {
		ids = nil
		for _, m := range r.Members {
			ids = append(ids, m.MemberID)
		}
	}
	st, err := c.state(ctx, r.Group)
	if err != nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	var leaving []string
	for _, id := range ids {
		out := kmsg.NewLeaveGroupResponseMember()
		out.MemberID = id
		if findMember(st, id) == nil {
			out.ErrorCode = kerr.UnknownMemberID.Code
			if r.Version < 3 {
				resp.ErrorCode = kerr.UnknownMemberID.Code
			}
		} else {
			leaving = append(leaving, id)
		}
		resp.Members = append(resp.Members, out)
	}
	c.forget(r.Group, ids...)
	if len(leaving) > 0 {
		if err := c.chain.submit(ctx, &types.MsgKafkaLeaveGroup{Owner: c.chain.owner(), GroupId: r.Group, MemberIds: leaving}); err != nil {
			resp.ErrorCode = kafkaCode(err)
			for i := range resp.Members {
				if resp.Members[i].ErrorCode == 0 {
					resp.Members[i].ErrorCode = resp.ErrorCode
				}
			}
		}
	}
	return resp
}

// offsetCommit commits as the Kafka member (fenced on chain by owner and generation); a
// simple consumer's commit (no member, generation -1) goes through the gateway's own native
// membership of the group.
func (c *coordinator) offsetCommit(ctx context.Context, r *kmsg.OffsetCommitRequest) kmsg.Response {
	resp := kmsg.NewPtrOffsetCommitResponse()
	resp.SetVersion(r.Version)
	var offsets []types.OffsetCommit
	var topics []string
	for _, t := range r.Topics {
		topics = append(topics, t.Topic)
		for _, p := range t.Partitions {
			if p.Partition < 0 || p.Offset < 0 {
				continue
			}
			md := ""
			if p.Metadata != nil {
				md = *p.Metadata
			}
			offsets = append(offsets, types.OffsetCommit{Topic: t.Topic, Partition: uint32(p.Partition), Offset: uint64(p.Offset), Metadata: md})
		}
	}
	code := int16(0)
	switch {
	case len(offsets) == 0:
	case r.MemberID == "" && r.Generation >= 0:
		code = kerr.UnknownMemberID.Code
	case r.MemberID != "":
		// A commit is a sign of life: this gateway renews the member from now on.
		c.touch(r.Group, r.MemberID, 0)
		// Fenced as the chain fences it, before it is answered: the commit is answered once
		// admitted, and the chain runs it only in its block.
		if !c.fenced(r.Group, r.MemberID, r.Generation) {
			st, err := c.state(ctx, r.Group)
			if err != nil {
				code = kerr.CoordinatorNotAvailable.Code
				break
			}
			if st == nil {
				// From v9 (KIP-848) Kafka answers a commit to a group it does not have with
				// GROUP_ID_NOT_FOUND, whichever protocol the group would use.
				code = kerr.UnknownMemberID.Code
				if r.Version >= 9 {
					code = kerr.GroupIDNotFound.Code
				}
				break
			}
			if findMember(st, r.MemberID) == nil {
				// Perhaps a member of a KIP-848 consumer group, fenced by its member epoch.
				if code = c.checkConsumerCommit(ctx, r.Group, r.MemberID, r.Generation); code != 0 {
					break
				}
			} else if code = checkCommitter(st, r.MemberID, r.Generation); code != 0 {
				break
			}
			c.checked(r.Group, r.MemberID, r.Generation)
		}
		msg := &types.MsgCommitOffsets{Member: c.chain.owner(), GroupId: r.Group, Generation: uint64(max(r.Generation, 0)), KafkaMemberId: r.MemberID, Offsets: offsets}
		land, err := c.chain.commitOffsets(ctx, msg)
		if err != nil {
			code = kafkaCode(err)
		} else {
			c.commitAdmitted(r.Group, offsets, land)
		}
	default:
		land, err := c.chain.commit(ctx, r.Group, topics, offsets)
		if err != nil {
			code = kafkaCode(err)
		} else {
			c.commitAdmitted(r.Group, offsets, land)
		}
	}
	for _, t := range r.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// checkConsumerCommit answers a commit by a member of a KIP-848 consumer group as the chain will:
// at the member's epoch or the one before, else STALE_MEMBER_EPOCH.
func (c *coordinator) checkConsumerCommit(ctx context.Context, group, id string, epoch int32) int16 {
	st, err := c.chain.consumerGroup(ctx, group)
	if err != nil {
		return kerr.CoordinatorNotAvailable.Code
	}
	var m *types.ConsumerMember
	if st != nil {
		m = findConsumer(st, id)
	}
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code
	case epoch != m.MemberEpoch && epoch != m.PreviousMemberEpoch:
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// offsetCommit answers OffsetCommit: v10 names topics by ID (topic_id_requests.go).
func (s *Server) offsetCommit(ctx context.Context, r *kmsg.OffsetCommitRequest) kmsg.Response {
	co := s.ident(ctx).groups
	if r.Version >= 10 {
		return s.offsetCommitByID(ctx, r, func(r *kmsg.OffsetCommitRequest) kmsg.Response { return co.offsetCommit(ctx, r) })
	}
	return co.offsetCommit(ctx, r)
}
