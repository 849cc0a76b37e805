package types

import errorsmod "cosmossdk.io/errors"

// Default params. max_record_bytes matches Kafka's message.max.bytes (about 1 MiB); a batch
// must also fit in one CometBFT transaction (the node's mempool max_tx_bytes).
const (
	DefaultMaxPartitionsPerTopic = 256
	DefaultMaxRecordBytes        = 1 << 20
	DefaultMaxRecordsPerBatch    = 10_000
	DefaultMaxBatchBytes         = 4 << 20
	DefaultMaxHeadersPerRecord   = 64
	// DefaultMaxGroupMembers bounds rebalance work (members x partitions) in one message.
	DefaultMaxGroupMembers = 100
	// End-block work bounds: a backlog continues in the next block.
	DefaultMaxExpiriesPerBlock         = 100
	DefaultRetentionBatchesPerBlock    = 500
	DefaultRetentionPartitionsPerBlock = 200
	// DefaultMaxGroupSubscribedPartitions bounds a group's subscription (join and rebalance work).
	DefaultMaxGroupSubscribedPartitions = 1024
	// DefaultMaxExpiryWorkPerBlock is the EndBlocker's expiry budget in work units (1 per expired
	// member plus members x subscribed partitions per rebalanced group): one full-size group
	// (100 members x 1024 partitions) fits, a backlog waits for the next block.
	DefaultMaxExpiryWorkPerBlock = 200_000
)

// DefaultParams returns the module's default params.
func DefaultParams() Params {
	return Params{
		MaxPartitionsPerTopic:        DefaultMaxPartitionsPerTopic,
		MaxRecordBytes:               DefaultMaxRecordBytes,
		MaxRecordsPerBatch:           DefaultMaxRecordsPerBatch,
		MaxBatchBytes:                DefaultMaxBatchBytes,
		MaxHeadersPerRecord:          DefaultMaxHeadersPerRecord,
		MaxGroupMembers:              DefaultMaxGroupMembers,
		MaxExpiriesPerBlock:          DefaultMaxExpiriesPerBlock,
		RetentionBatchesPerBlock:     DefaultRetentionBatchesPerBlock,
		RetentionPartitionsPerBlock:  DefaultRetentionPartitionsPerBlock,
		MaxGroupSubscribedPartitions: DefaultMaxGroupSubscribedPartitions,
		MaxExpiryWorkPerBlock:        DefaultMaxExpiryWorkPerBlock,
	}
}

// Validate checks that every limit is usable.
func (p Params) Validate() error {
	switch {
	case p.MaxPartitionsPerTopic == 0:
		return errorsmod.Wrap(ErrInvalidParams, "max_partitions_per_topic must be positive")
	case p.MaxRecordBytes == 0:
		return errorsmod.Wrap(ErrInvalidParams, "max_record_bytes must be positive")
	case p.MaxRecordsPerBatch == 0:
		return errorsmod.Wrap(ErrInvalidParams, "max_records_per_batch must be positive")
	case p.MaxBatchBytes == 0:
		return errorsmod.Wrap(ErrInvalidParams, "max_batch_bytes must be positive")
	case p.MaxGroupMembers == 0:
		return errorsmod.Wrap(ErrInvalidParams, "max_group_members must be positive")
	case p.MaxExpiriesPerBlock == 0:
		return errorsmod.Wrap(ErrInvalidParams, "max_expiries_per_block must be positive")
	case p.MaxGroupSubscribedPartitions == 0:
		return errorsmod.Wrap(ErrInvalidParams, "max_group_subscribed_partitions must be positive")
	case p.MaxExpiryWorkPerBlock == 0:
		return errorsmod.Wrap(ErrInvalidParams, "max_expiry_work_per_block must be positive")
	case p.RetentionBatchesPerBlock == 0 || p.RetentionPartitionsPerBlock == 0:
		return errorsmod.Wrap(ErrInvalidParams, "retention_batches_per_block and retention_partitions_per_block must be positive")
	case p.MaxBatchBytes < p.MaxRecordBytes:
		return errorsmod.Wrapf(ErrInvalidParams, "max_batch_bytes %d is below max_record_bytes %d", p.MaxBatchBytes, p.MaxRecordBytes)
	}
	return nil
}
