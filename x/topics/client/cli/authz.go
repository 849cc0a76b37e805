package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/flags"
	clienttx "github.com/cosmos/cosmos-sdk/client/tx"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/x/authz"

	"github.com/bftlog/bftlog/x/topics/types"
)

const flagExpiration = "expiration"

// newGrantProduceCmd grants a ProduceAuthorization: the x/authz CLI builds only the SDK's own
// authorization types, so this module's typed one has its command here. Revoking is x/authz's
// own (tx authz revoke <grantee> /bftlog.topics.v1.MsgProduce).
func newGrantProduceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "grant-produce [grantee] [topic]...",
		Short: "Let an account (a gateway) produce in your name to these topics only (x/authz ProduceAuthorization)",
		Long: `The grantee sends MsgProduce with you as the producer inside an x/authz MsgExec it signs
(bftlogd kafka serve --granter <you>). It may produce only to the topics named here, and only
where you may. Revoke with: bftlogd tx authz revoke <grantee> /bftlog.topics.v1.MsgProduce --from <you>`,
		Example: `bftlogd tx topics grant-produce bftlog1gateway... orders payments --from alice
bftlogd tx topics grant-produce gateway orders --expiration 720h --from alice`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			clientCtx, err := client.GetClientTxContext(cmd)
			if err != nil {
				return err
			}
			grantee, err := accountAddress(clientCtx, args[0])
			if err != nil {
				return err
			}
			granteeAddr, err := sdk.AccAddressFromBech32(grantee)
			if err != nil {
				return err
			}
			auth := types.NewProduceAuthorization(args[1:]...)
			if err := auth.ValidateBasic(); err != nil {
				return err
			}
			var expiration *time.Time
			if d, _ := cmd.Flags().GetDuration(flagExpiration); d > 0 {
				t := time.Now().Add(d)
				expiration = &t
			}
			msg, err := authz.NewMsgGrant(clientCtx.GetFromAddress(), granteeAddr, auth, expiration)
			if err != nil {
				return fmt.Errorf("grant: %w", err)
			}
			return clienttx.GenerateOrBroadcastTxCLI(clientCtx.WithOutput(cmd.OutOrStdout()), cmd.Flags(), msg)
		},
	}
	cmd.Flags().Duration(flagExpiration, 0, "the grant ends this long from now (0: never; x/authz prunes it once it ends)")
	flags.AddTxFlagsToCmd(cmd)
	cmd.SilenceUsage = true
	return cmd
}
