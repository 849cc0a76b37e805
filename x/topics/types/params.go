package types

import (
	"math/big"

	errorsmod "cosmossdk.io/errors"
	"cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"
)

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
	// DefaultCleanupBytesPerBlock bounds the stored bytes retention and topic purges delete per
	// block: 16 full batches.
	DefaultCleanupBytesPerBlock = 64 << 20
	// DefaultMaxGroupSubscribedPartitions bounds a group's subscription (join and rebalance work).
	DefaultMaxGroupSubscribedPartitions = 1024
	// DefaultMaxExpiryWorkPerBlock is the EndBlocker's expiry budget in work units (1 per expired
	// member plus members x subscribed partitions per rebalanced group): one full-size group
	// (100 members x 1024 partitions) fits, a backlog waits for the next block.
	DefaultMaxExpiryWorkPerBlock = 200_000
	// DefaultMaxTxGas fits the largest produce (a 4 MiB batch uses about 168M gas, 30 per stored
	// byte plus 10 per tx byte, measured by app's TestLargestProduceGas; the clients' 1.3
	// adjustment asks 218M, size-derived gas 252M) and keeps a block (app.DefaultBlockMaxGas)
	// five such transactions wide.
	DefaultMaxTxGas = 300_000_000
	// Log compaction's per-block bounds (x/topics/keeper/compaction.go): the bytes it reads
	// and the records whose key it looks up. TestCompactionBlockTime prints what a block of
	// this much work takes.
	DefaultCompactionBytesPerBlock   = 8 << 20
	DefaultCompactionRecordsPerBlock = 5_000
)

// Bounds every accepted params value stays within, so that no value governance can set makes a
// block-level step (EndBlocker, ProcessProposal, state sync snapshots) fail or stop working.
const (
	// MaxBatchBytesLimit is the largest max_batch_bytes. Every batch it admits (its records
	// decompressed, a compacted rewrite, the stored bytes) must stay readable where a batch is
	// read for the whole chain: compaction decompresses within kbatch.MaxDecodedBatchBytes (64 MiB),
	// and a state sync snapshot carries each stored batch as one item, which the SDK's
	// snapshot reader refuses above 64,000,000 bytes; 60 MiB leaves room for the batch's
	// header, store key and framing.
	MaxBatchBytesLimit = 60 << 20
	// MinCompactionRecordsPerBlock: every turn of a partition costs one record of the budget,
	// so a budget of one would never compact a batch.
	MinCompactionRecordsPerBlock = 2
	// MinMaxTxGas is the lowest max_tx_gas but 0 (no cap): governance's own transactions
	// (proposals, deposits, votes) take well under it, so a lower cap can always be raised
	// again by proposal.
	MinMaxTxGas = 10_000_000
)

// MaxFeeAmount bounds min_gas_price (per gas) and each deposit: any gas limit (below 2^64)
// times the price, and a deposit times any partition count (below 2^32), summed over every
// topic, fit a coin amount (256 bits). Above it the fee rule's and deposits' arithmetic
// overflows, which panics in CheckTx, DeliverTx and ProcessProposal.
var MaxFeeAmount = math.NewIntFromBigInt(new(big.Int).Lsh(big.NewInt(1), 128))

// Fee and deposit defaults, in the bond denom (read when DefaultParams is called, so `bftlogd
// init --default-denom` applies). At 0.01 per gas a 4 MiB batch costs about 2M; a topic with P
// partitions escrows 10M + P x 1M and a consumer group 1M, returned on deletion.
var (
	DefaultMinGasPrice            = math.LegacyNewDecWithPrec(1, 2)
	DefaultTopicDepositAmount     = math.NewInt(10_000_000)
	DefaultPartitionDepositAmount = math.NewInt(1_000_000)
	DefaultGroupDepositAmount     = math.NewInt(1_000_000)
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
		CleanupBytesPerBlock:         DefaultCleanupBytesPerBlock,
		MaxGroupSubscribedPartitions: DefaultMaxGroupSubscribedPartitions,
		MaxExpiryWorkPerBlock:        DefaultMaxExpiryWorkPerBlock,
		MinGasPrice:                  sdk.NewDecCoinFromDec(sdk.DefaultBondDenom, DefaultMinGasPrice),
		TopicDeposit:                 sdk.NewCoin(sdk.DefaultBondDenom, DefaultTopicDepositAmount),
		PartitionDeposit:             sdk.NewCoin(sdk.DefaultBondDenom, DefaultPartitionDepositAmount),
		GroupDeposit:                 sdk.NewCoin(sdk.DefaultBondDenom, DefaultGroupDepositAmount),
		MaxTxGas:                     DefaultMaxTxGas,
		CompactionBytesPerBlock:      DefaultCompactionBytesPerBlock,
		CompactionRecordsPerBlock:    DefaultCompactionRecordsPerBlock,
	}
}

// WithDefaults fills the params that state written before upgrade v2 lacks (the compaction
// budgets) with their defaults.
func (p Params) WithDefaults() Params {
	if p.CompactionBytesPerBlock == 0 {
		p.CompactionBytesPerBlock = DefaultCompactionBytesPerBlock
	}
	if p.CompactionRecordsPerBlock == 0 {
		p.CompactionRecordsPerBlock = DefaultCompactionRecordsPerBlock
	}
	return p
}

// WithinBounds is p with every value a release before these bounds accepted brought within
// them (the v2 migration): max_batch_bytes at most MaxBatchBytesLimit (and max_record_bytes at
// most it), compaction_records_per_block at least its minimum, a max_tx_gas cap at least
// MinMaxTxGas, fees and deposits at most MaxFeeAmount.
func (p Params) WithinBounds() Params {
	p.MaxBatchBytes = min(p.MaxBatchBytes, MaxBatchBytesLimit)
	p.MaxRecordBytes = min(p.MaxRecordBytes, p.MaxBatchBytes)
	p.CompactionRecordsPerBlock = max(p.CompactionRecordsPerBlock, MinCompactionRecordsPerBlock)
	if p.MaxTxGas != 0 {
		p.MaxTxGas = max(p.MaxTxGas, MinMaxTxGas)
	}
	if !p.MinGasPrice.Amount.IsNil() && p.MinGasPrice.Amount.GT(math.LegacyNewDecFromInt(MaxFeeAmount)) {
		p.MinGasPrice.Amount = math.LegacyNewDecFromInt(MaxFeeAmount)
	}
	for _, c := range []*sdk.Coin{&p.TopicDeposit, &p.PartitionDeposit, &p.GroupDeposit} {
		if !c.Amount.IsNil() && c.Amount.GT(MaxFeeAmount) {
			c.Amount = MaxFeeAmount
		}
	}
	return p
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
	case p.CleanupBytesPerBlock == 0:
		return errorsmod.Wrap(ErrInvalidParams, "cleanup_bytes_per_block must be positive")
	case p.CompactionBytesPerBlock == 0 || p.CompactionRecordsPerBlock == 0:
		return errorsmod.Wrap(ErrInvalidParams, "compaction_bytes_per_block and compaction_records_per_block must be positive")
	case p.MaxBatchBytes < p.MaxRecordBytes:
		return errorsmod.Wrapf(ErrInvalidParams, "max_batch_bytes %d is below max_record_bytes %d", p.MaxBatchBytes, p.MaxRecordBytes)
	case p.MaxBatchBytes > MaxBatchBytesLimit:
		return errorsmod.Wrapf(ErrInvalidParams, "max_batch_bytes %d is above %d: compaction and state sync read every batch whole", p.MaxBatchBytes, MaxBatchBytesLimit)
	case p.CompactionRecordsPerBlock < MinCompactionRecordsPerBlock:
		return errorsmod.Wrapf(ErrInvalidParams, "compaction_records_per_block must be at least %d (each partition's turn costs one)", MinCompactionRecordsPerBlock)
	case p.MaxTxGas != 0 && p.MaxTxGas < MinMaxTxGas:
		return errorsmod.Wrapf(ErrInvalidParams, "max_tx_gas %d is below %d (0: no cap): governance could not raise it again", p.MaxTxGas, MinMaxTxGas)
	}
	// Unset (empty denom, zero amount) means no minimum fee or no deposit.
	if p.MinGasPrice.Denom != "" || !p.MinGasPrice.Amount.IsNil() && !p.MinGasPrice.Amount.IsZero() {
		if err := p.MinGasPrice.Validate(); err != nil {
			return errorsmod.Wrapf(ErrInvalidParams, "min_gas_price: %v", err)
		}
		if p.MinGasPrice.Amount.GT(math.LegacyNewDecFromInt(MaxFeeAmount)) {
			return errorsmod.Wrapf(ErrInvalidParams, "min_gas_price %s is above %s per gas", p.MinGasPrice.Amount, MaxFeeAmount)
		}
	}
	for i, c := range []sdk.Coin{p.TopicDeposit, p.PartitionDeposit, p.GroupDeposit} {
		if c.Denom == "" && (c.Amount.IsNil() || c.Amount.IsZero()) {
			continue
		}
		name := []string{"topic_deposit", "partition_deposit", "group_deposit"}[i]
		if err := c.Validate(); err != nil {
			return errorsmod.Wrapf(ErrInvalidParams, "%s: %v", name, err)
		}
		if c.Amount.GT(MaxFeeAmount) {
			return errorsmod.Wrapf(ErrInvalidParams, "%s %s is above %s", name, c.Amount, MaxFeeAmount)
		}
	}
	return nil
}

// ValidateBasic refuses params that Validate refuses, so a governance proposal carrying them
// is refused when submitted rather than failing after its vote.
func (m *MsgUpdateParams) ValidateBasic() error { return m.Params.Validate() }

// HasMinGasPrice tells whether transactions must pay a fee.
func (p Params) HasMinGasPrice() bool {
	return p.MinGasPrice.Denom != "" && !p.MinGasPrice.Amount.IsNil() && p.MinGasPrice.Amount.IsPositive()
}

// TopicDepositFor is what a topic with partitions partitions escrows: topic_deposit plus
// partitions x partition_deposit (unset deposits count as nothing).
func (p Params) TopicDepositFor(partitions uint32) sdk.Coins {
	return depositOf(p.TopicDeposit, 1).Add(p.PartitionDepositFor(partitions)...)
}

// PartitionDepositFor is what n more partitions escrow.
func (p Params) PartitionDepositFor(n uint32) sdk.Coins {
	return depositOf(p.PartitionDeposit, n)
}

// GroupDepositFor is what creating a consumer group escrows.
func (p Params) GroupDepositFor() sdk.Coins { return depositOf(p.GroupDeposit, 1) }

func depositOf(c sdk.Coin, n uint32) sdk.Coins {
	if c.Denom == "" || c.Amount.IsNil() || !c.Amount.IsPositive() || n == 0 {
		return sdk.Coins{}
	}
	return sdk.NewCoins(sdk.NewCoin(c.Denom, c.Amount.MulRaw(int64(n))))
}
