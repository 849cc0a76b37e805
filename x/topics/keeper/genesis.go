package keeper

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"cosmossdk.io/collections"

	"github.com/cosmos/cosmos-sdk/codec"

	"github.com/bftlog/bftlog/x/topics/types"
)

// InitGenesis loads validated state.
func (k Keeper) InitGenesis(ctx context.Context, gs *types.GenesisState) error {
	gs.Params = gs.Params.WithDefaults() // a genesis exported before the v2 upgrade
	if err := gs.Validate(k.addressCodec); err != nil {
		return err
	}
	if err := k.Params.Set(ctx, gs.Params); err != nil {
		return err
	}
	for _, t := range gs.Topics {
		t.Config = t.Config.WithDefaults() // a genesis exported before the v2 upgrade
		if err := k.Topics.Set(ctx, t.Name, t); err != nil {
			return err
		}
	}
	for _, p := range gs.Partitions {
		if err := k.Partitions.Set(ctx, types.TopicPartition{Topic: p.Topic, Partition: p.Partition}, p); err != nil {
			return err
		}
	}
	for _, b := range gs.Batches {
		key := collections.Join(types.TopicPartition{Topic: b.Topic, Partition: b.Partition}, b.Batch.LastOffset())
		// Metadata is derived, not exported: rebuilt here from the validated batch.
		if err := k.setBatch(ctx, key, b.Batch); err != nil {
			return err
		}
	}
	if err := k.initCompaction(ctx, gs); err != nil {
		return err
	}
	for _, g := range gs.Groups {
		if err := k.Groups.Set(ctx, g.GroupId, g); err != nil {
			return err
		}
	}
	for _, m := range gs.Members {
		if err := k.Members.Set(ctx, collections.Join(m.GroupId, m.Member), m); err != nil {
			return err
		}
		if err := k.MemberExpiry.Set(ctx, collections.Join3(m.ExpiresAtMs, m.GroupId, m.Member), true); err != nil {
			return err
		}
	}
	for _, o := range gs.Offsets {
		if err := k.Offsets.Set(ctx, collections.Join(o.GroupId, types.TopicPartition{Topic: o.Topic, Partition: o.Partition}), o); err != nil {
			return err
		}
		if err := k.GroupTopics.Set(ctx, collections.Join(o.Topic, o.GroupId), true); err != nil {
			return err
		}
	}
	for _, ps := range gs.ProducerStates {
		if err := k.ProducerStates.Set(ctx, collections.Join(types.TopicPartition{Topic: ps.Topic, Partition: ps.Partition}, ps.Producer), ps); err != nil {
			return err
		}
	}
	for _, ks := range gs.KafkaProducerStates {
		if err := k.KafkaProducers.Set(ctx, collections.Join3(types.TopicPartition{Topic: ks.Topic, Partition: ks.Partition}, ks.Producer, ks.ProducerId), ks); err != nil {
			return err
		}
	}
	for _, sg := range gs.ShareGroups {
		if err := k.ShareGroups.Set(ctx, sg.GroupId, sg); err != nil {
			return err
		}
	}
	for _, sp := range gs.SharePartitions {
		at := sp.NextLockDeadlineMs
		sp.NextLockDeadlineMs = 0 // setLockDue indexes it
		if err := k.setLockDue(ctx, &sp, at); err != nil {
			return err
		}
		if err := k.SharePartitions.Set(ctx, collections.Join(sp.GroupId, types.TopicPartition{Topic: sp.Topic, Partition: sp.Partition}), sp); err != nil {
			return err
		}
	}
	if err := k.checkEscrow(ctx); err != nil {
		return err
	}
	if gs.RetentionCursor != nil {
		return k.RetentionCursor.Set(ctx, *gs.RetentionCursor)
	}
	return nil
}

// ExportGenesis writes out all module state in store order.
func (k Keeper) ExportGenesis(ctx context.Context) (*types.GenesisState, error) {
	gs, err := k.exportAllButBatches(ctx)
	if err != nil {
		return nil, err
	}
	err = k.walkGenesisBatches(ctx, func(b types.GenesisBatch) error {
		gs.Batches = append(gs.Batches, b)
		return nil
	})
	return gs, err
}

// batchesField is how the codec writes an empty batches list, where ExportGenesisJSON splices
// the batches in.
var batchesField = []byte(`"batches":[]`)

// ExportGenesisJSON is ExportGenesis marshalled by cdc, byte for byte, but the batches (nearly
// all of a log's state) are marshalled one at a time straight into the output: decoded records
// never exist for more than one batch at once, so exporting a large log needs memory for its
// JSON, not also for every record as Go objects and the codec's work on all of them at once.
func (k Keeper) ExportGenesisJSON(ctx context.Context, cdc codec.JSONCodec) (json.RawMessage, error) {
	gs, err := k.exportAllButBatches(ctx)
	if err != nil {
		return nil, err
	}
	head, err := cdc.MarshalJSON(gs)
	if err != nil {
		return nil, err
	}
	// Field names are quoted and quotes inside strings are escaped, so the only match is the
	// GenesisState's own field (no nested message has a batches field).
	at := bytes.Index(head, batchesField)
	if at < 0 || bytes.Contains(head[at+1:], batchesField) {
		return nil, fmt.Errorf("x/topics export: no single %s in the marshalled state", batchesField)
	}
	var stored uint64
	for _, p := range gs.Partitions {
		stored += p.ByteCount
	}
	// Base64 makes the stored batches 4/3 larger, plus field names per batch; sizing the
	// buffer once avoids growing (copying) it.
	out := bytes.NewBuffer(make([]byte, 0, uint64(len(head))+stored/3*4+stored/16))
	split := at + len(batchesField) - 1 // just after the list's '['
	out.Write(head[:split])
	first := true
	err = k.walkGenesisBatches(ctx, func(b types.GenesisBatch) error {
		bz, err := cdc.MarshalJSON(&b)
		if err != nil {
			return err
		}
		if !first {
			out.WriteByte(',')
		}
		first = false
		out.Write(bz)
		return nil
	})
	if err != nil {
		return nil, err
	}
	out.Write(head[split:])
	return out.Bytes(), nil
}

// walkGenesisBatches hands fn every exported batch in store order, one at a time.
func (k Keeper) walkGenesisBatches(ctx context.Context, fn func(types.GenesisBatch) error) error {
	// Deleted topics still being purged are left out (their batches are unreadable leftovers),
	// so the exported state is what the purge would end with.
	return k.Batches.Walk(ctx, nil, func(key collections.Pair[types.TopicPartition, uint64], b types.RecordBatch) (bool, error) {
		if gone, err := k.TopicPurges.Has(ctx, key.K1().Topic); err != nil || gone {
			return false, err
		}
		b, err := k.withBytes(ctx, key, b)
		if err != nil {
			return false, err
		}
		return false, fn(types.GenesisBatch{Topic: key.K1().Topic, Partition: key.K1().Partition, Batch: b})
	})
}

// exportAllButBatches is the exported state without its batches.
func (k Keeper) exportAllButBatches(ctx context.Context) (*types.GenesisState, error) {
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
	err = k.Partitions.Walk(ctx, nil, func(_ types.TopicPartition, p types.Partition) (bool, error) {
		gs.Partitions = append(gs.Partitions, p)
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	// Deleted topics still being purged are left out (their batches, producer states and
	// groups' offsets are unreadable leftovers), so the exported state is what the purge would
	// end with.
	purging := func(topic string) (bool, error) { return k.TopicPurges.Has(ctx, topic) }
	err = k.Groups.Walk(ctx, nil, func(_ string, g types.Group) (bool, error) {
		gs.Groups = append(gs.Groups, g)
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	err = k.Members.Walk(ctx, nil, func(_ collections.Pair[string, string], m types.Member) (bool, error) {
		gs.Members = append(gs.Members, m)
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	err = k.Offsets.Walk(ctx, nil, func(_ collections.Pair[string, types.TopicPartition], o types.CommittedOffset) (bool, error) {
		if gone, err := purging(o.Topic); err != nil || gone {
			return false, err
		}
		gs.Offsets = append(gs.Offsets, o)
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	err = k.ProducerStates.Walk(ctx, nil, func(_ collections.Pair[types.TopicPartition, string], ps types.ProducerState) (bool, error) {
		if gone, err := purging(ps.Topic); err != nil || gone {
			return false, err
		}
		gs.ProducerStates = append(gs.ProducerStates, ps)
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	err = k.KafkaProducers.Walk(ctx, nil, func(_ collections.Triple[types.TopicPartition, string, int64], ks types.KafkaProducerState) (bool, error) {
		if gone, err := purging(ks.Topic); err != nil || gone {
			return false, err
		}
		gs.KafkaProducerStates = append(gs.KafkaProducerStates, ks)
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	err = k.ShareGroups.Walk(ctx, nil, func(_ string, sg types.ShareGroup) (bool, error) {
		gs.ShareGroups = append(gs.ShareGroups, sg)
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	err = k.SharePartitions.Walk(ctx, nil, func(_ collections.Pair[string, types.TopicPartition], sp types.SharePartition) (bool, error) {
		if gone, err := purging(sp.Topic); err != nil || gone {
			return false, err
		}
		gs.SharePartitions = append(gs.SharePartitions, sp)
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	if c, err := k.RetentionCursor.Get(ctx); err == nil {
		gs.RetentionCursor = &c
	} else if !isNotFound(err) {
		return nil, err
	}
	return gs, nil
}
