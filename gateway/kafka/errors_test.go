package kafka

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	errorsmod "cosmossdk.io/errors"

	"github.com/bftlog/bftlog/x/topics/client/txclient"
	"github.com/bftlog/bftlog/x/topics/types"
)

// Chain errors map to Kafka codes by identity, never by their text.
func TestKafkaCodeDecidesByErrorIdentity(t *testing.T) {
	// A transaction's error as the chain reports it: codespace and code.
	rejected := errorsmod.ABCIError(types.ModuleName, types.ErrTopicExists.ABCICode(), "topic orders exists")
	require.Equal(t, kerr.TopicAlreadyExists.Code, kafkaCode(rejected))
	require.Equal(t, kerr.IllegalGeneration.Code, kafkaCode(fmt.Errorf("commit: %w", errorsmod.Wrap(types.ErrIllegalGeneration, "generation 3"))))
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, kafkaCode(types.ErrInvalidPartition))
	require.Equal(t, kerr.RequestTimedOut.Code, kafkaCode(fmt.Errorf("waiting: %w", context.DeadlineExceeded)))
	require.Equal(t, kerr.RequestTimedOut.Code, kafkaCode(fmt.Errorf("tx ABC: %w", txclient.ErrNotCommitted)))
	require.Zero(t, kafkaCode(nil))
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
