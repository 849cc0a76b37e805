package cmd

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/server"
	"github.com/cosmos/cosmos-sdk/types/bech32"
	"github.com/cosmos/cosmos-sdk/x/genutil"
	genutiltypes "github.com/cosmos/cosmos-sdk/x/genutil/types"

	poatypes "github.com/bftlog/bftlog/x/poa/types"
)

// setDataPlaneEndpointGenesisCmd writes a validator's data-plane endpoint, and optionally its
// data-plane key, into genesis.json (x/poa's data_plane_endpoints), for the genesis ceremony: a
// coordinator adds each operator's beside its gentx, so the chain's first block already knows
// every validator's data plane. After genesis an operator sets its own with
// `tx poa set-data-plane-endpoint`.
func setDataPlaneEndpointGenesisCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "set-data-plane-endpoint [operator] [endpoint] [data-plane-key]",
		Short: "Set a validator's data-plane endpoint in genesis.json (bftlogvaloper..., http://host:port; \"\" and no key removes it) and the key it signs there with (`bftlogd data-plane-key` on its node, base64; omitted: its consensus key)",
		Args:  cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			operator, endpoint := args[0], args[1]
			var key []byte
			if len(args) == 3 && args[2] != "" {
				var err error
				if key, err = base64.StdEncoding.DecodeString(args[2]); err != nil {
					return fmt.Errorf("data-plane key %q: want base64: %w", args[2], err)
				}
			}
			if err := poatypes.ValidateDataPlaneKey(key); err != nil {
				return err
			}
			hrp, _, err := bech32.DecodeAndConvert(operator)
			if err != nil {
				return fmt.Errorf("operator %q: %w", operator, err)
			}
			clientCtx := client.GetClientContextFromCmd(cmd)
			if want := clientCtx.InterfaceRegistry.SigningContext().ValidatorAddressCodec(); want != nil {
				if _, err := want.StringToBytes(operator); err != nil {
					return fmt.Errorf("operator %q is not a validator operator address (%s...): %w", operator, hrp, err)
				}
			}
			if err := poatypes.ValidateEndpoint(endpoint); err != nil {
				return err
			}
			genFile := server.GetServerContextFromCmd(cmd).Config.GenesisFile()
			appGenesis, err := genutiltypes.AppGenesisFromFile(genFile)
			if err != nil {
				return fmt.Errorf("reading %s: %w", genFile, err)
			}
			var state map[string]json.RawMessage
			if err := json.Unmarshal(appGenesis.AppState, &state); err != nil {
				return err
			}
			var gs poatypes.GenesisState
			if raw, ok := state[poatypes.ModuleName]; ok {
				if err := clientCtx.Codec.UnmarshalJSON(raw, &gs); err != nil {
					return err
				}
			}
			gs.DataPlaneEndpoints = slices.DeleteFunc(gs.DataPlaneEndpoints, func(e poatypes.DataPlaneEndpoint) bool { return e.Operator == operator })
			if endpoint != "" || len(key) > 0 {
				gs.DataPlaneEndpoints = append(gs.DataPlaneEndpoints, poatypes.DataPlaneEndpoint{Operator: operator, Endpoint: endpoint, DataPlaneKey: key})
			}
			if err := gs.ValidateEndpoints(); err != nil {
				return err
			}
			if state[poatypes.ModuleName], err = clientCtx.Codec.MarshalJSON(&gs); err != nil {
				return err
			}
			if appGenesis.AppState, err = json.MarshalIndent(state, "", " "); err != nil {
				return err
			}
			return genutil.ExportGenesisFile(appGenesis, genFile)
		},
	}
}
