package kafka

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/grpc"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/client/txclient"
	"github.com/bftlog/bftlog/x/topics/types"
)

// stuckSigner commits at once, except offsets of group "stuck": those wait for release, as
// on a chain whose next block does not come.
type stuckSigner struct {
	stuck   chan struct{} // one send per transaction that started waiting
	release chan struct{}
}

func (s *stuckSigner) Address() string { return "bftlog1gateway" }

func (s *stuckSigner) SubmitAndWait(msgs ...sdk.Msg) (*sdk.TxResponse, error) {
	for _, m := range msgs {
		if c, ok := m.(*types.MsgCommitOffsets); ok && c.GroupId == "stuck" {
			s.stuck <- struct{}{}
			<-s.release
		}
	}
	return &sdk.TxResponse{}, nil
}

// joinedMember is a native membership subscribed to what it joined with.
type joinedMember struct{ topics []string }

func (m joinedMember) Generation() uint64 { return 1 }
func (m joinedMember) Assignment() []types.TopicPartitions {
	var out []types.TopicPartitions
	for _, t := range m.topics {
		out = append(out, types.TopicPartitions{Topic: t, Partitions: []uint32{0}})
	}
	return out
}
func (m joinedMember) Heartbeat(context.Context) error { return nil }

// topicQueries answers Metadata's and Fetch's queries: topic "orders" of one empty partition.
type topicQueries struct{ types.QueryClient }

func (topicQueries) Topic(context.Context, *types.QueryTopicRequest, ...grpc.CallOption) (*types.QueryTopicResponse, error) {
	return &types.QueryTopicResponse{Topic: types.Topic{Name: "orders", Partitions: 1}}, nil
}

func (topicQueries) Fetch(_ context.Context, req *types.QueryFetchRequest, _ ...grpc.CallOption) (*types.QueryFetchResponse, error) {
	return &types.QueryFetchResponse{NextOffset: req.Offset}, nil
}

func simpleCommit(group string) *kmsg.OffsetCommitRequest {
	r := kmsg.NewPtrOffsetCommitRequest()
	r.SetVersion(7)
	r.Group, r.Generation = group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "orders"
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Offset = 5
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	return r
}

// Without --users every client is one principal. One client's request waiting for its block
// (a simple consumer's OffsetCommit, on a chain whose block does not come) must not hold up
// another connection: its ApiVersions, Metadata, Fetch and a commit to another group are
// answered while the first still waits.
func TestAttackAStuckRequestDoesNotHoldUpOtherConnections(t *testing.T) {
	s, err := Listen(Config{Addr: "127.0.0.1:0", Signer: &txclient.Signer{}})
	require.NoError(t, err)
	signer := &stuckSigner{stuck: make(chan struct{}, 1), release: make(chan struct{})}
	s.query = topicQueries{}
	s.anon.groups.close()
	s.anon.groups = newCoordinator(&chainGroups{signer: signer, query: s.query, member: map[string]*nativeGroup{},
		join: func(_ context.Context, _ string, topics []string) (nativeMember, error) {
			return joinedMember{topics}, nil
		}})
	go func() { _ = s.Serve() }()
	t.Cleanup(func() { _ = s.Close() })
	t.Cleanup(func() { close(signer.release) }) // before Close, which waits for the request

	stuck := dial(t, s)
	go func() { _ = roundTripErr(stuck, 1, simpleCommit("stuck")) }()
	select {
	case <-signer.stuck:
	case <-time.After(10 * time.Second):
		t.Fatal("the first commit never reached the chain")
	}

	other := dial(t, s)
	ask := func(corr int32, req kmsg.Request) (kmsg.Response, time.Duration) {
		t.Helper()
		// A bound on waiting, not on speed: without it a held-up answer hangs the test.
		require.NoError(t, other.SetDeadline(time.Now().Add(10*time.Second)))
		start := time.Now()
		resp := roundTrip(t, other, corr, req)
		return resp, time.Since(start)
	}
	av, avTook := ask(1, kmsg.NewPtrApiVersionsRequest())
	require.Zero(t, av.(*kmsg.ApiVersionsResponse).ErrorCode)
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(9)
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("orders")
	md.Topics = append(md.Topics, mt)
	meta, mdTook := ask(2, md)
	require.Len(t, meta.(*kmsg.MetadataResponse).Topics, 1)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(11)
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "orders"
	ft.Partitions = append(ft.Partitions, kmsg.NewFetchRequestTopicPartition())
	fetch.Topics = append(fetch.Topics, ft)
	fr, fetchTook := ask(3, fetch)
	require.Zero(t, fr.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode)
	commit, commitTook := ask(4, simpleCommit("another"))
	require.Zero(t, commit.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode)
	select {
	case <-signer.stuck:
		t.Fatal("the stuck group's commit was sent twice")
	default:
	}
	t.Logf("while one connection's commit waited for its block, another connection got ApiVersions in %v, Metadata in %v, Fetch in %v, a commit to another group in %v",
		avTook, mdTook, fetchTook, commitTook)
}

// roundTripErr sends req on c and reads one answer, for a goroutine that cannot fail the test.
func roundTripErr(c net.Conn, corr int32, req kmsg.Request) error {
	if _, err := c.Write(requestFrame(corr, req)); err != nil {
		return err
	}
	_, err := c.Read(make([]byte, 4))
	return err
}
