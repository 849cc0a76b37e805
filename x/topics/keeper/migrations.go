package keeper

import sdk "github.com/cosmos/cosmos-sdk/types"

// Migrator holds x/topics' store migrations, run by an upgrade handler
// (module.Manager.RunMigrations).
type Migrator struct{ k Keeper }

// NewMigrator returns the migrator of k.
func NewMigrator(k Keeper) Migrator { return Migrator{k: k} }

// Migrate1to2 (upgrade v2) gives every topic's stored config its cleanup policy, which topics
// created before v2 do not have: "delete", what they have always done; and the params their
// compaction budgets. One write per topic, and topics are paid for by deposits, so the upgrade
// block's work is bounded by what their owners escrowed.
func (m Migrator) Migrate1to2(ctx sdk.Context) error {
	params, err := m.k.Params.Get(ctx)
	if err != nil {
		return err
	}
	if err := m.k.Params.Set(ctx, params.WithDefaults()); err != nil {
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
	return nil
}
