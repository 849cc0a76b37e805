package kafka

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cosmos/cosmos-sdk/x/authz"

	"github.com/bftlog/bftlog/x/topics/client/txclient"
	"github.com/bftlog/bftlog/x/topics/types"
)

// chainErrors maps x/topics' registered errors to Kafka's codes, first match wins.
var chainErrors = []struct {
	errs []error
	code *kerr.Error
}{
	{[]error{types.ErrInvalidTopicName}, kerr.InvalidTopicException},
	// A name still being purged is taken, as Kafka answers for a topic marked for deletion.
	{[]error{types.ErrTopicExists, types.ErrTopicBeingDeleted}, kerr.TopicAlreadyExists},
	{[]error{types.ErrUnknownTopic, types.ErrInvalidPartition}, kerr.UnknownTopicOrPartition},
	{[]error{types.ErrRecordTooLarge}, kerr.MessageTooLarge},
	{[]error{types.ErrBatchTooLarge, types.ErrTooManyRecords}, kerr.RecordListTooLarge},
	{[]error{types.ErrTooManyPartitions, types.ErrPartitionsNotIncrease, types.ErrInvalidPartitionCount}, kerr.InvalidPartitions},
	// A gateway producing as a grantee (--granter): its grant revoked, expired or not naming
	// the topic.
	{[]error{types.ErrUnauthorizedProducer, types.ErrUnauthorized, types.ErrTopicNotAuthorized,
		authz.ErrNoAuthorizationFound, authz.ErrAuthorizationExpired}, kerr.TopicAuthorizationFailed},
	{[]error{types.ErrOffsetOutOfRange}, kerr.OffsetOutOfRange},
	{[]error{types.ErrInvalidConfig}, kerr.InvalidConfig},
	{[]error{types.ErrEmptyBatch, types.ErrTooManyHeaders, types.ErrMissingKey}, kerr.InvalidRecord},
	{[]error{types.ErrInvalidRecordBatch}, kerr.CorruptMessage},
	{[]error{types.ErrUnsupportedCompression}, kerr.UnsupportedCompressionType},
	{[]error{types.ErrOutOfOrderSequence}, kerr.OutOfOrderSequenceNumber},
	{[]error{types.ErrInvalidRequest}, kerr.InvalidRequest},
	{[]error{types.ErrInvalidGroupID}, kerr.InvalidGroupID},
	{[]error{types.ErrIllegalGeneration}, kerr.IllegalGeneration},
	{[]error{types.ErrUnknownMember}, kerr.UnknownMemberID},
	{[]error{types.ErrGroupAuthorization}, kerr.GroupAuthorizationFailed},
	{[]error{types.ErrSubscriptionTooLarge}, kerr.InvalidRequest},
	{[]error{types.ErrInconsistentGroupProtocol}, kerr.InconsistentGroupProtocol},
	{[]error{types.ErrRebalanceInProgress}, kerr.RebalanceInProgress},
	{[]error{types.ErrGroupFull}, kerr.GroupMaxSizeReached},
	{[]error{types.ErrInvalidSessionTimeout}, kerr.InvalidSessionTimeout},
	{[]error{types.ErrInvalidProducerEpoch}, kerr.InvalidProducerEpoch},
	{[]error{types.ErrPolicyViolation}, kerr.PolicyViolation},
	{[]error{types.ErrGroupSubscribedToTopic}, kerr.GroupSubscribedToTopic},
	{[]error{types.ErrFencedMemberEpoch}, kerr.FencedMemberEpoch},
	{[]error{types.ErrStaleMemberEpoch}, kerr.StaleMemberEpoch},
	{[]error{types.ErrUnreleasedInstanceID}, kerr.UnreleasedInstanceID},
	{[]error{types.ErrUnsupportedAssignor}, kerr.UnsupportedAssignor},
	{[]error{types.ErrInvalidRegularExpression}, kerr.InvalidRegularExpression},
	{[]error{types.ErrInvalidRecordState}, kerr.InvalidRecordState},
	{[]error{types.ErrUnknownGroup}, kerr.GroupIDNotFound},
	{[]error{types.ErrGroupNotEmpty}, kerr.NonEmptyGroup},
}

// kafkaCode maps an error from the chain (a transaction's x/topics error, matched with
// errors.Is) to Kafka's code; a transaction not committed in time is REQUEST_TIMED_OUT.
func kafkaCode(err error) int16 {
	if err == nil {
		return 0
	}
	for _, m := range chainErrors {
		for _, e := range m.errs {
			if errors.Is(err, e) {
				return m.code.Code
			}
		}
	}
	if errors.Is(err, txclient.ErrNotCommitted) || errors.Is(err, context.DeadlineExceeded) {
		return kerr.RequestTimedOut.Code
	}
	return kerr.UnknownServerError.Code
}

// queryCode maps a failed query to Kafka's code. A query's error reaches the gateway as a gRPC
// status, not as the x/topics error: its code is what can be decided on. On the node's gRPC
// endpoint the code is the x/topics error's own (NotFound for an unknown topic or partition,
// OutOfRange for an offset outside the log); the node's RPC endpoint keeps NotFound and
// InvalidArgument and answers Unknown for the rest (see fetchCode). In the queries the gateway
// makes (topic, list offsets, fetch), the topic name is the argument a client chooses: an invalid
// argument is an invalid topic.
func queryCode(err error) int16 {
	if code := kafkaCode(err); code != kerr.UnknownServerError.Code {
		return code
	}
	switch status.Code(err) {
	case codes.NotFound:
		return kerr.UnknownTopicOrPartition.Code
	case codes.OutOfRange:
		return kerr.OffsetOutOfRange.Code
	case codes.InvalidArgument:
		return kerr.InvalidTopicException.Code
	case codes.DeadlineExceeded:
		return kerr.RequestTimedOut.Code
	}
	return kerr.UnknownServerError.Code
}
