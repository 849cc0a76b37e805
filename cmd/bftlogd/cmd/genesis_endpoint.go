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
	cmd := &cobra.Command{
		Use:   "set-data-plane-endpoint [operator] [endpoint]",
		Short: "Set a validator's data-plane endpoint in genesis.json (bftlogvaloper..., http://host:port; \"\" removes it) and, with --data-plane-key and --data-plane-key-proof (`bftlogd data-plane-key --operator <bftlogvaloper...>` on its node prints both), the key it signs there with (omitted: its consensus key)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			operator, endpoint := args[0], args[1]
			var keyAndProof [2][]byte
			for i, flag := range []string{flagDataPlaneKey, flagDataPlaneKeyProof} {
				v, _ := cmd.Flags().GetString(flag)
				var err error
				if keyAndProof[i], err = base64.StdEncoding.DecodeString(v); err != nil {
					return fmt.Errorf("--%s %q: want base64: %w", flag, v, err)
				}
			}
			key, proof := keyAndProof[0], keyAndProof[1]
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
				gs.DataPlaneEndpoints = append(gs.DataPlaneEndpoints, poatypes.DataPlaneEndpoint{Operator: operator, Endpoint: endpoint, DataPlaneKey: key, DataPlaneKeyProof: proof})
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
	cmd.Flags().String(flagDataPlaneKey, "", "the validator's data-plane key (base64)")
	cmd.Flags().String(flagDataPlaneKeyProof, "", "the key's proof for the operator (base64)")
	return cmd
}

const (
	flagDataPlaneKey      = "data-plane-key"
	flagDataPlaneKeyProof = "data-plane-key-proof"
)
