package kafka

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"cosmossdk.io/log"
	"cosmossdk.io/store"
	"cosmossdk.io/store/metrics"
	storetypes "cosmossdk.io/store/types"
	cmtproto "github.com/cometbft/cometbft/proto/tendermint/types"
	dbm "github.com/cosmos/cosmos-db"

	addresscodec "github.com/cosmos/cosmos-sdk/codec/address"
	"github.com/cosmos/cosmos-sdk/runtime"
	sdk "github.com/cosmos/cosmos-sdk/types"
	moduletestutil "github.com/cosmos/cosmos-sdk/types/module/testutil"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	govtypes "github.com/cosmos/cosmos-sdk/x/gov/types"

	"github.com/bftlog/bftlog/x/topics"
	"github.com/bftlog/bftlog/x/topics/keeper"
	"github.com/bftlog/bftlog/x/topics/types"
)

// keeperChain is the chain behind the coordinators of these tests: x/topics' real keeper on an
// in-memory store, with a block every blockTime (block time advancing as the wall clock does,
// the EndBlocker run each block) and each submit applied all or nothing, as a transaction.
type keeperChain struct {
	mu    sync.Mutex
	ctx   sdk.Context
	k     keeper.Keeper
	msgs  types.MsgServer
	query types.QueryServer
	addr  string
	stop  chan struct{}
	done  chan struct{}
}

const blockTime = 50 * time.Millisecond

func newKeeperChain(t *testing.T) *keeperChain {
	t.Helper()
	key := storetypes.NewKVStoreKey(types.StoreKey)
	cms := store.NewCommitMultiStore(dbm.NewMemDB(), log.NewNopLogger(), metrics.NewNoOpMetrics())
	cms.MountStoreWithDB(key, storetypes.StoreTypeIAVL, nil)
	require.NoError(t, cms.LoadLatestVersion())
	ctx := sdk.NewContext(cms, cmtproto.Header{}, false, log.NewNopLogger()).WithBlockHeight(1).WithBlockTime(time.Now())
	enc := moduletestutil.MakeTestEncodingConfig(topics.AppModule{})
	ac := addresscodec.NewBech32Codec("bftlog")
	gov, err := ac.BytesToString(authtypes.NewModuleAddress(govtypes.ModuleName))
	require.NoError(t, err)
	owner, err := ac.BytesToString([]byte("gateway_____________"))
	require.NoError(t, err)
	k := keeper.NewKeeper(enc.Codec, ac, runtime.NewKVStoreService(key), gov)
	require.NoError(t, k.InitGenesis(ctx, types.DefaultGenesis()))
	c := &keeperChain{ctx: ctx, k: k, msgs: keeper.NewMsgServerImpl(k), query: keeper.NewQueryServer(k), addr: owner,
		stop: make(chan struct{}), done: make(chan struct{})}
	_, err = c.msgs.CreateGroup(ctx, &types.MsgCreateGroup{Admin: owner, GroupId: testGroup, JoinPolicy: types.JOIN_POLICY_ANYONE})
	require.NoError(t, err)
	go c.blocks()
	t.Cleanup(func() { close(c.stop); <-c.done })
	return c
}

func (c *keeperChain) blocks() {
	defer close(c.done)
	t := time.NewTicker(blockTime)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case now := <-t.C:
			c.mu.Lock()
			c.ctx = c.ctx.WithBlockHeight(c.ctx.BlockHeight() + 1).WithBlockTime(now)
			if err := c.k.EndBlocker(c.ctx); err != nil {
				panic(err)
			}
			c.mu.Unlock()
		}
	}
}

func (c *keeperChain) owner() string { return c.addr }

func (c *keeperChain) submit(_ context.Context, msgs ...sdk.Msg) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx, write := c.ctx.CacheContext()
	ctx = ctx.WithGasMeter(storetypes.NewInfiniteGasMeter())
	for _, m := range msgs {
		var err error
		switch m := m.(type) {
		case *types.MsgKafkaJoinGroup:
			_, err = c.msgs.KafkaJoinGroup(ctx, m)
		case *types.MsgKafkaSyncGroup:
			_, err = c.msgs.KafkaSyncGroup(ctx, m)
		case *types.MsgKafkaHeartbeat:
			_, err = c.msgs.KafkaHeartbeat(ctx, m)
		case *types.MsgKafkaLeaveGroup:
			_, err = c.msgs.KafkaLeaveGroup(ctx, m)
		case *types.MsgCommitOffsets:
			_, err = c.msgs.CommitOffsets(ctx, m)
		default:
			panic("unexpected message")
		}
		if err != nil {
			return err
		}
	}
	write()
	return nil
}

func (c *keeperChain) kafkaGroup(_ context.Context, group string) (*types.QueryKafkaGroupResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	res, err := c.query.KafkaGroup(c.ctx, &types.QueryKafkaGroupRequest{GroupId: group})
	if err != nil && errorsIsUnknownGroup(err) {
		return nil, nil
	}
	return res, err
}

func (c *keeperChain) consumerGroup(_ context.Context, group string) (*types.QueryConsumerGroupResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	res, err := c.query.ConsumerGroup(c.ctx, &types.QueryConsumerGroupRequest{GroupId: group})
	if err != nil && errorsIsUnknownGroup(err) {
		return nil, nil
	}
	return res, err
}

func (c *keeperChain) commit(context.Context, string, []string, []types.OffsetCommit) (landing, error) {
	panic("no simple commits here")
}

// commitOffsets applies the commit at once, as a transaction its block already holds.
func (c *keeperChain) commitOffsets(ctx context.Context, msg *types.MsgCommitOffsets) (landing, error) {
	return nil, c.submit(ctx, msg)
}

func (c *keeperChain) offsets(_ context.Context, group string) (*types.QueryGroupOffsetsResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.query.GroupOffsets(c.ctx, &types.QueryGroupOffsetsRequest{GroupId: group})
}

func errorsIsUnknownGroup(err error) bool { return types.ErrUnknownGroup.Is(err) }

const (
	testGroup   = "billing"
	testSession = 3 * time.Second
)

// memberID does the KIP-394 handshake: a v5 join without an id is answered with one.
func memberID(t *testing.T, c *coordinator) string {
	t.Helper()
	resp := c.joinGroup(context.Background(), joinReq(""), "rdkafka").(*kmsg.JoinGroupResponse)
	require.Equal(t, kerr.MemberIDRequired.Code, resp.ErrorCode)
	require.Regexp(t, `^rdkafka-[0-9a-f]{24}$`, resp.MemberID)
	return resp.MemberID
}

func joinReq(id string) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.SetVersion(5)
	r.Group, r.MemberID, r.ProtocolType = testGroup, id, "consumer"
	r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = int32(testSession/time.Millisecond), 4000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte("subscription of "+id)
	r.Protocols = append(r.Protocols, p)
	return r
}

// join runs a JoinGroup in the background, as a client's request waiting for its generation.
func join(c *coordinator, id string) <-chan *kmsg.JoinGroupResponse {
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { ch <- c.joinGroup(context.Background(), joinReq(id), "rdkafka").(*kmsg.JoinGroupResponse) }()
	return ch
}

func receive[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatal("no answer within 20 s")
		panic("unreachable")
	}
}

func syncGroup(c *coordinator, id string, generation int32, assignment map[string]string) <-chan *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupRequest()
	r.SetVersion(3)
	r.Group, r.MemberID, r.Generation = testGroup, id, generation
	for m, a := range assignment {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = m, []byte(a)
		r.GroupAssignment = append(r.GroupAssignment, ga)
	}
	ch := make(chan *kmsg.SyncGroupResponse, 1)
	go func() { ch <- c.syncGroup(context.Background(), r).(*kmsg.SyncGroupResponse) }()
	return ch
}

func heartbeat(c *coordinator, id string, generation int32) int16 {
	r := kmsg.NewPtrHeartbeatRequest()
	r.Group, r.MemberID, r.Generation = testGroup, id, generation
	return c.heartbeat(context.Background(), r).(*kmsg.HeartbeatResponse).ErrorCode
}

func commit(c *coordinator, id string, generation int32, offset int64) int16 {
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Group, r.MemberID, r.Generation = testGroup, id, generation
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "orders"
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, offset
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	return c.offsetCommit(context.Background(), r).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
}

// Two gateways (coordinators) in front of one chain serve one group: members that joined
// through either form one generation; the leader's assignment, given to one gateway, reaches
// the member on the other; commits are fenced by the chain's generation; when one gateway
// dies, its member expires on chain and the survivor's member is told to rejoin and gets a
// generation of its own.
func TestGatewaysShareGroupsThroughTheChain(t *testing.T) {
	chain := newKeeperChain(t)
	chain.mu.Lock()
	require.NoError(t, chain.k.Topics.Set(chain.ctx, "orders", types.Topic{Name: "orders", Partitions: 1}))
	require.NoError(t, chain.k.Partitions.Set(chain.ctx, types.TopicPartition{Topic: "orders", Partition: 0}, types.Partition{Topic: "orders", HighWatermark: 10}))
	chain.mu.Unlock()
	a, b := newCoordinator(chain), newCoordinator(chain)
	t.Cleanup(a.close)

	idA, idB := memberID(t, a), memberID(t, b)
	ja, jb := join(a, idA), join(b, idB)
	ra, rb := receive(t, ja), receive(t, jb)
	require.Zero(t, ra.ErrorCode)
	require.Zero(t, rb.ErrorCode)
	require.Equal(t, ra.Generation, rb.Generation, "one generation across gateways")
	leader, follower := a, b
	leaderID, followerID, lr := idA, idB, ra
	if ra.LeaderID != idA {
		leader, follower, leaderID, followerID, lr = b, a, idB, idA, rb
	}
	require.Len(t, lr.Members, 2, "the leader sees both members, whichever gateway they came through")
	gen := lr.Generation

	fs := syncGroup(follower, followerID, gen, nil) // waits for the leader's assignment
	ls := syncGroup(leader, leaderID, gen, map[string]string{leaderID: "p0", followerID: "p1"})
	require.Equal(t, "p0", string(receive(t, ls).MemberAssignment))
	require.Equal(t, "p1", string(receive(t, fs).MemberAssignment))
	require.Zero(t, heartbeat(follower, followerID, gen))
	require.Equal(t, kerr.IllegalGeneration.Code, heartbeat(follower, followerID, gen-1))

	require.Zero(t, commit(follower, followerID, gen, 5))
	require.Equal(t, kerr.IllegalGeneration.Code, commit(follower, followerID, gen-1, 6))
	require.Equal(t, kerr.UnknownMemberID.Code, commit(follower, "nobody", gen, 6))

	// Gateway b dies: nothing renews its member, the chain expires it after its session, and
	// a's member is told to rejoin.
	b.close()
	survivor, survivorID, dead := a, idA, idB
	start := time.Now()
	code := int16(0)
	for code == 0 && time.Since(start) < 3*testSession {
		time.Sleep(200 * time.Millisecond)
		code = heartbeat(survivor, survivorID, gen)
	}
	require.Equal(t, kerr.RebalanceInProgress.Code, code)
	t.Logf("the dead gateway's member expired and the group started to rebalance %v after the gateway stopped (session %v)", time.Since(start).Round(10*time.Millisecond), testSession)
	r := receive(t, join(survivor, survivorID))
	require.Zero(t, r.ErrorCode)
	require.Equal(t, gen+1, r.Generation)
	require.Equal(t, survivorID, r.LeaderID)
	require.Len(t, r.Members, 1)
	require.NotEqual(t, dead, r.Members[0].MemberID)

	res, err := chain.offsets(context.Background(), testGroup)
	require.NoError(t, err)
	require.Len(t, res.Offsets, 1)
	require.Equal(t, uint64(5), res.Offsets[0].Committed.Offset)
}

// A member leaving through its gateway empties the group at once; a member cannot be taken
// over by another account (the chain checks the owner).
func TestGatewayLeaveGroup(t *testing.T) {
	chain := newKeeperChain(t)
	c := newCoordinator(chain)
	t.Cleanup(c.close)
	id := memberID(t, c)
	r := receive(t, join(c, id))
	require.Zero(t, r.ErrorCode)
	require.Zero(t, receive(t, syncGroup(c, id, r.Generation, map[string]string{id: "all"})).ErrorCode)

	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.SetVersion(3)
	lr.Group = testGroup
	m := kmsg.NewLeaveGroupRequestMember()
	m.MemberID = id
	lr.Members = append(lr.Members, m)
	resp := c.leaveGroup(context.Background(), lr).(*kmsg.LeaveGroupResponse)
	require.Zero(t, resp.ErrorCode)
	require.Zero(t, resp.Members[0].ErrorCode)
	st, err := chain.kafkaGroup(context.Background(), testGroup)
	require.NoError(t, err)
	require.Equal(t, types.KAFKA_GROUP_STATE_EMPTY, st.Group.State)
	require.Empty(t, st.Members)

	other := &types.MsgKafkaJoinGroup{Owner: chain.addr, GroupId: testGroup, MemberId: "taken", ProtocolType: "consumer",
		SessionTimeoutMs: 3000, Protocols: []types.KafkaProtocol{{Name: "range"}}}
	require.NoError(t, chain.submit(context.Background(), other))
	thief := *other
	var err2 error
	thief.Owner, err2 = addresscodec.NewBech32Codec("bftlog").BytesToString([]byte("intruder____________"))
	require.NoError(t, err2)
	require.ErrorIs(t, chain.submit(context.Background(), &thief), types.ErrGroupAuthorization)
}
