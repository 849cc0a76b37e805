package kafka

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	errorsmod "cosmossdk.io/errors"

	addresscodec "github.com/cosmos/cosmos-sdk/codec/address"

	"github.com/bftlog/bftlog/x/topics/client/txclient"
	"github.com/bftlog/bftlog/x/topics/types"
)

// Chain errors map to Kafka codes by identity, never by their text.
func TestKafkaCodeDecidesByErrorIdentity(t *testing.T) {
	// A transaction's error as the chain reports it: codespace and code.
	rejected := errorsmod.ABCIError(types.ModuleName, types.ErrTopicExists.ABCICode(), "topic orders exists")
	require.Equal(t, kerr.TopicAlreadyExists.Code, kafkaCode(rejected))
	require.Equal(t, kerr.TopicAlreadyExists.Code, kafkaCode(errorsmod.ABCIError(types.ModuleName, types.ErrTopicBeingDeleted.ABCICode(), "topic orders is being deleted")))
	require.Equal(t, kerr.IllegalGeneration.Code, kafkaCode(fmt.Errorf("commit: %w", errorsmod.Wrap(types.ErrIllegalGeneration, "generation 3"))))
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, kafkaCode(types.ErrInvalidPartition))
	require.Equal(t, kerr.RequestTimedOut.Code, kafkaCode(fmt.Errorf("waiting: %w", context.DeadlineExceeded)))
	require.Equal(t, kerr.RequestTimedOut.Code, kafkaCode(fmt.Errorf("tx ABC: %w", txclient.ErrNotCommitted)))
	require.Zero(t, kafkaCode(nil))
	// Record batch refusals, as a delivered transaction reports them.
	require.Equal(t, kerr.CorruptMessage.Code, kafkaCode(errorsmod.ABCIError(types.ModuleName, types.ErrInvalidRecordBatch.ABCICode(), "CRC mismatch")))
	require.Equal(t, kerr.UnsupportedCompressionType.Code, kafkaCode(errorsmod.ABCIError(types.ModuleName, types.ErrUnsupportedCompression.ABCICode(), "codec 6")))
	require.Equal(t, kerr.MessageTooLarge.Code, kafkaCode(errorsmod.ABCIError(types.ModuleName, types.ErrRecordTooLarge.ABCICode(), "record 0")))
	require.Equal(t, kerr.RecordListTooLarge.Code, kafkaCode(errorsmod.ABCIError(types.ModuleName, types.ErrBatchTooLarge.ABCICode(), "records")))
	// The text of a registered error is not enough.
	require.Equal(t, kerr.UnknownServerError.Code, kafkaCode(fmt.Errorf("%s", types.ErrTopicExists.Error())))

	// Queries answer with gRPC statuses.
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, queryCode(status.Error(codes.NotFound, "whatever")))
	require.Equal(t, kerr.OffsetOutOfRange.Code, queryCode(status.Error(codes.OutOfRange, "whatever")))
	require.Equal(t, kerr.InvalidTopicException.Code, queryCode(status.Error(codes.InvalidArgument, "whatever")))
	require.Equal(t, kerr.UnknownServerError.Code, queryCode(status.Error(codes.Unknown, types.ErrOffsetOutOfRange.Error())))
}

// partitionsOnly answers the Partitions query; the gateway's other queries are not expected.
type partitionsOnly struct {
	types.QueryClient
	partitions []types.Partition
}

func (q partitionsOnly) Partitions(context.Context, *types.QueryPartitionsRequest, ...grpc.CallOption) (*types.QueryPartitionsResponse, error) {
	return &types.QueryPartitionsResponse{Partitions: q.partitions}, nil
}

// A fetch refused with a bare Unknown status (a node's RPC endpoint) is out of range when the
// offset is outside the partition's bounds, whatever the message says.
func TestFetchCodeChecksTheOffsetAgainstThePartition(t *testing.T) {
	s := &Server{query: partitionsOnly{partitions: []types.Partition{{Topic: "orders", Partition: 0, LogStartOffset: 10, HighWatermark: 20}}}}
	ctx := context.Background()
	unknown := status.Error(codes.Unknown, "something")
	require.Equal(t, kerr.OffsetOutOfRange.Code, s.fetchCode(ctx, "orders", 0, 9, unknown))
	require.Equal(t, kerr.OffsetOutOfRange.Code, s.fetchCode(ctx, "orders", 0, 21, unknown))
	require.Equal(t, kerr.UnknownServerError.Code, s.fetchCode(ctx, "orders", 0, 10, unknown))
	require.Equal(t, kerr.UnknownServerError.Code, s.fetchCode(ctx, "orders", 0, 20, unknown))
	require.Equal(t, kerr.UnknownServerError.Code, s.fetchCode(ctx, "orders", 3, 0, unknown), "no such partition in the answer")
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, s.fetchCode(ctx, "orders", 0, 9, status.Error(codes.NotFound, "x")))
	require.Equal(t, kerr.OffsetOutOfRange.Code, s.fetchCode(ctx, "orders", 0, 15, status.Error(codes.OutOfRange, "x")))
}

// A group whose admin has not admitted the gateway's account refuses its joins and commits on
// chain: Kafka clients see GROUP_AUTHORIZATION_FAILED on their OffsetCommit, not a server error.
func TestGroupRefusalIsGroupAuthorizationFailed(t *testing.T) {
	refused := errorsmod.ABCIError(types.ModuleName, types.ErrGroupAuthorization.ABCICode(), `group "billing" admits only its admin`)
	require.Equal(t, kerr.GroupAuthorizationFailed.Code, kafkaCode(refused))
	require.Equal(t, kerr.GroupAuthorizationFailed.Code, kafkaCode(fmt.Errorf("join: %w", types.ErrGroupAuthorization)))
	require.Equal(t, kerr.InvalidRequest.Code, kafkaCode(errorsmod.ABCIError(types.ModuleName, types.ErrSubscriptionTooLarge.ABCICode(), "too many partitions")))

	// Played against the chain: a group admitting only its admin refuses the gateway's join.
	chain := newKeeperChain(t)
	other, err := addresscodec.NewBech32Codec("bftlog").BytesToString([]byte("admin_______________"))
	require.NoError(t, err)
	chain.mu.Lock()
	_, err = chain.msgs.CreateGroup(chain.ctx, &types.MsgCreateGroup{Admin: other, GroupId: "closed"})
	chain.mu.Unlock()
	require.NoError(t, err)
	c := newCoordinator(chain)
	t.Cleanup(c.close)
	jr := joinReq("m-1")
	jr.Group = "closed"
	resp := c.joinGroup(context.Background(), jr, "rdkafka").(*kmsg.JoinGroupResponse)
	require.Equal(t, kerr.GroupAuthorizationFailed.Code, resp.ErrorCode)
}

// A topic config the gateway does not hold, or a value it cannot, is refused naming the config
// (CreateTopics answers INVALID_CONFIG with this message), never with a parser's error.
func TestTopicConfigRefusalsNameTheConfig(t *testing.T) {
	cfg := func(name, value string) []kmsg.CreateTopicsRequestTopicConfig {
		return []kmsg.CreateTopicsRequestTopicConfig{{Name: name, Value: kmsg.StringPtr(value)}}
	}
	for _, tc := range []struct{ name, value, want string }{
		{"cleanup.policy", "compact,truncate", `invalid value "compact,truncate" for topic config cleanup.policy`},
		{"retention.ms", "a week", `invalid value "a week" for topic config retention.ms: want an integer`},
		{"min.cleanable.dirty.ratio", "1.5", `invalid value "1.5" for topic config min.cleanable.dirty.ratio: want a ratio from 0 to 1`},
		{"delete.retention.ms", "1d", `invalid value "1d" for topic config delete.retention.ms: want an integer`},
		{"segment.bytes", "1024", "unsupported topic config segment.bytes"},
	} {
		_, err := topicConfig(cfg(tc.name, tc.value))
		require.ErrorContains(t, err, tc.want)
		require.NotContains(t, err.Error(), "strconv")
	}
	got, err := topicConfig(append(cfg("cleanup.policy", "delete"), cfg("retention.ms", "60000")...))
	require.NoError(t, err)
	require.Equal(t, int64(60000), got.RetentionMs)

	// A compacted topic's configs, as a Kafka admin client sends them.
	var all []kmsg.CreateTopicsRequestTopicConfig
	for _, kv := range [][2]string{{"cleanup.policy", "compact, delete"}, {"delete.retention.ms", "3600000"}, {"min.compaction.lag.ms", "5000"}, {"min.cleanable.dirty.ratio", "0.25"}} {
		all = append(all, cfg(kv[0], kv[1])...)
	}
	got, err = topicConfig(all)
	require.NoError(t, err)
	require.Equal(t, types.TopicConfig{CleanupPolicy: "compact,delete", DeleteRetentionMs: 3_600_000, MinCompactionLagMs: 5000, MinCleanableDirtyRatioPermille: 250}, got)
	described := map[string]string{}
	for _, f := range types.TopicConfigFields {
		described[f.Name] = f.Value(got)
	}
	require.Equal(t, map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "0", "retention.bytes": "0", "max.message.bytes": "0",
		"delete.retention.ms": "3600000", "min.compaction.lag.ms": "5000", "min.cleanable.dirty.ratio": "0.25"}, described)
}

// IncrementalAlterConfigs' operations on a topic's config: SET, DELETE (back to the default),
// APPEND and SUBTRACT of cleanup.policy's list; list operations on other configs, or a
// subtraction that leaves no policy, are refused naming the config.
func TestIncrementalAlterConfigOps(t *testing.T) {
	op := func(o kmsg.IncrementalAlterConfigOp, name string, value *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		return kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: name, Op: o, Value: value}
	}
	cfg := types.TopicConfig{CleanupPolicy: "delete", RetentionMs: 60_000}
	require.NoError(t, alterConfig(&cfg, []kmsg.IncrementalAlterConfigsRequestResourceConfig{
		op(kmsg.IncrementalAlterConfigOpAppend, "cleanup.policy", kmsg.StringPtr("compact")),
		op(kmsg.IncrementalAlterConfigOpSet, "min.compaction.lag.ms", kmsg.StringPtr("1000")),
		op(kmsg.IncrementalAlterConfigOpDelete, "retention.ms", nil),
	}))
	require.Equal(t, types.TopicConfig{CleanupPolicy: "compact,delete", MinCompactionLagMs: 1000}, cfg)
	require.NoError(t, alterConfig(&cfg, []kmsg.IncrementalAlterConfigsRequestResourceConfig{
		op(kmsg.IncrementalAlterConfigOpSubtract, "cleanup.policy", kmsg.StringPtr("delete")),
	}))
	require.Equal(t, "compact", cfg.CleanupPolicy)
	err := alterConfig(&cfg, []kmsg.IncrementalAlterConfigsRequestResourceConfig{op(kmsg.IncrementalAlterConfigOpSubtract, "cleanup.policy", kmsg.StringPtr("compact"))})
	require.ErrorContains(t, err, "cleanup.policy")
	err = alterConfig(&cfg, []kmsg.IncrementalAlterConfigsRequestResourceConfig{op(kmsg.IncrementalAlterConfigOpAppend, "retention.ms", kmsg.StringPtr("1"))})
	require.ErrorContains(t, err, "retention.ms")
	require.Equal(t, "compact", cfg.CleanupPolicy, "a refused alteration leaves the policy")
}
