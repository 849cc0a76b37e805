package types

import errorsmod "cosmossdk.io/errors"

// Registered errors of x/topics. Codes are stable: never renumber, only add.
var (
	ErrInvalidTopicName      = errorsmod.Register(ModuleName, 2, "invalid topic name")
	ErrTopicExists           = errorsmod.Register(ModuleName, 3, "topic already exists")
	ErrUnknownTopic          = errorsmod.Register(ModuleName, 4, "unknown topic")
	ErrInvalidPartition      = errorsmod.Register(ModuleName, 5, "partition out of range")
	ErrEmptyBatch            = errorsmod.Register(ModuleName, 6, "empty batch")
	ErrRecordTooLarge        = errorsmod.Register(ModuleName, 7, "record too large")
	ErrBatchTooLarge         = errorsmod.Register(ModuleName, 8, "batch too large")
	ErrTooManyPartitions     = errorsmod.Register(ModuleName, 9, "too many partitions")
	ErrUnauthorizedProducer  = errorsmod.Register(ModuleName, 10, "producer not authorized for topic")
	ErrUnauthorized          = errorsmod.Register(ModuleName, 11, "signer is neither the topic owner nor the authority")
	ErrOffsetOutOfRange      = errorsmod.Register(ModuleName, 12, "offset out of range")
	ErrInvalidConfig         = errorsmod.Register(ModuleName, 13, "invalid topic config")
	ErrInvalidParams         = errorsmod.Register(ModuleName, 14, "invalid params")
	ErrTooManyRecords        = errorsmod.Register(ModuleName, 15, "too many records in batch")
	ErrPartitionsNotIncrease = errorsmod.Register(ModuleName, 16, "partition count can only increase")
	ErrInvalidAddress        = errorsmod.Register(ModuleName, 17, "invalid address")
	ErrTooManyHeaders        = errorsmod.Register(ModuleName, 18, "too many headers in record")
	ErrInvalidPartitionCount = errorsmod.Register(ModuleName, 19, "invalid partition count")
	ErrInvalidGenesis        = errorsmod.Register(ModuleName, 20, "invalid genesis state")
	ErrInvalidRequest        = errorsmod.Register(ModuleName, 21, "invalid request")
	ErrInvalidGroupID        = errorsmod.Register(ModuleName, 22, "invalid group id")
	ErrUnknownGroup          = errorsmod.Register(ModuleName, 23, "unknown group")
	ErrUnknownMember         = errorsmod.Register(ModuleName, 24, "not a member of the group")
	ErrIllegalGeneration     = errorsmod.Register(ModuleName, 25, "illegal generation")
	ErrPartitionNotAssigned  = errorsmod.Register(ModuleName, 26, "partition not assigned to member")
	ErrGroupNotEmpty         = errorsmod.Register(ModuleName, 27, "group has active members")
	ErrGroupFull             = errorsmod.Register(ModuleName, 28, "group has too many members")
	ErrInvalidSessionTimeout = errorsmod.Register(ModuleName, 29, "invalid session timeout")
	ErrOutOfOrderSequence    = errorsmod.Register(ModuleName, 30, "out of order sequence number")
	ErrInvalidOffset         = errorsmod.Register(ModuleName, 31, "invalid offset")
	// ErrNotVerified is a read whose proof did not check out against a validator-signed header
	// (client/verify): the node answered something the chain did not commit.
	ErrNotVerified = errorsmod.Register(ModuleName, 32, "read not verified")
)
