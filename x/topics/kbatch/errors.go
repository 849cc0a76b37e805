package kbatch

import (
	"google.golang.org/grpc/codes"

	errorsmod "cosmossdk.io/errors"
)

// Codespace is x/topics' codespace. The codec's refusals are the module's registered errors,
// so a produce refused for its batch answers with the codes it always had; x/topics/types
// names them again (types.ErrInvalidRecordBatch is ErrInvalidRecordBatch) and checks that
// Codespace is its ModuleName. Codes are stable: never renumber.
const Codespace = "topics"

var (
	// ErrEmptyBatch is a batch of no records.
	ErrEmptyBatch = errorsmod.Register(Codespace, 6, "empty batch")
	// ErrRecordTooLarge is a record over the topic's max_record_bytes.
	ErrRecordTooLarge = errorsmod.Register(Codespace, 7, "record too large")
	// ErrBatchTooLarge is a batch whose records (decompressed) pass the bound.
	ErrBatchTooLarge = errorsmod.Register(Codespace, 8, "batch too large")
	// ErrTooManyHeaders is a record with more headers than the bound.
	ErrTooManyHeaders = errorsmod.Register(Codespace, 18, "too many headers in record")
	// ErrInvalidRecordBatch is a batch that is not one well-formed magic-2 batch (framing,
	// CRC-32C, offset deltas, record fields, control or transactional attributes).
	ErrInvalidRecordBatch = errorsmod.RegisterWithGRPCCode(Codespace, 38, codes.InvalidArgument, "invalid record batch")
	// ErrUnsupportedCompression is a compression codec other than none, gzip, snappy, lz4, zstd,
	// or compressed data that does not decompress.
	ErrUnsupportedCompression = errorsmod.RegisterWithGRPCCode(Codespace, 39, codes.InvalidArgument, "unsupported or corrupt compression")
	// ErrMissingKey is a record without a key produced to a compacted topic, which keeps
	// records by key (Kafka refuses these too: INVALID_RECORD).
	ErrMissingKey = errorsmod.RegisterWithGRPCCode(Codespace, 43, codes.InvalidArgument, "compacted topic record without key")
)
