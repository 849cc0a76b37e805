package kafka

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	errorsmod "cosmossdk.io/errors"

	"github.com/bftlog/bftlog/x/topics/types"
)

// fakeClock is a clock the test moves: timers fire when Advance passes them.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	clock   *fakeClock
	at      time.Time
	f       func()
	stopped bool
}

func (t *fakeTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) stopper {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{clock: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

// Advance moves the time on by d and runs the timers due by then, in order.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		var due *fakeTimer
		for _, t := range c.timers {
			if !t.stopped && !t.at.After(c.now) && (due == nil || t.at.Before(due.at)) {
				due = t
			}
		}
		if due != nil {
			due.stopped = true
		}
		c.mu.Unlock()
		if due == nil {
			return
		}
		due.f() // outside the clock's lock: it takes the coordinator's and may arm a timer
	}
}

// fakeChain records the commits the coordinator sends to the chain.
type fakeChain struct {
	mu        sync.Mutex
	commits   [][]types.OffsetCommit
	commitErr error
	committed []types.GroupOffset
	readErr   error
}

func (f *fakeChain) commit(_ context.Context, _ string, _ []string, offsets []types.OffsetCommit) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.commitErr != nil {
		return f.commitErr
	}
	f.commits = append(f.commits, offsets)
	return nil
}

func (f *fakeChain) offsets(context.Context, string) (*types.QueryGroupOffsetsResponse, error) {
	if f.readErr != nil {
		return nil, f.readErr
	}
	return &types.QueryGroupOffsetsResponse{Offsets: f.committed}, nil
}

func newTestCoordinator(t *testing.T) (*coordinator, *fakeClock, *fakeChain) {
	clk := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	chain := &fakeChain{}
	c := newCoordinator(chain, clk)
	t.Cleanup(c.close)
	return c, clk, chain
}

const (
	testGroup   = "billing"
	testSession = 10 * time.Second
)

// memberID does the KIP-394 handshake: a v5 join without an id is answered with one.
func memberID(t *testing.T, c *coordinator) string {
	t.Helper()
	r := joinReq("", "range")
	resp := c.joinGroup(context.Background(), r).(*kmsg.JoinGroupResponse)
	require.Equal(t, kerr.MemberIDRequired.Code, resp.ErrorCode)
	require.NotEmpty(t, resp.MemberID)
	return resp.MemberID
}

func joinReq(id string, protocols ...string) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.SetVersion(5)
	r.Group, r.MemberID, r.ProtocolType = testGroup, id, "consumer"
	r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = int32(testSession/time.Millisecond), 20_000
	for _, p := range protocols {
		jp := kmsg.NewJoinGroupRequestProtocol()
		jp.Name, jp.Metadata = p, []byte("meta-of-"+id+"-"+p)
		r.Protocols = append(r.Protocols, jp)
	}
	return r
}

// join starts a JoinGroup that waits for the join phase to end.
func join(c *coordinator, id string, protocols ...string) <-chan *kmsg.JoinGroupResponse {
	out := make(chan *kmsg.JoinGroupResponse, 1)
	go func() {
		out <- c.joinGroup(context.Background(), joinReq(id, protocols...)).(*kmsg.JoinGroupResponse)
	}()
	return out
}

// waitJoining waits until the members' joins are waiting in the coordinator.
func waitJoining(t *testing.T, c *coordinator, ids ...string) {
	t.Helper()
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		g := c.groups[testGroup]
		if g == nil {
			return false
		}
		for _, id := range ids {
			if m := g.members[id]; m == nil || m.join == nil {
				return false
			}
		}
		return true
	}, 2*time.Second, time.Millisecond)
}

func receive[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(2 * time.Second):
		t.Fatal("no answer")
		var zero T
		return zero
	}
}

func syncReq(id string, generation int32, assignment map[string]string) *kmsg.SyncGroupRequest {
	r := kmsg.NewPtrSyncGroupRequest()
	r.SetVersion(3)
	r.Group, r.MemberID, r.Generation = testGroup, id, generation
	for mid, a := range assignment {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = mid, []byte(a)
		r.GroupAssignment = append(r.GroupAssignment, ga)
	}
	return r
}

func heartbeat(c *coordinator, id string, generation int32) int16 {
	r := kmsg.NewPtrHeartbeatRequest()
	r.SetVersion(3)
	r.Group, r.MemberID, r.Generation = testGroup, id, generation
	return c.heartbeat(r).(*kmsg.HeartbeatResponse).ErrorCode
}

// formGroup has two members join one generation and take the leader's assignment; it returns
// the leader's and the follower's ids.
func formGroup(t *testing.T, c *coordinator, clk *fakeClock) (string, string) {
	t.Helper()
	a, b := memberID(t, c), memberID(t, c)
	require.NotEqual(t, a, b)
	ja := join(c, a, "range", "roundrobin")
	waitJoining(t, c, a)
	jb := join(c, b, "roundrobin", "range")
	waitJoining(t, c, a, b)
	// A new group waits initialRebalanceDelay for its members to gather.
	clk.Advance(initialRebalanceDelay - time.Millisecond)
	select {
	case <-ja:
		t.Fatal("join phase ended before the initial delay")
	default:
	}
	clk.Advance(time.Millisecond)
	ra, rb := receive(t, ja), receive(t, jb)

	require.Zero(t, ra.ErrorCode)
	require.Zero(t, rb.ErrorCode)
	require.EqualValues(t, 1, ra.Generation)
	require.EqualValues(t, 1, rb.Generation)
	require.Equal(t, a, ra.LeaderID, "the first member to join leads")
	require.Equal(t, a, rb.LeaderID)
	require.Equal(t, a, ra.MemberID)
	require.Equal(t, b, rb.MemberID)
	require.Equal(t, "range", *ra.Protocol, "the leader's first protocol every member supports")
	require.Equal(t, "range", *rb.Protocol)
	require.Equal(t, "consumer", *ra.ProtocolType)
	require.Len(t, ra.Members, 2, "the leader gets the member list")
	require.Equal(t, a, ra.Members[0].MemberID)
	require.Equal(t, "meta-of-"+a+"-range", string(ra.Members[0].ProtocolMetadata))
	require.Equal(t, b, ra.Members[1].MemberID)
	require.Equal(t, "meta-of-"+b+"-range", string(ra.Members[1].ProtocolMetadata))
	require.Empty(t, rb.Members, "followers get no member list")

	// The follower's SyncGroup waits for the leader's, which carries everyone's assignment.
	sb := make(chan *kmsg.SyncGroupResponse, 1)
	go func() {
		sb <- c.syncGroup(context.Background(), syncReq(b, 1, nil)).(*kmsg.SyncGroupResponse)
	}()
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.groups[testGroup].members[b].sync != nil
	}, 2*time.Second, time.Millisecond)
	sa := c.syncGroup(context.Background(), syncReq(a, 1, map[string]string{a: "partitions-0-1", b: "partitions-2"})).(*kmsg.SyncGroupResponse)
	require.Zero(t, sa.ErrorCode)
	require.Equal(t, "partitions-0-1", string(sa.MemberAssignment))
	require.Equal(t, "range", *sa.Protocol)
	got := receive(t, sb)
	require.Zero(t, got.ErrorCode)
	require.Equal(t, "partitions-2", string(got.MemberAssignment))
	require.Equal(t, "range", *got.Protocol)

	// A sync after the group is stable answers at once with the member's assignment.
	again := c.syncGroup(context.Background(), syncReq(b, 1, nil)).(*kmsg.SyncGroupResponse)
	require.Zero(t, again.ErrorCode)
	require.Equal(t, "partitions-2", string(again.MemberAssignment))
	return a, b
}

// Two members join one generation, the leader gets the member list and its SyncGroup
// distributes the assignment; heartbeats keep both members.
func TestCoordinatorJoinSyncHeartbeat(t *testing.T) {
	c, clk, _ := newTestCoordinator(t)
	a, b := formGroup(t, c, clk)

	for i := 0; i < 5; i++ { // 25s, well past the 10s session, heartbeating every 5s
		clk.Advance(5 * time.Second)
		require.Zero(t, heartbeat(c, a, 1))
		require.Zero(t, heartbeat(c, b, 1))
		c.expire()
	}
	c.mu.Lock()
	g := c.groups[testGroup]
	require.Equal(t, groupStable, g.state)
	require.EqualValues(t, 1, g.generation)
	require.Len(t, g.members, 2)
	c.mu.Unlock()
}

// A member that stops heartbeating is dropped after its session timeout; the group rebalances
// into a new generation without it, and fencing answers stale generations and unknown members.
func TestCoordinatorExpiresSilentMember(t *testing.T) {
	c, clk, _ := newTestCoordinator(t)
	a, b := formGroup(t, c, clk)

	clk.Advance(6 * time.Second)
	require.Zero(t, heartbeat(c, a, 1))
	c.expire()
	require.Zero(t, heartbeat(c, b, 1), "6s of silence is within the 10s session")
	clk.Advance(6 * time.Second)
	require.Zero(t, heartbeat(c, a, 1))
	c.expire()
	require.Zero(t, heartbeat(c, a, 1), "a is alive")
	clk.Advance(testSession + time.Millisecond) // b silent past its session; a heartbeats along
	require.Zero(t, heartbeat(c, a, 1))
	c.expire()

	require.Equal(t, kerr.UnknownMemberID.Code, heartbeat(c, b, 1), "b expired")
	require.Equal(t, kerr.RebalanceInProgress.Code, heartbeat(c, a, 1), "a must rejoin")
	sync := c.syncGroup(context.Background(), syncReq(a, 1, nil)).(*kmsg.SyncGroupResponse)
	require.Equal(t, kerr.RebalanceInProgress.Code, sync.ErrorCode)

	// a rejoins: no initial delay for an existing group, and a is the only member.
	ra := receive(t, join(c, a, "range"))
	require.Zero(t, ra.ErrorCode)
	require.EqualValues(t, 2, ra.Generation)
	require.Equal(t, a, ra.LeaderID)
	require.Len(t, ra.Members, 1)
	require.Equal(t, a, ra.Members[0].MemberID)

	// The old generation is fenced.
	require.Equal(t, kerr.IllegalGeneration.Code, heartbeat(c, a, 1))
	stale := c.syncGroup(context.Background(), syncReq(a, 1, map[string]string{a: "x"})).(*kmsg.SyncGroupResponse)
	require.Equal(t, kerr.IllegalGeneration.Code, stale.ErrorCode)
	sa := c.syncGroup(context.Background(), syncReq(a, 2, map[string]string{a: "everything"})).(*kmsg.SyncGroupResponse)
	require.Zero(t, sa.ErrorCode)
	require.Equal(t, "everything", string(sa.MemberAssignment))
	require.Zero(t, heartbeat(c, a, 2))

	// Members the group does not know, in a known group and in an unknown one.
	require.Equal(t, kerr.UnknownMemberID.Code, heartbeat(c, "nobody", 2))
	unknown := c.syncGroup(context.Background(), syncReq("nobody", 2, nil)).(*kmsg.SyncGroupResponse)
	require.Equal(t, kerr.UnknownMemberID.Code, unknown.ErrorCode)
	r := kmsg.NewPtrHeartbeatRequest()
	r.Group, r.MemberID, r.Generation = "other-group", a, 2
	require.Equal(t, kerr.UnknownMemberID.Code, c.heartbeat(r).(*kmsg.HeartbeatResponse).ErrorCode)
}

// A member that leaves starts a rebalance for the others; leaving twice is an unknown member.
func TestCoordinatorLeaveGroup(t *testing.T) {
	c, clk, _ := newTestCoordinator(t)
	a, b := formGroup(t, c, clk)

	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.SetVersion(3)
	leave.Group = testGroup
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = b
	leave.Members = append(leave.Members, lm)
	resp := c.leaveGroup(leave).(*kmsg.LeaveGroupResponse)
	require.Zero(t, resp.ErrorCode)
	require.Len(t, resp.Members, 1)
	require.Equal(t, b, resp.Members[0].MemberID)
	require.Zero(t, resp.Members[0].ErrorCode)

	require.Equal(t, kerr.RebalanceInProgress.Code, heartbeat(c, a, 1))
	require.Equal(t, kerr.UnknownMemberID.Code, heartbeat(c, b, 1))

	old := kmsg.NewPtrLeaveGroupRequest() // v0: one member id, the error at the top level
	old.Group, old.MemberID = testGroup, b
	again := c.leaveGroup(old).(*kmsg.LeaveGroupResponse)
	require.Equal(t, kerr.UnknownMemberID.Code, again.ErrorCode)

	ra := receive(t, join(c, a, "range"))
	require.Zero(t, ra.ErrorCode)
	require.EqualValues(t, 2, ra.Generation)
	require.Len(t, ra.Members, 1)
}

// OffsetCommit is fenced by the Kafka generation before anything reaches the chain; the chain's
// own fencing comes back as Kafka's code. OffsetFetch reads the chain's committed offsets.
func TestCoordinatorOffsetsGoThroughTheChain(t *testing.T) {
	c, clk, chain := newTestCoordinator(t)
	a, _ := formGroup(t, c, clk)

	commit := func(generation int32, offset int64) int16 {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.SetVersion(7)
		r.Group, r.MemberID, r.Generation = testGroup, a, generation
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "orders"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 1, offset
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		resp := c.offsetCommit(context.Background(), r).(*kmsg.OffsetCommitResponse)
		require.Len(t, resp.Topics, 1)
		require.Len(t, resp.Topics[0].Partitions, 1)
		require.EqualValues(t, 1, resp.Topics[0].Partitions[0].Partition)
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	require.Equal(t, kerr.IllegalGeneration.Code, commit(0, 5))
	require.Empty(t, chain.commits, "a fenced commit does not reach the chain")
	require.Zero(t, commit(1, 42))
	require.Equal(t, [][]types.OffsetCommit{{{Topic: "orders", Partition: 1, Offset: 42}}}, chain.commits)
	chain.commitErr = errorsmod.ABCIError(types.ModuleName, types.ErrIllegalGeneration.ABCICode(), "on-chain generation moved")
	require.Equal(t, kerr.IllegalGeneration.Code, commit(1, 43))

	fetch := func() *kmsg.OffsetFetchResponse {
		r := kmsg.NewPtrOffsetFetchRequest()
		r.SetVersion(7)
		r.Group = testGroup
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "orders", []int32{0, 1}
		r.Topics = append(r.Topics, rt)
		return c.offsetFetch(context.Background(), r).(*kmsg.OffsetFetchResponse)
	}
	chain.committed = []types.GroupOffset{{Committed: types.CommittedOffset{Topic: "orders", Partition: 1, Offset: 42, Metadata: "m"}}}
	got := fetch()
	require.Zero(t, got.ErrorCode)
	require.EqualValues(t, -1, got.Topics[0].Partitions[0].Offset, "nothing committed")
	require.EqualValues(t, 42, got.Topics[0].Partitions[1].Offset)
	require.Equal(t, "m", *got.Topics[0].Partitions[1].Metadata)

	chain.readErr = status.Error(codes.NotFound, "no such group") // a group nothing committed for
	got = fetch()
	require.Zero(t, got.ErrorCode)
	require.EqualValues(t, -1, got.Topics[0].Partitions[1].Offset)
	chain.readErr = status.Error(codes.Unavailable, "node down")
	require.Equal(t, kerr.CoordinatorNotAvailable.Code, fetch().ErrorCode)
}
