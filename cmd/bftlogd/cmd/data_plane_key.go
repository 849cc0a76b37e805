package cmd

import (
	"encoding/base64"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/types/bech32"

	"github.com/bftlog/bftlog/app/dataplane"
	poatypes "github.com/bftlog/bftlog/x/poa/types"
)

// dataPlaneKeyCmd prints the public half of the node's data-plane key (base64), making the key
// if the node has none yet (it is made at the first start too); with --operator, the flags that
// register it with its proof for that operator:
// `bftlogd tx poa set-data-plane-endpoint <endpoint> $(bftlogd data-plane-key --operator <address>)`
// (genesis set-data-plane-endpoint takes the same flags).
// Once registered, that key signs for the validator on the data plane instead of its consensus
// key.
func dataPlaneKeyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "data-plane-key",
		Short: "Print this node's data-plane public key (base64); with --operator, the flags --data-plane-key and --data-plane-key-proof that register it for that operator (tx poa set-data-plane-endpoint, genesis set-data-plane-endpoint)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home := client.GetClientContextFromCmd(cmd).HomeDir
			key, err := dataplane.LoadOrGenDataPlaneKey(dataplane.DataPlaneKeyPath(home))
			if err != nil {
				return err
			}
			out := base64.StdEncoding.EncodeToString(key.PubKey().Bytes())
			if operator, _ := cmd.Flags().GetString(flagOperator); operator != "" {
				_, op, err := bech32.DecodeAndConvert(operator)
				if err != nil {
					return fmt.Errorf("operator %q: %w", operator, err)
				}
				proof, err := key.Sign(poatypes.DataPlaneKeyProofBytes(op))
				if err != nil {
					return err
				}
				out = "--data-plane-key=" + out + " --data-plane-key-proof=" + base64.StdEncoding.EncodeToString(proof)
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), out)
			return err
		},
	}
	cmd.Flags().String(flagOperator, "", "the operator's address (bftlog1... or bftlogvaloper...): print the key's proof for it too")
	return cmd
}

const flagOperator = "operator"
