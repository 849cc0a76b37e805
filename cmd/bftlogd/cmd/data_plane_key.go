package cmd

import (
	"encoding/base64"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cosmos/cosmos-sdk/client"

	"github.com/bftlog/bftlog/app/dataplane"
)

// dataPlaneKeyCmd prints the public half of the node's data-plane key, making the key if the
// node has none yet (it is made at the first start too), for its operator to register:
// `bftlogd tx poa set-data-plane-endpoint <endpoint> $(bftlogd data-plane-key)`. Once
// registered, that key signs for the validator on the data plane instead of its consensus key.
func dataPlaneKeyCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "data-plane-key",
		Short: "Print this node's data-plane public key (base64), to register with tx poa set-data-plane-endpoint",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home := client.GetClientContextFromCmd(cmd).HomeDir
			key, err := dataplane.LoadOrGenDataPlaneKey(dataplane.DataPlaneKeyPath(home))
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), base64.StdEncoding.EncodeToString(key.PubKey().Bytes()))
			return err
		},
	}
}
