package keeper

import (
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/types"
)

// Migrator holds x/topics' store migrations, run by an upgrade handler
// (module.Manager.RunMigrations).
type Migrator struct{ k Keeper }

// NewMigrator returns the migrator of k.
func NewMigrator(k Keeper) Migrator { return Migrator{k: k} }

// Migrate1to2 (upgrade v2) gives every topic's stored config its cleanup policy, which topics
// created before v2 do not have: "delete", what they have always done; the params their
// compaction budgets, and values v1 accepted brought within v2's bounds; and every group its kind (groups.go), read from its members, dropping the
// Kafka protocol state of groups deleted under v1 (which left it behind, members included). One write per topic and
// group, and both are paid for by deposits, so the upgrade block's work is bounded by what their
// owners escrowed.
func (m Migrator) Migrate1to2(ctx sdk.Context) error {
	params, err := m.k.Params.Get(ctx)
	if err != nil {
		return err
	}
	// Values v1 accepted that can halt the chain or lock governance out are brought within
	// the bounds (types.Params.Validate), so the upgraded chain exports a valid genesis.
	params = params.WithDefaults().WithinBounds()
	if err := params.Validate(); err != nil {
		return err
	}
	if err := m.k.Params.Set(ctx, params); err != nil {
		return err
	}
	it, err := m.k.Topics.Iterate(ctx, nil)
	if err != nil {
		return err
	}
	topics, err := it.Values()
	if err != nil {
		return err
	}
	for _, t := range topics {
		if t.Config.CleanupPolicy != "" {
			continue
		}
		t.Config = t.Config.WithDefaults()
		if err := m.k.Topics.Set(ctx, t.Name, t); err != nil {
			return err
		}
	}
	return m.groupKinds(ctx)
}

func (m Migrator) groupKinds(ctx sdk.Context) error {
	var groups []types.Group
	if err := m.k.Groups.Walk(ctx, nil, func(_ string, g types.Group) (bool, error) {
		groups = append(groups, g)
		return false, nil
	}); err != nil {
		return err
	}
	for _, g := range groups {
		kind, err := m.k.groupKind(ctx, g)
		if err != nil {
			return err
		}
		if kind == types.GROUP_KIND_NATIVE {
			// A v1 group deleted while a Kafka consumer's session lived, then recreated
			// natively, kept that consumer's Kafka group state beside its native members: the
			// state of a group that is gone, dropped with any member it still has, as for a
			// group not recreated (below). A group's members are then all of its kind, which
			// is what every path dispatches on.
			if err := m.k.dropKafkaGroup(ctx, g.GroupId); err != nil {
				return err
			}
		}
		if kind == g.Kind {
			continue
		}
		g.Kind = kind
		if err := m.k.Groups.Set(ctx, g.GroupId, g); err != nil {
			return err
		}
	}
	var orphans []string
	if err := m.k.KafkaGroups.Walk(ctx, nil, func(id string, _ types.KafkaGroup) (bool, error) {
		has, err := m.k.Groups.Has(ctx, id)
		if !has {
			orphans = append(orphans, id)
		}
		return false, err
	}); err != nil {
		return err
	}
	for _, id := range orphans {
		if err := m.k.dropKafkaGroup(ctx, id); err != nil {
			return err
		}
	}
	return nil
}
