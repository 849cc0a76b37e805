package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cosmos/cosmos-sdk/client"

	"github.com/bftlog/bftlog/x/topics/client/consumer"
	"github.com/bftlog/bftlog/x/topics/client/txclient"
	"github.com/bftlog/bftlog/x/topics/types"
)

// Kafka's group protocol lets the clients assign partitions (the leader's SyncGroup carries the
// assignment), so the gateway coordinates its Kafka members itself, as a broker's group
// coordinator does, and holds the group's on-chain membership with its own account: it commits
// the members' offsets on chain, fenced by both the Kafka generation (checked here) and the
// on-chain generation (checked by the chain). A Kafka group is therefore served by one gateway.

// initialRebalanceDelay lets the members of a new group that start together join one
// generation (Kafka's group.initial.rebalance.delay.ms, shortened).
const initialRebalanceDelay = time.Second

type groupState int

const (
	groupEmpty groupState = iota
	groupPreparing
	groupCompleting
	groupStable
)

type kgroup struct {
	name         string
	state        groupState
	generation   int32
	protocolType string
	protocol     string
	leader       string
	members      map[string]*kmember
	order        []string
	notBefore    time.Time // earliest completion of the current join phase
	deadline     time.Time // members that have not rejoined by then are dropped
	timer        stopper
}

type kmember struct {
	id         string
	protocols  []kmsg.JoinGroupRequestProtocol
	session    time.Duration
	rebalance  time.Duration
	lastSeen   time.Time
	join       chan *kmsg.JoinGroupResponse
	joinVer    int16
	sync       chan *kmsg.SyncGroupResponse
	assignment []byte
}

type coordinator struct {
	chain  groupChain
	clock  clock
	mu     sync.Mutex
	groups map[string]*kgroup
	nextID int64
	stop   chan struct{}
}

// groupChain is what the coordinator asks of the chain: commit a group's offsets as the
// gateway's on-chain membership, and read the group's committed offsets.
type groupChain interface {
	commit(ctx context.Context, group string, topics []string, offsets []types.OffsetCommit) error
	offsets(ctx context.Context, group string) (*types.QueryGroupOffsetsResponse, error)
}

// clock is the coordinator's time: sessions, the join phase's delay and deadline.
type clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) stopper
}

type stopper interface{ Stop() bool }

type wallClock struct{}

func (wallClock) Now() time.Time                              { return time.Now() }
func (wallClock) AfterFunc(d time.Duration, f func()) stopper { return time.AfterFunc(d, f) }

func newCoordinator(chain groupChain, clk clock) *coordinator {
	c := &coordinator{chain: chain, clock: clk, groups: map[string]*kgroup{}, stop: make(chan struct{})}
	go c.janitor()
	return c
}

func (c *coordinator) close() { close(c.stop) }

func (c *coordinator) group(name string) *kgroup {
	g := c.groups[name]
	if g == nil {
		g = &kgroup{name: name, members: map[string]*kmember{}}
		c.groups[name] = g
	}
	return g
}

func (c *coordinator) joinGroup(ctx context.Context, r *kmsg.JoinGroupRequest) kmsg.Response {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.SetVersion(r.Version)
	resp.Generation = -1
	if r.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	if r.SessionTimeoutMillis < 1000 || r.SessionTimeoutMillis > 300_000 {
		resp.ErrorCode = kerr.InvalidSessionTimeout.Code
		return resp
	}
	c.mu.Lock()
	g := c.group(r.Group)
	if len(g.members) > 0 && r.ProtocolType != g.protocolType {
		c.mu.Unlock()
		resp.ErrorCode = kerr.InconsistentGroupProtocol.Code
		return resp
	}
	id := r.MemberID
	if id == "" {
		c.nextID++
		id = fmt.Sprintf("bftlog-%d-%d", c.clock.Now().UnixNano(), c.nextID)
		if r.Version >= 4 { // the client must come back with the id (KIP-394)
			c.mu.Unlock()
			resp.ErrorCode, resp.MemberID = kerr.MemberIDRequired.Code, id
			return resp
		}
	}
	m := g.members[id]
	if m == nil {
		m = &kmember{id: id}
		g.members[id] = m
		g.order = append(g.order, id)
	}
	m.protocols, m.joinVer, m.lastSeen = r.Protocols, r.Version, c.clock.Now()
	m.session = time.Duration(r.SessionTimeoutMillis) * time.Millisecond
	m.rebalance = time.Duration(max(r.RebalanceTimeoutMillis, r.SessionTimeoutMillis)) * time.Millisecond
	if m.join != nil { // a repeated join supersedes the one still waiting
		superseded := kmsg.NewPtrJoinGroupResponse()
		superseded.ErrorCode, superseded.MemberID = kerr.RebalanceInProgress.Code, id
		m.join <- superseded
	}
	ch := make(chan *kmsg.JoinGroupResponse, 1) // taken before completion may clear m.join
	m.join = ch
	g.protocolType = r.ProtocolType
	if g.state != groupPreparing {
		c.prepareRebalance(g, len(g.members) == 1)
	}
	c.maybeCompleteJoin(g)
	c.mu.Unlock()
	resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
	return await(ctx, ch, resp, r.Version)
}

// await waits for the join or sync phase to answer; if the connection goes first, fallback.
func await[R kmsg.Response](ctx context.Context, ch <-chan R, fallback R, version int16) kmsg.Response {
	select {
	case out := <-ch:
		out.SetVersion(version)
		return out
	case <-ctx.Done():
		return fallback
	}
}

// prepareRebalance starts a join phase: members learn of it from their heartbeats and rejoin.
func (c *coordinator) prepareRebalance(g *kgroup, fresh bool) {
	g.state = groupPreparing
	now := c.clock.Now()
	g.notBefore = now
	if fresh {
		g.notBefore = now.Add(initialRebalanceDelay)
	}
	longest := time.Duration(0)
	for _, m := range g.members {
		longest = max(longest, m.rebalance)
		if m.sync != nil {
			out := kmsg.NewPtrSyncGroupResponse()
			out.ErrorCode = kerr.RebalanceInProgress.Code
			m.sync <- out
			m.sync = nil
		}
	}
	g.deadline = now.Add(min(longest, 30*time.Second))
	c.arm(g, g.notBefore)
}

func (c *coordinator) arm(g *kgroup, at time.Time) {
	if g.timer != nil {
		g.timer.Stop()
	}
	g.timer = c.clock.AfterFunc(at.Sub(c.clock.Now()), func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if g.state != groupPreparing {
			return
		}
		if !c.clock.Now().Before(g.deadline) { // drop whoever did not rejoin in time
			for id, m := range g.members {
				if m.join == nil {
					c.remove(g, id)
				}
			}
		}
		c.maybeCompleteJoin(g)
		if g.state == groupPreparing && len(g.members) > 0 {
			c.arm(g, g.deadline)
		}
	})
}

// maybeCompleteJoin ends the join phase once every member has rejoined: a new generation, a
// protocol every member supports, and the member list for the leader.
func (c *coordinator) maybeCompleteJoin(g *kgroup) {
	if g.state != groupPreparing || c.clock.Now().Before(g.notBefore) || len(g.members) == 0 {
		return
	}
	for _, m := range g.members {
		if m.join == nil {
			return
		}
	}
	if g.members[g.leader] == nil {
		g.leader = g.order[0]
	}
	g.protocol = ""
	for _, p := range g.members[g.leader].protocols {
		all := true
		for _, m := range g.members {
			found := false
			for _, q := range m.protocols {
				found = found || q.Name == p.Name
			}
			all = all && found
		}
		if all {
			g.protocol = p.Name
			break
		}
	}
	g.generation++
	g.state = groupCompleting
	for _, id := range g.order {
		m := g.members[id]
		out := kmsg.NewPtrJoinGroupResponse()
		out.Generation, out.LeaderID, out.MemberID = g.generation, g.leader, id
		out.Protocol, out.ProtocolType = kmsg.StringPtr(g.protocol), kmsg.StringPtr(g.protocolType)
		if g.protocol == "" {
			out.ErrorCode = kerr.InconsistentGroupProtocol.Code
		}
		if id == g.leader {
			for _, oid := range g.order {
				for _, p := range g.members[oid].protocols {
					if p.Name == g.protocol {
						jm := kmsg.NewJoinGroupResponseMember()
						jm.MemberID, jm.ProtocolMetadata = oid, p.Metadata
						out.Members = append(out.Members, jm)
					}
				}
			}
		}
		m.join <- out
		m.join = nil
		m.lastSeen = c.clock.Now()
	}
}

func (c *coordinator) remove(g *kgroup, id string) {
	delete(g.members, id)
	for i, x := range g.order {
		if x == id {
			g.order = append(g.order[:i:i], g.order[i+1:]...)
			break
		}
	}
	if len(g.members) == 0 {
		g.state = groupEmpty
	}
}

func (c *coordinator) syncGroup(ctx context.Context, r *kmsg.SyncGroupRequest) kmsg.Response {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.SetVersion(r.Version)
	c.mu.Lock()
	g := c.groups[r.Group]
	var m *kmember
	if g != nil {
		m = g.members[r.MemberID]
	}
	switch {
	case m == nil:
		c.mu.Unlock()
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp
	case r.Generation != g.generation:
		c.mu.Unlock()
		resp.ErrorCode = kerr.IllegalGeneration.Code
		return resp
	case g.state == groupPreparing:
		c.mu.Unlock()
		resp.ErrorCode = kerr.RebalanceInProgress.Code
		return resp
	}
	m.lastSeen = c.clock.Now()
	resp.Protocol, resp.ProtocolType = kmsg.StringPtr(g.protocol), kmsg.StringPtr(g.protocolType)
	if g.state == groupCompleting && r.MemberID == g.leader {
		given := map[string][]byte{}
		for _, a := range r.GroupAssignment {
			given[a.MemberID] = a.MemberAssignment
		}
		for id, om := range g.members {
			om.assignment = given[id]
			if om.sync != nil && id != r.MemberID {
				out := kmsg.NewPtrSyncGroupResponse()
				out.MemberAssignment, out.Protocol, out.ProtocolType = om.assignment, resp.Protocol, resp.ProtocolType
				om.sync <- out
				om.sync = nil
			}
		}
		g.state = groupStable
	}
	if g.state == groupStable {
		resp.MemberAssignment = m.assignment
		c.mu.Unlock()
		return resp
	}
	ch := make(chan *kmsg.SyncGroupResponse, 1)
	m.sync = ch
	c.mu.Unlock()
	resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
	return await(ctx, ch, resp, r.Version)
}

func (c *coordinator) heartbeat(r *kmsg.HeartbeatRequest) kmsg.Response {
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.SetVersion(r.Version)
	c.mu.Lock()
	defer c.mu.Unlock()
	resp.ErrorCode = c.check(r.Group, r.MemberID, r.Generation)
	if resp.ErrorCode == 0 && c.groups[r.Group].state == groupPreparing {
		resp.ErrorCode = kerr.RebalanceInProgress.Code
	}
	return resp
}

// check fences a member's request by group membership and generation, and counts as a sign
// of life.
func (c *coordinator) check(group, member string, generation int32) int16 {
	g := c.groups[group]
	if g == nil || g.members[member] == nil {
		return kerr.UnknownMemberID.Code
	}
	if generation != g.generation {
		return kerr.IllegalGeneration.Code
	}
	g.members[member].lastSeen = c.clock.Now()
	return 0
}

func (c *coordinator) leaveGroup(r *kmsg.LeaveGroupRequest) kmsg.Response {
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.SetVersion(r.Version)
	ids := []string{r.MemberID}
	if r.Version >= 3 {
		ids = nil
		for _, m := range r.Members {
			ids = append(ids, m.MemberID)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[r.Group]
	for _, id := range ids {
		out := kmsg.NewLeaveGroupResponseMember()
		out.MemberID = id
		if g == nil || g.members[id] == nil {
			out.ErrorCode = kerr.UnknownMemberID.Code
			if r.Version < 3 {
				resp.ErrorCode = kerr.UnknownMemberID.Code
			}
		} else {
			c.remove(g, id)
		}
		resp.Members = append(resp.Members, out)
	}
	if g != nil && len(g.members) > 0 {
		c.prepareRebalance(g, false)
	}
	return resp
}

// janitor expires sessions twice a second.
func (c *coordinator) janitor() {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		c.expire()
	}
}

// expire drops the members whose session expired, which starts a rebalance for the rest.
func (c *coordinator) expire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	for _, g := range c.groups {
		expired := false
		for id, m := range g.members {
			if m.join == nil && m.sync == nil && now.Sub(m.lastSeen) > m.session {
				c.remove(g, id)
				expired = true
			}
		}
		if expired && len(g.members) > 0 && g.state != groupPreparing {
			c.prepareRebalance(g, false)
		}
	}
}

func (c *coordinator) offsetCommit(ctx context.Context, r *kmsg.OffsetCommitRequest) kmsg.Response {
	resp := kmsg.NewPtrOffsetCommitResponse()
	resp.SetVersion(r.Version)
	code := int16(0)
	c.mu.Lock()
	if g := c.groups[r.Group]; r.Generation >= 0 || r.MemberID != "" || (g != nil && len(g.members) > 0) {
		code = c.check(r.Group, r.MemberID, r.Generation)
	}
	c.mu.Unlock()
	var offsets []types.OffsetCommit
	var topics []string
	if code == 0 {
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
		if err := c.chain.commit(ctx, r.Group, topics, offsets); err != nil {
			code = kafkaCode(err)
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

// chainGroups is the chain behind the coordinator: the gateway's account holds each group's
// on-chain membership.
type chainGroups struct {
	clientCtx client.Context
	signer    *txclient.Signer
	query     types.QueryClient

	mu     sync.Mutex
	member map[string]*consumer.GroupConsumer
}

func newChainGroups(clientCtx client.Context, signer *txclient.Signer, query types.QueryClient) *chainGroups {
	return &chainGroups{clientCtx: clientCtx, signer: signer, query: query, member: map[string]*consumer.GroupConsumer{}}
}

func (c *chainGroups) offsets(ctx context.Context, group string) (*types.QueryGroupOffsetsResponse, error) {
	return c.query.GroupOffsets(ctx, &types.QueryGroupOffsetsRequest{GroupId: group})
}

// commit commits as the gateway's on-chain membership of group, joining (or widening its
// subscription) first; a fenced commit is retried once after adopting the new generation.
func (c *chainGroups) commit(ctx context.Context, group string, topics []string, offsets []types.OffsetCommit) error {
	if len(offsets) == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	gc := c.member[group]
	if gc == nil || !covers(gc, topics) {
		if gc != nil {
			topics = union(topics, subscribed(gc))
		}
		var err error
		if gc, err = consumer.Join(ctx, c.clientCtx, c.signer, group, topics); err != nil {
			return err
		}
		c.member[group] = gc
	}
	for attempt := 0; ; attempt++ {
		_, err := c.signer.SubmitAndWait(&types.MsgCommitOffsets{Member: c.signer.Address(), GroupId: group, Generation: gc.Generation(), Offsets: offsets})
		if err == nil || attempt > 0 {
			return err
		}
		if !errors.Is(err, types.ErrIllegalGeneration) && !errors.Is(err, types.ErrUnknownMember) {
			return err
		}
		if herr := gc.Heartbeat(ctx); herr != nil && !errors.Is(herr, consumer.ErrRebalanced) {
			// The on-chain membership expired: join again.
			if gc, err = consumer.Join(ctx, c.clientCtx, c.signer, group, union(topics, subscribed(gc))); err != nil {
				return err
			}
			c.member[group] = gc
		}
	}
}

func subscribed(gc *consumer.GroupConsumer) []string {
	var out []string
	for _, a := range gc.Assignment() {
		out = append(out, a.Topic)
	}
	return out
}

func covers(gc *consumer.GroupConsumer, topics []string) bool {
	have := subscribed(gc)
	for _, t := range topics {
		if !slices.Contains(have, t) {
			return false
		}
	}
	return true
}

func union(a, b []string) []string {
	out := append([]string(nil), a...)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

func (c *coordinator) offsetFetch(ctx context.Context, r *kmsg.OffsetFetchRequest) kmsg.Response {
	resp := kmsg.NewPtrOffsetFetchResponse()
	resp.SetVersion(r.Version)
	committed := map[partitionKey]types.CommittedOffset{}
	res, err := c.chain.offsets(ctx, r.Group)
	if err == nil {
		for _, o := range res.Offsets {
			committed[partitionKey{o.Committed.Topic, int32(o.Committed.Partition)}] = o.Committed
		}
	} else if !errors.Is(err, types.ErrUnknownGroup) && status.Code(err) != codes.NotFound {
		// A query's error is a gRPC status: GroupOffsets answers NotFound only for an unknown
		// group (an invalid group id is InvalidArgument).
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	topics := r.Topics
	if topics == nil { // all committed partitions
		byTopic := map[string]*kmsg.OffsetFetchRequestTopic{}
		for k := range committed {
			if byTopic[k.topic] == nil {
				rt := kmsg.NewOffsetFetchRequestTopic()
				rt.Topic = k.topic
				topics = append(topics, rt)
				byTopic[k.topic] = &topics[len(topics)-1]
			}
		}
		for i := range topics {
			for k := range committed {
				if k.topic == topics[i].Topic {
					topics[i].Partitions = append(topics[i].Partitions, k.partition)
				}
			}
		}
	}
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition() // LeaderEpoch -1
			rp.Partition, rp.Offset = p, -1
			if o, ok := committed[partitionKey{t.Topic, p}]; ok {
				rp.Offset, rp.Metadata = int64(o.Offset), kmsg.StringPtr(o.Metadata)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
