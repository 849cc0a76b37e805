package keeper

import (
	"context"

	"cosmossdk.io/collections"

	"github.com/bftlog/bftlog/x/topics/types"
)

// InitGenesis loads validated state.
func (k Keeper) InitGenesis(ctx context.Context, gs *types.GenesisState) error {
	if err := gs.Validate(k.addressCodec); err != nil {
		return err
	}
	if err := k.Params.Set(ctx, gs.Params); err != nil {
		return err
	}
	for _, t := range gs.Topics {
		if err := k.Topics.Set(ctx, t.Name, t); err != nil {
			return err
		}
	}
	for _, p := range gs.Partitions {
		if err := k.Partitions.Set(ctx, collections.Join(p.Topic, p.Partition), p); err != nil {
			return err
		}
	}
	for _, b := range gs.Batches {
		last := b.Batch.BaseOffset + uint64(len(b.Batch.Records)) - 1
		if err := k.Batches.Set(ctx, collections.Join3(b.Topic, b.Partition, last), b.Batch); err != nil {
			return err
		}
	}
	for _, c := range gs.SpreadCursors {
		if err := k.SpreadCursors.Set(ctx, c.Topic, c.NextPartition); err != nil {
			return err
		}
	}
	return nil
}

// ExportGenesis writes out all module state in store order.
func (k Keeper) ExportGenesis(ctx context.Context) (*types.GenesisState, error) {
	params, err := k.Params.Get(ctx)
	if err != nil {
		return nil, err
	}
	gs := &types.GenesisState{Params: params}
	err = k.Topics.Walk(ctx, nil, func(_ string, t types.Topic) (bool, error) {
		gs.Topics = append(gs.Topics, t)
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	err = k.Partitions.Walk(ctx, nil, func(_ collections.Pair[string, uint32], p types.Partition) (bool, error) {
		gs.Partitions = append(gs.Partitions, p)
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	err = k.Batches.Walk(ctx, nil, func(key collections.Triple[string, uint32, uint64], b types.RecordBatch) (bool, error) {
		gs.Batches = append(gs.Batches, types.GenesisBatch{Topic: key.K1(), Partition: key.K2(), Batch: b})
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	err = k.SpreadCursors.Walk(ctx, nil, func(topic string, next uint32) (bool, error) {
		gs.SpreadCursors = append(gs.SpreadCursors, types.SpreadCursor{Topic: topic, NextPartition: next})
		return false, nil
	})
	return gs, err
}
