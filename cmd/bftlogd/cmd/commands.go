package cmd

import (
	"errors"
	"io"

	dbm "github.com/cosmos/cosmos-db"
	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"cosmossdk.io/log"
	confixcmd "cosmossdk.io/tools/confix/cmd"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/debug"
	"github.com/cosmos/cosmos-sdk/client/flags"
	"github.com/cosmos/cosmos-sdk/client/keys"
	"github.com/cosmos/cosmos-sdk/client/pruning"
	"github.com/cosmos/cosmos-sdk/client/rpc"
	"github.com/cosmos/cosmos-sdk/client/snapshot"
	"github.com/cosmos/cosmos-sdk/server"
	servertypes "github.com/cosmos/cosmos-sdk/server/types"
	"github.com/cosmos/cosmos-sdk/types/module"
	authcmd "github.com/cosmos/cosmos-sdk/x/auth/client/cli"
	authtx "github.com/cosmos/cosmos-sdk/x/auth/tx"
	genutilcli "github.com/cosmos/cosmos-sdk/x/genutil/client/cli"

	"github.com/bftlog/bftlog/app"
	"github.com/bftlog/bftlog/x/topics/client/txclient"
)

func initRootCmd(rootCmd *cobra.Command, txConfig client.TxConfig, basicManager module.BasicManager) {
	rootCmd.AddCommand(
		initCmd(basicManager),
		debug.Cmd(),
		confixcmd.ConfigCommand(),
		pruning.Cmd(newApp, app.DefaultNodeHome),
		snapshot.Cmd(newApp),
	)

	// start, comet, export, version, rollback, ...
	server.AddCommands(rootCmd, app.DefaultNodeHome, newApp, appExport, addModuleInitFlags)

	// keybase, status, genesis, query and tx commands
	rootCmd.AddCommand(
		server.StatusCommand(),
		genesisCommand(txConfig, basicManager, setDataPlaneEndpointGenesisCmd()),
		queryCommand(),
		txCommand(),
		keys.Commands(),
		newKafkaCmd(),
		dataPlaneKeyCmd(),
		testnetCmd(),
	)
}

func addModuleInitFlags(_ *cobra.Command) {}

// genesisCommand builds the `bftlogd genesis` command (add-genesis-account,
// gentx, collect-gentxs, validate, migrate, ...).
func genesisCommand(txConfig client.TxConfig, basicManager module.BasicManager, cmds ...*cobra.Command) *cobra.Command {
	cmd := genutilcli.Commands(txConfig, basicManager, app.DefaultNodeHome)
	for _, subCmd := range cmds {
		cmd.AddCommand(subCmd)
	}
	return cmd
}

// queryCommand returns the `query` command; module queries are added by
// autocli.
func queryCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:                        "query",
		Aliases:                    []string{"q"},
		Short:                      "Querying subcommands",
		DisableFlagParsing:         false,
		SuggestionsMinimumDistance: 2,
		RunE:                       client.ValidateCmd,
	}

	cmd.AddCommand(
		waitTxCmd(),
		rpc.ValidatorCommand(),
		server.QueryBlockCmd(),
		authcmd.QueryTxsByEventsCmd(),
		server.QueryBlocksCmd(),
		queryTxCmd(),
		server.QueryBlockResultsCmd(),
	)

	return cmd
}

// queryTxCmd is the SDK's `query tx`, which also finds, by its own hash, a transaction a block
// named by digest (app/ordering.go): CometBFT indexed its result under the reference's hash,
// so it is found by the ordered.tx_hash event and printed as that result (the transaction's
// code and events; its body is the MsgOrderedTx that named it).
func queryTxCmd() *cobra.Command {
	cmd := authcmd.QueryTxCmd()
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		err := run(c, args)
		if typ, _ := c.Flags().GetString(authcmd.FlagType); err == nil || len(args) != 1 || typ != authcmd.TypeHash {
			return err
		}
		clientCtx, cerr := client.GetClientQueryContext(c)
		if cerr != nil {
			return err
		}
		found, serr := authtx.QueryTxsByEvents(clientCtx, 1, 1, txclient.OrderedQuery(args[0]), "")
		if serr != nil || found == nil || len(found.Txs) == 0 {
			return err
		}
		return clientCtx.PrintProto(found.Txs[0])
	}
	return cmd
}

// txCommand returns the `tx` command; module transactions are added by
// autocli.
func txCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:                        "tx",
		Short:                      "Transactions subcommands",
		DisableFlagParsing:         false,
		SuggestionsMinimumDistance: 2,
		RunE:                       client.ValidateCmd,
	}

	cmd.AddCommand(
		authcmd.GetSignCommand(),
		authcmd.GetSignBatchCommand(),
		authcmd.GetMultiSignCommand(),
		authcmd.GetMultiSignBatchCmd(),
		authcmd.GetValidateSignaturesCommand(),
		authcmd.GetBroadcastCommand(),
		authcmd.GetEncodeCommand(),
		authcmd.GetDecodeCommand(),
		authcmd.GetSimulateCmd(),
	)

	return cmd
}

// newApp creates the application (servertypes.AppCreator).
func newApp(
	logger log.Logger,
	db dbm.DB,
	traceStore io.Writer,
	appOpts servertypes.AppOptions,
) servertypes.Application {
	baseappOptions := server.DefaultBaseappOptions(appOpts)
	return app.New(logger, db, traceStore, true, appOpts, baseappOptions...)
}

// appExport creates a new app (optionally at a given height) and exports its
// state (servertypes.AppExporter).
func appExport(
	logger log.Logger,
	db dbm.DB,
	traceStore io.Writer,
	height int64,
	forZeroHeight bool,
	jailAllowedAddrs []string,
	appOpts servertypes.AppOptions,
	modulesToExport []string,
) (servertypes.ExportedApp, error) {
	// this check is necessary as we use the flag in x/upgrade.
	// we can exit more gracefully by checking the flag here.
	homePath, ok := appOpts.Get(flags.FlagHome).(string)
	if !ok || homePath == "" {
		return servertypes.ExportedApp{}, errors.New("application home not set")
	}

	viperAppOpts, ok := appOpts.(*viper.Viper)
	if !ok {
		return servertypes.ExportedApp{}, errors.New("appOpts is not viper.Viper")
	}

	// overwrite the FlagInvCheckPeriod
	viperAppOpts.Set(server.FlagInvCheckPeriod, 1)
	appOpts = viperAppOpts

	var bftlogApp *app.App
	if height != -1 {
		bftlogApp = app.New(logger, db, traceStore, false, appOpts)
		if err := bftlogApp.LoadHeight(height); err != nil {
			return servertypes.ExportedApp{}, err
		}
	} else {
		bftlogApp = app.New(logger, db, traceStore, true, appOpts)
	}

	return bftlogApp.ExportAppStateAndValidators(forZeroHeight, jailAllowedAddrs, modulesToExport)
}
