package cli

import (
	"github.com/spf13/cobra"

	"github.com/cosmos/cosmos-sdk/client"

	"github.com/bftlog/bftlog/x/topics/types"
)

const (
	flagOffset         = "offset"
	flagFromBeginning  = "from-beginning"
	flagMax            = "max"
	flagPrintKey       = "print-key"
	flagPrintOffset    = "print-offset"
	flagPrintPartition = "print-partition"
	flagPrintHeaders   = "print-headers"
	flagPrintTimestamp = "print-timestamp"
	flagFetchRecords   = "fetch-records"
	flagGroup          = "group"
	flagStay           = "stay"
	flagFollow         = "follow"
)

// NewQueryCmd is the root of `bftlogd query topics` as the module provides it: plain reads,
// without --verify.
func NewQueryCmd() *cobra.Command { return NewQueryCmdWithVerifier(nil) }

// NewQueryCmdWithVerifier is the root of `bftlogd query topics` whose read commands take
// --verify and read through v.
func NewQueryCmdWithVerifier(v Verifier) *cobra.Command {
	cmd := &cobra.Command{
		Use:                        types.ModuleName,
		Short:                      "Read topics, partitions and records",
		DisableFlagParsing:         true,
		SuggestionsMinimumDistance: 2,
		RunE:                       client.ValidateCmd,
	}
	cmd.AddCommand(newConsumeCmd(v), newFetchCmd(v), newPartitionsCmd(v), newGroupOffsetsCmd(v))
	return cmd
}
