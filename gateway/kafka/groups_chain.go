package kafka

import (
	"context"
	"errors"
	"slices"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cosmos/cosmos-sdk/client"
	sdk "github.com/cosmos/cosmos-sdk/types"
	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"

	"github.com/bftlog/bftlog/x/topics/client/consumer"
	"github.com/bftlog/bftlog/x/topics/client/txclient"
	"github.com/bftlog/bftlog/x/topics/types"
)

// chainGroups is the chain behind the coordinator: the gateway's account holds each group's
// on-chain membership.
type chainGroups struct {
	signer txSigner // nil for a gateway without a key
	query  types.QueryClient
	// join joins group as the gateway's own account (consumer.Join); nil without a key.
	join func(ctx context.Context, group string, topics []string) (nativeMember, error)

	// mu guards member only; it is never held across a wait for a block, so one group's
	// commit waiting for its block holds up no other group's (and no other client's).
	mu     sync.Mutex
	member map[string]*nativeGroup
	gas    map[gasShape]uint64 // simulated gas of members' commits, by shape
}

// nativeGroup is the gateway's membership of one group. Its turn (a one-slot channel, so a
// waiter gives up with its connection) orders the commits to that group, each of which may
// join first, and is held while they wait for their block.
type nativeGroup struct {
	turn  chan struct{}
	gc    nativeMember // nil until joined
	users int          // commits holding or awaiting the turn (guarded by chainGroups.mu)
}

// txSigner is what the gateway asks of its signer (*txclient.Signer).
type txSigner interface {
	Address() string
	SubmitAndWait(msgs ...sdk.Msg) (*sdk.TxResponse, error)
}

// admitter is a signer that can answer once a transaction is admitted (*txclient.Signer).
type admitter interface {
	SubmitAdmitted(gas uint64, msgs ...sdk.Msg) (*txclient.Admitted, error)
}

// nativeMember is the gateway's own membership of a group (*consumer.GroupConsumer).
type nativeMember interface {
	Generation() uint64
	Assignment() []types.TopicPartitions
	Heartbeat(ctx context.Context) error
}

func newChainGroups(clientCtx client.Context, signer *txclient.Signer, query types.QueryClient) *chainGroups {
	c := &chainGroups{query: query, member: map[string]*nativeGroup{}}
	if signer != nil {
		c.signer = signer
		c.join = func(ctx context.Context, group string, topics []string) (nativeMember, error) {
			gc, err := consumer.Join(ctx, clientCtx, signer, group, topics)
			if err != nil {
				return nil, err
			}
			return gc, nil
		}
	}
	return c
}

func (c *chainGroups) owner() string {
	if c.signer == nil {
		return ""
	}
	return c.signer.Address()
}

var errNoSigner = errors.New("this gateway has no signing key (--from)")

func (c *chainGroups) submit(ctx context.Context, msgs ...sdk.Msg) error {
	if c.signer == nil {
		return errNoSigner
	}
	_, err := c.signer.SubmitAndWait(msgs...)
	return err
}

// commitOffsets sends a Kafka member's commit with the gas a simulation gave the last commit
// of its shape: a simulation is a round trip that costs a synchronous committer as much as the
// commit itself. The caller checked the member and generation against the chain's state.
func (c *chainGroups) commitOffsets(_ context.Context, msg *types.MsgCommitOffsets) (landing, error) {
	if c.signer == nil {
		return nil, errNoSigner
	}
	key := commitShape(msg)
	c.mu.Lock()
	gas := c.gas[key]
	c.mu.Unlock()
	land, used, err := c.admit(gas, msg)
	if err != nil || land == nil {
		return land, err
	}
	c.mu.Lock()
	if c.gas == nil {
		c.gas = map[gasShape]uint64{}
	}
	c.gas[key] = used
	c.mu.Unlock()
	return func() error {
		err := land()
		if errors.Is(err, sdkerrors.ErrOutOfGas) {
			c.mu.Lock()
			delete(c.gas, key) // simulate the next one again
			c.mu.Unlock()
		}
		return err
	}, nil
}

// gasShape is what a commit's gas depends on: how many offsets and how much metadata (the
// simulated gas carries the signer's adjustment, 1.3x, for the rest: offsets' varint sizes, a
// first write of a partition's offset).
type gasShape struct {
	offsets, metadataKiB int
}

func commitShape(msg *types.MsgCommitOffsets) gasShape {
	md := 0
	for _, o := range msg.Offsets {
		md += len(o.Metadata)
	}
	return gasShape{offsets: min(len(msg.Offsets), 1<<10), metadataKiB: min(md>>10, 1<<10)}
}

// admit sends msgs with gas (0: simulated) and returns once they are admitted, with the wait for
// their block and the gas limit used; a signer that cannot answer early waits for the block here
// (the landing is then nil).
func (c *chainGroups) admit(gas uint64, msgs ...sdk.Msg) (landing, uint64, error) {
	a, ok := c.signer.(admitter)
	if !ok {
		_, err := c.signer.SubmitAndWait(msgs...)
		return nil, 0, err
	}
	adm, err := a.SubmitAdmitted(gas, msgs...)
	if err != nil {
		return nil, 0, err
	}
	return func() error { _, err := adm.Wait(); return err }, adm.Gas, nil
}

func (c *chainGroups) kafkaGroup(ctx context.Context, group string) (*types.QueryKafkaGroupResponse, error) {
	res, err := c.query.KafkaGroup(ctx, &types.QueryKafkaGroupRequest{GroupId: group})
	if unknownGroup(err) {
		return nil, nil
	}
	return res, err
}

func (c *chainGroups) consumerGroup(ctx context.Context, group string) (*types.QueryConsumerGroupResponse, error) {
	res, err := c.query.ConsumerGroup(ctx, &types.QueryConsumerGroupRequest{GroupId: group})
	if unknownGroup(err) {
		return nil, nil
	}
	return res, err
}

// unknownGroup tells whether a group query failed because the chain has no such group: a
// query's error is a gRPC status, NotFound only for an unknown group (an invalid group id is
// InvalidArgument).
func unknownGroup(err error) bool {
	return errors.Is(err, types.ErrUnknownGroup) || status.Code(err) == codes.NotFound
}

func (c *chainGroups) offsets(ctx context.Context, group string) (*types.QueryGroupOffsetsResponse, error) {
	return c.query.GroupOffsets(ctx, &types.QueryGroupOffsetsRequest{GroupId: group})
}

// commit commits as the gateway's on-chain membership of group, joining (or widening its
// subscription) first; a fenced commit is retried once after adopting the new generation. It
// returns once the commit is admitted, with the wait for its block.
func (c *chainGroups) commit(ctx context.Context, group string, topics []string, offsets []types.OffsetCommit) (landing, error) {
	if len(offsets) == 0 {
		return nil, nil
	}
	if c.join == nil {
		return nil, errNoSigner
	}
	c.mu.Lock()
	g := c.member[group]
	if g == nil {
		g = &nativeGroup{turn: make(chan struct{}, 1)}
		c.member[group] = g
	}
	g.users++
	c.mu.Unlock()
	joined := false
	defer func() {
		// Never joined (refused, or the node unreachable): a group name a client made up
		// leaves nothing behind, once no other commit holds or awaits this one's turn (else
		// a later commit would make a second membership beside the waiter's).
		c.mu.Lock()
		if g.users--; g.users == 0 && !joined && c.member[group] == g {
			delete(c.member, group)
		}
		c.mu.Unlock()
	}()
	select {
	case g.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	land, err := c.commitAs(ctx, g, group, topics, offsets)
	joined = g.gc != nil // read while holding the turn, which guards gc
	<-g.turn
	return land, err
}

// commitAs commits offsets as g, joining first if need be; the caller holds g's turn.
func (c *chainGroups) commitAs(ctx context.Context, g *nativeGroup, group string, topics []string, offsets []types.OffsetCommit) (landing, error) {
	if g.gc == nil || !covers(g.gc, topics) {
		if g.gc != nil {
			topics = union(topics, subscribed(g.gc))
		}
		gc, err := c.join(ctx, group, topics)
		if err != nil {
			return nil, err
		}
		g.gc = gc
	}
	for attempt := 0; ; attempt++ {
		// The simulation before broadcast runs the commit on the chain's state, so a fenced
		// generation shows here, before the commit is answered.
		land, _, err := c.admit(0, &types.MsgCommitOffsets{Member: c.signer.Address(), GroupId: group, Generation: g.gc.Generation(), Offsets: offsets})
		if err == nil || attempt > 0 {
			return land, err
		}
		if !errors.Is(err, types.ErrIllegalGeneration) && !errors.Is(err, types.ErrUnknownMember) {
			return nil, err
		}
		if herr := g.gc.Heartbeat(ctx); herr != nil && !errors.Is(herr, consumer.ErrRebalanced) {
			// The on-chain membership expired: join again.
			gc, err := c.join(ctx, group, union(topics, subscribed(g.gc)))
			if err != nil {
				return nil, err
			}
			g.gc = gc
		}
	}
}

func subscribed(gc nativeMember) []string {
	var out []string
	for _, a := range gc.Assignment() {
		out = append(out, a.Topic)
	}
	return out
}

func covers(gc nativeMember, topics []string) bool {
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
