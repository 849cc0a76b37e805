package main

import (
	"fmt"
	"os"

	svrcmd "github.com/cosmos/cosmos-sdk/server/cmd"

	"github.com/bftlog/bftlog/app"
	"github.com/bftlog/bftlog/cmd/bftlogd/cmd"
	topicscli "github.com/bftlog/bftlog/x/topics/client/cli"
)

func main() {
	cmd.StampVersion() // a build without scripts/ldflags.sh names itself from Go's build info
	rootCmd := cmd.NewRootCmd()
	// Environment variables prefixed with BFTLOGD_ override flags/config,
	// e.g. BFTLOGD_HOME or BFTLOGD_CHAIN_ID.
	if err := svrcmd.Execute(rootCmd, "BFTLOGD", app.DefaultNodeHome); err != nil {
		// Errors that crossed gRPC lose their code; show the module's message and code plainly.
		fmt.Fprintln(rootCmd.OutOrStderr(), "Error:", topicscli.PlainError(err))
		os.Exit(1)
	}
}
