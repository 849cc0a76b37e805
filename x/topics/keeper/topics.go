package keeper

import (
	"context"

	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/types"
)

// CreateTopic creates a topic with its empty partitions.
func (k Keeper) CreateTopic(ctx context.Context, owner, name string, partitions uint32, cfg types.TopicConfig) error {
	if err := k.validAddress(owner, "owner"); err != nil {
		return err
	}
	if err := types.ValidateTopicName(name); err != nil {
		return err
	}
	if err := cfg.ValidateBasic(k.addressCodec); err != nil {
		return err
	}
	params, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	if err := types.ValidatePartitionCount(partitions, params); err != nil {
		return err
	}
	if err := cfg.ValidateAgainst(params); err != nil {
		return err
	}
	if has, err := k.Topics.Has(ctx, name); err != nil {
		return err
	} else if has {
		return errorsmod.Wrapf(types.ErrTopicExists, "topic %q", name)
	}
	// A deleted topic's old batches still sit under its name until the purge ends.
	if purging, err := k.TopicPurges.Has(ctx, name); err != nil {
		return err
	} else if purging {
		return errorsmod.Wrapf(types.ErrTopicBeingDeleted, "topic %q was deleted and is still being purged; retry in a few blocks", name)
	}
	// The deposit is the first write: an owner who cannot pay leaves nothing behind.
	deposit, err := k.escrow(ctx, owner, params.TopicDepositFor(partitions))
	if err != nil {
		return err
	}
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	t := types.Topic{Name: name, Partitions: partitions, Owner: owner, Config: cfg.WithDefaults(), CreatedHeight: sdkCtx.BlockHeight(), Deposit: deposit}
	if err := k.Topics.Set(ctx, name, t); err != nil {
		return err
	}
	if err := k.initPartitions(ctx, name, 0, partitions); err != nil {
		return err
	}
	return sdkCtx.EventManager().EmitTypedEvent(&types.EventTopicCreated{Name: name, Partitions: partitions, Owner: owner})
}

func (k Keeper) initPartitions(ctx context.Context, topic string, from, to uint32) error {
	for i := from; i < to; i++ {
		if err := k.Partitions.Set(ctx, types.TopicPartition{Topic: topic, Partition: i}, types.Partition{Topic: topic, Partition: i}); err != nil {
			return err
		}
	}
	return nil
}

// UpdateTopicConfig replaces a topic's config; the signer must be the owner or the authority.
func (k Keeper) UpdateTopicConfig(ctx context.Context, signer, name string, cfg types.TopicConfig) error {
	if err := k.validAddress(signer, "authority"); err != nil {
		return err
	}
	if err := types.ValidateTopicName(name); err != nil {
		return err
	}
	if err := cfg.ValidateBasic(k.addressCodec); err != nil {
		return err
	}
	t, err := k.GetTopic(ctx, name)
	if err != nil {
		return err
	}
	if err := k.checkAdmin(t, signer); err != nil {
		return err
	}
	params, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	if err := cfg.ValidateAgainst(params); err != nil {
		return err
	}
	compacted := t.Config.Compacts()
	t.Config = cfg.WithDefaults()
	if err := k.Topics.Set(ctx, name, t); err != nil {
		return err
	}
	if compacted && !t.Config.Compacts() {
		if err := k.stoppedCompacting(ctx, t); err != nil {
			return err
		}
	}
	return sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventTopicConfigUpdated{Name: name, Authority: signer, Config: t.Config})
}

// AddPartitions raises a topic's partition count to total.
func (k Keeper) AddPartitions(ctx context.Context, signer, name string, total uint32) error {
	if err := k.validAddress(signer, "authority"); err != nil {
		return err
	}
	if err := types.ValidateTopicName(name); err != nil {
		return err
	}
	t, err := k.GetTopic(ctx, name)
	if err != nil {
		return err
	}
	if err := k.checkAdmin(t, signer); err != nil {
		return err
	}
	if total <= t.Partitions {
		return errorsmod.Wrapf(types.ErrPartitionsNotIncrease, "topic %q has %d partitions; asked for %d", name, t.Partitions, total)
	}
	params, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	if err := types.ValidatePartitionCount(total, params); err != nil {
		return err
	}
	// The owner pays for the new partitions even when the authority adds them: the deposit is
	// refunded to the owner on deletion.
	more, err := k.escrow(ctx, t.Owner, params.PartitionDepositFor(total-t.Partitions))
	if err != nil {
		return err
	}
	old := t.Partitions
	t.Partitions = total
	t.Deposit = t.Deposit.Add(more...)
	if err := k.Topics.Set(ctx, name, t); err != nil {
		return err
	}
	if err := k.initPartitions(ctx, name, old, total); err != nil {
		return err
	}
	return sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventPartitionsAdded{Name: name, OldPartitions: old, NewPartitions: total})
}

// DeleteTopic makes a topic unreadable and unwritable at once: the topic and its partitions
// go now (bounded by the partition count), and the batches, producer states and groups'
// committed offsets, which can be unboundedly many, are left to the EndBlocker's budgeted
// purge (purgeTopics). Any account's group may commit to any topic, so the offsets are not the
// delete's to pay for. The name is reusable once the purge ends.
func (k Keeper) DeleteTopic(ctx context.Context, signer, name string) error {
	if err := k.validAddress(signer, "authority"); err != nil {
		return err
	}
	if err := types.ValidateTopicName(name); err != nil {
		return err
	}
	t, err := k.GetTopic(ctx, name)
	if err != nil {
		return err
	}
	if err := k.checkAdmin(t, signer); err != nil {
		return err
	}
	// The deposit goes back once the deletion is accepted.
	if err := k.refund(ctx, t); err != nil {
		return err
	}
	var records uint64
	for i := uint32(0); i < t.Partitions; i++ {
		tp := types.TopicPartition{Topic: name, Partition: i}
		p, err := k.Partitions.Get(ctx, tp)
		if err != nil {
			return err
		}
		records += p.RecordCount
		if err := k.Partitions.Remove(ctx, tp); err != nil {
			return err
		}
	}
	if err := k.TopicPurges.Set(ctx, name, types.TopicPurge{Name: name, Partitions: t.Partitions}); err != nil {
		return err
	}
	if err := k.Topics.Remove(ctx, name); err != nil {
		return err
	}
	return sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventTopicDeleted{Name: name, Authority: signer, RecordsDeleted: records})
}
