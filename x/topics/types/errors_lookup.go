package types

import (
	"strings"

	errorsmod "cosmossdk.io/errors"
)

// registeredErrors lists the module's errors for FindError.
var registeredErrors = []*errorsmod.Error{
	ErrInvalidTopicName, ErrTopicExists, ErrUnknownTopic, ErrInvalidPartition, ErrEmptyBatch,
	ErrRecordTooLarge, ErrBatchTooLarge, ErrTooManyPartitions, ErrUnauthorizedProducer, ErrUnauthorized,
	ErrOffsetOutOfRange, ErrInvalidConfig, ErrInvalidParams, ErrTooManyRecords, ErrPartitionsNotIncrease,
	ErrInvalidAddress, ErrTooManyHeaders, ErrInvalidPartitionCount, ErrInvalidGenesis, ErrInvalidRequest,
	ErrInvalidGroupID, ErrUnknownGroup, ErrUnknownMember, ErrIllegalGeneration, ErrPartitionNotAssigned,
	ErrGroupNotEmpty, ErrGroupFull, ErrInvalidSessionTimeout, ErrOutOfOrderSequence, ErrInvalidOffset,
	ErrNotVerified,
}

// FindError recovers the registered x/topics error named in a message that crossed a gRPC or
// simulation boundary, where only the text survives. It returns code 0 when none matches.
func FindError(msg string) (codespace string, code uint32) {
	var best string
	for _, e := range registeredErrors {
		if d := e.Error(); len(d) > len(best) && strings.Contains(msg, d) {
			best, codespace, code = d, e.Codespace(), e.ABCICode()
		}
	}
	return codespace, code
}
