package types

import (
	"google.golang.org/grpc/codes"

	errorsmod "cosmossdk.io/errors"

	"github.com/bftlog/bftlog/x/topics/kbatch"
)

// Registered errors of x/topics. Codes are stable: never renumber, only add. Errors a query can
// return carry a gRPC code, so REST answers 404 for an unknown topic or group and 400 for a bad
// request instead of 500 (the ABCI code and codespace of a transaction are unaffected).
var (
	ErrInvalidTopicName      = errorsmod.RegisterWithGRPCCode(ModuleName, 2, codes.InvalidArgument, "invalid topic name")
	ErrTopicExists           = errorsmod.RegisterWithGRPCCode(ModuleName, 3, codes.AlreadyExists, "topic already exists")
	ErrUnknownTopic          = errorsmod.RegisterWithGRPCCode(ModuleName, 4, codes.NotFound, "unknown topic")
	ErrInvalidPartition      = errorsmod.RegisterWithGRPCCode(ModuleName, 5, codes.NotFound, "partition out of range")
	ErrEmptyBatch            = kbatch.ErrEmptyBatch     // 6: the batch codec registers it
	ErrRecordTooLarge        = kbatch.ErrRecordTooLarge // 7: the batch codec registers it
	ErrBatchTooLarge         = kbatch.ErrBatchTooLarge  // 8: the batch codec registers it
	ErrTooManyPartitions     = errorsmod.Register(ModuleName, 9, "too many partitions")
	ErrUnauthorizedProducer  = errorsmod.RegisterWithGRPCCode(ModuleName, 10, codes.PermissionDenied, "producer not authorized for topic")
	ErrUnauthorized          = errorsmod.RegisterWithGRPCCode(ModuleName, 11, codes.PermissionDenied, "signer is neither the topic owner nor the authority")
	ErrOffsetOutOfRange      = errorsmod.RegisterWithGRPCCode(ModuleName, 12, codes.OutOfRange, "offset out of range")
	ErrInvalidConfig         = errorsmod.Register(ModuleName, 13, "invalid topic config")
	ErrInvalidParams         = errorsmod.Register(ModuleName, 14, "invalid params")
	ErrTooManyRecords        = errorsmod.Register(ModuleName, 15, "too many records in batch")
	ErrPartitionsNotIncrease = errorsmod.Register(ModuleName, 16, "partition count can only increase")
	ErrInvalidAddress        = errorsmod.RegisterWithGRPCCode(ModuleName, 17, codes.InvalidArgument, "invalid address")
	ErrTooManyHeaders        = kbatch.ErrTooManyHeaders // 18: the batch codec registers it
	ErrInvalidPartitionCount = errorsmod.Register(ModuleName, 19, "invalid partition count")
	ErrInvalidGenesis        = errorsmod.Register(ModuleName, 20, "invalid genesis state")
	ErrInvalidRequest        = errorsmod.RegisterWithGRPCCode(ModuleName, 21, codes.InvalidArgument, "invalid request")
	ErrInvalidGroupID        = errorsmod.RegisterWithGRPCCode(ModuleName, 22, codes.InvalidArgument, "invalid group id")
	ErrUnknownGroup          = errorsmod.RegisterWithGRPCCode(ModuleName, 23, codes.NotFound, "unknown group")
	ErrUnknownMember         = errorsmod.RegisterWithGRPCCode(ModuleName, 24, codes.NotFound, "not a member of the group")
	ErrIllegalGeneration     = errorsmod.Register(ModuleName, 25, "illegal generation")
	ErrPartitionNotAssigned  = errorsmod.Register(ModuleName, 26, "partition not assigned to member")
	ErrGroupNotEmpty         = errorsmod.Register(ModuleName, 27, "group has active members")
	ErrGroupFull             = errorsmod.Register(ModuleName, 28, "group has too many members")
	ErrInvalidSessionTimeout = errorsmod.Register(ModuleName, 29, "invalid session timeout")
	ErrOutOfOrderSequence    = errorsmod.Register(ModuleName, 30, "out of order sequence number")
	ErrInvalidOffset         = errorsmod.RegisterWithGRPCCode(ModuleName, 31, codes.InvalidArgument, "invalid offset")
	// ErrNotVerified is a read whose proof did not check out against a validator-signed header
	// (client/verify): the node answered something the chain did not commit.
	ErrNotVerified = errorsmod.Register(ModuleName, 32, "read not verified")
	// ErrInsufficientFee is a transaction paying less than gas limit x min_gas_price (a
	// consensus rule, checked in DeliverTx as well as CheckTx).
	ErrInsufficientFee = errorsmod.Register(ModuleName, 33, "insufficient fee")
	// ErrTxGasTooHigh is a transaction whose gas limit is above max_tx_gas.
	ErrTxGasTooHigh = errorsmod.Register(ModuleName, 34, "transaction gas limit too high")
	// ErrGroupAuthorization is a join refused by the group's join policy, or an admin action by
	// an account that is neither the group's admin nor the authority (Kafka's
	// GROUP_AUTHORIZATION_FAILED).
	ErrGroupAuthorization = errorsmod.RegisterWithGRPCCode(ModuleName, 35, codes.PermissionDenied, "not authorized for group")
	// ErrSubscriptionTooLarge is a join whose group would subscribe to more partitions than
	// max_group_subscribed_partitions.
	ErrSubscriptionTooLarge = errorsmod.Register(ModuleName, 36, "group subscription too large")
	// ErrTopicBeingDeleted is a CreateTopic for the name of a deleted topic whose old batches the
	// EndBlocker is still purging; the name is free once the purge ends.
	ErrTopicBeingDeleted = errorsmod.Register(ModuleName, 37, "topic is being deleted")
)

// Record batches (Kafka RecordBatch v2): registered by the codec, x/topics/kbatch, which
// imports nothing of the module (codes 38, 39 and 43).
var (
	ErrInvalidRecordBatch     = kbatch.ErrInvalidRecordBatch
	ErrUnsupportedCompression = kbatch.ErrUnsupportedCompression
	ErrMissingKey             = kbatch.ErrMissingKey
)

// Kafka-protocol groups (the Kafka gateway's members).
var (
	// ErrInconsistentGroupProtocol is a Kafka join whose protocol type, or every protocol, no
	// other member shares, or a join of one kind of group (Kafka or native) to the other
	// (Kafka's INCONSISTENT_GROUP_PROTOCOL).
	ErrInconsistentGroupProtocol = errorsmod.Register(ModuleName, 40, "inconsistent group protocol")
	// ErrRebalanceInProgress is a SyncGroup while the group is still forming its generation
	// (Kafka's REBALANCE_IN_PROGRESS): the member must join again.
	ErrRebalanceInProgress = errorsmod.Register(ModuleName, 41, "rebalance in progress")
	// ErrInvalidProducerEpoch is an idempotent batch from an older epoch of its producer id than
	// the chain has seen (Kafka's INVALID_PRODUCER_EPOCH: the producer was fenced).
	ErrInvalidProducerEpoch = errorsmod.Register(ModuleName, 42, "invalid producer epoch")
)

// Deleting records (MsgDeleteRecords).
var (
	// ErrPolicyViolation is a MsgDeleteRecords on a topic whose cleanup.policy is compact without
	// delete: compaction keeps the latest record of every key, so records are not deleted by
	// offset there (Kafka's POLICY_VIOLATION).
	ErrPolicyViolation = errorsmod.Register(ModuleName, 44, "cleanup policy does not allow deleting records")
)

// Deleting group offsets (MsgDeleteGroupOffsets).
var (
	// ErrGroupSubscribedToTopic is a MsgDeleteGroupOffsets naming a topic a live member of the
	// group is subscribed to or assigned (Kafka's GROUP_SUBSCRIBED_TO_TOPIC): its consumers read
	// from those offsets, so they are deleted only once nobody consumes the topic in the group.
	ErrGroupSubscribedToTopic = errorsmod.Register(ModuleName, 45, "group is subscribed to the topic")
)

// KIP-848 consumer groups (MsgConsumerGroupHeartbeat).
var (
	// ErrFencedMemberEpoch is a heartbeat at a member epoch the chain never gave the member, or at
	// an older one while the client claims partitions the member no longer holds (Kafka's
	// FENCED_MEMBER_EPOCH): the client gives up its partitions and rejoins.
	ErrFencedMemberEpoch = errorsmod.Register(ModuleName, 46, "fenced member epoch")
	// ErrStaleMemberEpoch is a commit at a member epoch older than the member's last two (Kafka's
	// STALE_MEMBER_EPOCH).
	ErrStaleMemberEpoch = errorsmod.Register(ModuleName, 47, "stale member epoch")
	// ErrUnreleasedInstanceID is a join with a static member's instance id while that member is
	// still active (Kafka's UNRELEASED_INSTANCE_ID).
	ErrUnreleasedInstanceID = errorsmod.Register(ModuleName, 48, "unreleased instance id")
	// ErrUnsupportedAssignor is a server assignor the chain does not run (Kafka's
	// UNSUPPORTED_ASSIGNOR): "uniform" and "range" are.
	ErrUnsupportedAssignor = errorsmod.Register(ModuleName, 49, "unsupported assignor")
	// ErrInvalidRegularExpression is a subscription regex that does not compile as RE2 or is too
	// long (Kafka's INVALID_REGULAR_EXPRESSION).
	ErrInvalidRegularExpression = errorsmod.Register(ModuleName, 50, "invalid regular expression")
)

// KIP-932 share groups (MsgShareFetch).
var (
	// ErrInvalidRecordState is an acknowledgement of a record the member does not hold (its lock
	// ran out and it went to another member, or it was never delivered to it): Kafka's
	// INVALID_RECORD_STATE.
	ErrInvalidRecordState = errorsmod.Register(ModuleName, 51, "invalid record state")
)
