package kafka

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/types"
)

// landingChain admits every commit at once and lands it when the test says: applied to its
// offsets, or failed in its block.
type landingChain struct {
	keeperChainless
	mu      sync.Mutex
	onChain map[partitionKey]uint64
	blocks  chan bool // true: the next admitted commit lands; false: it fails in its block
}

// keeperChainless is a groupChain without groups, for tests of commits alone.
type keeperChainless struct{}

func (keeperChainless) owner() string                            { return "bftlog1gateway" }
func (keeperChainless) submit(context.Context, ...sdk.Msg) error { return nil }

// kafkaGroup: every group is at generation 1 with one member, m-1.
func (keeperChainless) kafkaGroup(_ context.Context, group string) (*types.QueryKafkaGroupResponse, error) {
	return &types.QueryKafkaGroupResponse{Group: types.KafkaGroup{GroupId: group, Generation: 1, State: types.KAFKA_GROUP_STATE_STABLE},
		Members: []types.KafkaMember{{GroupId: group, MemberId: "m-1"}}}, nil
}

func (keeperChainless) consumerGroup(context.Context, string) (*types.QueryConsumerGroupResponse, error) {
	return nil, nil
}

func (c *landingChain) commitOffsets(_ context.Context, msg *types.MsgCommitOffsets) (landing, error) {
	return c.land(msg.Offsets), nil
}

func (c *landingChain) commit(_ context.Context, _ string, _ []string, offsets []types.OffsetCommit) (landing, error) {
	return c.land(offsets), nil
}

func (c *landingChain) land(offsets []types.OffsetCommit) landing {
	return func() error {
		if !<-c.blocks {
			return errors.New("failed in its block: illegal generation")
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, o := range offsets {
			c.onChain[partitionKey{o.Topic, int32(o.Partition)}] = o.Offset
		}
		return nil
	}
}

func (c *landingChain) offsets(context.Context, string) (*types.QueryGroupOffsetsResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	res := &types.QueryGroupOffsetsResponse{}
	for k, o := range c.onChain {
		res.Offsets = append(res.Offsets, types.GroupOffset{Committed: types.CommittedOffset{Topic: k.topic, Partition: uint32(k.partition), Offset: o}})
	}
	return res, nil
}

func commitReq(group string, offset int64) *kmsg.OffsetCommitRequest {
	r := simpleCommit(group)
	r.Topics[0].Partitions[0].Offset = offset
	return r
}

func fetched(t *testing.T, c *coordinator, group string) int64 {
	t.Helper()
	r := kmsg.NewPtrOffsetFetchRequest()
	r.SetVersion(7)
	r.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = "orders", []int32{0}
	r.Topics = append(r.Topics, rt)
	resp := c.offsetFetch(context.Background(), r).(*kmsg.OffsetFetchResponse)
	require.Zero(t, resp.ErrorCode)
	return resp.Topics[0].Partitions[0].Offset
}

// A commit is answered once admitted, before its block; OffsetFetch through the same gateway
// answers it from then on. One that fails in its block leaves the chain's earlier offset, which
// OffsetFetch then answers: a consumer resuming reads records again, it never skips one.
func TestCommitAnsweredOnceAdmittedReadYourWrites(t *testing.T) {
	chain := &landingChain{onChain: map[partitionKey]uint64{}, blocks: make(chan bool)}
	c := newCoordinator(chain)
	t.Cleanup(c.close)
	var logged []string
	var logMu sync.Mutex
	c.log = func(format string, args ...any) { logMu.Lock(); logged = append(logged, format); logMu.Unlock() }

	for _, group := range []string{"simple", "member"} {
		req := func(offset int64) *kmsg.OffsetCommitRequest {
			r := commitReq(group, offset)
			if group == "member" {
				r.MemberID, r.Generation = "m-1", 1
			}
			return r
		}
		start := time.Now()
		resp := c.offsetCommit(context.Background(), req(5)).(*kmsg.OffsetCommitResponse)
		took := time.Since(start)
		require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
		require.Equal(t, int64(5), fetched(t, c, group), "the gateway answers its admitted commit")
		chain.blocks <- true // lands
		require.Eventually(t, func() bool { chain.mu.Lock(); defer chain.mu.Unlock(); return len(chain.onChain) > 0 }, 5*time.Second, 10*time.Millisecond)

		resp = c.offsetCommit(context.Background(), req(9)).(*kmsg.OffsetCommitResponse)
		require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
		require.Equal(t, int64(9), fetched(t, c, group))
		chain.blocks <- false // fenced in its block
		require.Eventually(t, func() bool { return fetched(t, c, group) == 5 }, 5*time.Second, 10*time.Millisecond,
			"after the failed block the chain's earlier offset stands")
		t.Logf("%s: commit answered in %v before its block; a commit that failed in its block fell back to the chain's offset 5", group, took)
		chain.mu.Lock()
		chain.onChain = map[partitionKey]uint64{}
		chain.mu.Unlock()
	}
	logMu.Lock()
	require.Len(t, logged, 2, "each commit that did not land is logged")
	logMu.Unlock()

	// A fenced commit is answered as Kafka answers it, before anything is sent.
	stale := commitReq("member", 12)
	stale.MemberID, stale.Generation = "m-1", 0
	resp := c.offsetCommit(context.Background(), stale).(*kmsg.OffsetCommitResponse)
	require.Equal(t, kerr.IllegalGeneration.Code, resp.Topics[0].Partitions[0].ErrorCode)
	gone := commitReq("member", 12)
	gone.MemberID, gone.Generation = "m-2", 1
	resp = c.offsetCommit(context.Background(), gone).(*kmsg.OffsetCommitResponse)
	require.Equal(t, kerr.UnknownMemberID.Code, resp.Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, int64(-1), fetched(t, c, "member"), "nothing was committed")
}
