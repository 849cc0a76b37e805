package cmd

import (
	"github.com/spf13/cobra"

	"github.com/cosmos/cosmos-sdk/server"
	"github.com/cosmos/cosmos-sdk/types/module"
	genutilcli "github.com/cosmos/cosmos-sdk/x/genutil/client/cli"

	"github.com/bftlog/bftlog/app"
)

// initCmd is the SDK's `init` with bftlog's consensus defaults written into the new genesis:
// CometBFT's block max_gas -1 lets one transaction (and one block) use unbounded gas.
func initCmd(basicManager module.BasicManager) *cobra.Command {
	cmd := genutilcli.InitCmd(basicManager, app.DefaultNodeHome)
	sdkRun := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := sdkRun(cmd, args); err != nil {
			return err
		}
		genFile := server.GetServerContextFromCmd(cmd).Config.GenesisFile()
		return app.SetGenesisConsensusDefaults(genFile)
	}
	return cmd
}
