package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/flags"

	"github.com/bftlog/bftlog/x/topics/types"
)

const (
	flagToEarliest  = "to-earliest"
	flagToLatest    = "to-latest"
	flagToOffset    = "to-offset"
	flagToDatetime  = "to-datetime"
	flagToTimestamp = "to-timestamp"
	flagPartitionsL = "partitions"
)

func newResetOffsetsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reset-offsets [group-id] [topic]",
		Short: "Move an inactive group's committed offsets, like kafka-consumer-groups --reset-offsets (group admin or gov)",
		Example: `bftlogd tx topics reset-offsets billing orders --to-earliest --from alice
bftlogd tx topics reset-offsets billing orders --to-datetime 2026-11-29T12:00:00Z --partitions 0,2 --from alice`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SilenceUsage = true
			clientCtx, err := client.GetClientTxContext(cmd)
			if err != nil {
				return err
			}
			fs := cmd.Flags()
			msg := &types.MsgResetOffsets{Authority: clientCtx.GetFromAddress().String(), GroupId: args[0], Topic: args[1]}
			parts, err := fs.GetUintSlice(flagPartitionsL)
			if err != nil {
				return err
			}
			for _, p := range parts {
				msg.Partitions = append(msg.Partitions, uint32(p))
			}
			chosen := 0
			if b, _ := fs.GetBool(flagToEarliest); b {
				msg.To, chosen = types.OFFSET_SPEC_EARLIEST, chosen+1
			}
			if b, _ := fs.GetBool(flagToLatest); b {
				msg.To, chosen = types.OFFSET_SPEC_LATEST, chosen+1
			}
			if fs.Changed(flagToOffset) {
				msg.Offset, _ = fs.GetUint64(flagToOffset)
				msg.To, chosen = types.OFFSET_SPEC_OFFSET, chosen+1
			}
			if fs.Changed(flagToTimestamp) {
				msg.TimestampMs, _ = fs.GetInt64(flagToTimestamp)
				msg.To, chosen = types.OFFSET_SPEC_TIMESTAMP, chosen+1
			}
			if fs.Changed(flagToDatetime) {
				s, _ := fs.GetString(flagToDatetime)
				t, err := time.Parse(time.RFC3339, s)
				if err != nil {
					return fmt.Errorf("--%s %q: want RFC 3339, e.g. 2026-11-29T12:00:00Z", flagToDatetime, s)
				}
				msg.TimestampMs = t.UnixMilli()
				msg.To, chosen = types.OFFSET_SPEC_TIMESTAMP, chosen+1
			}
			if chosen != 1 {
				return fmt.Errorf("give exactly one of --%s, --%s, --%s, --%s, --%s", flagToEarliest, flagToLatest, flagToOffset, flagToDatetime, flagToTimestamp)
			}
			res, err := sendAndWait(clientCtx, fs, msg)
			if err != nil {
				return err
			}
			return printTxResult(cmd, clientCtx, res, "reset group %s on %s (tx %s, height %d)\n", args[0], args[1], res.TxHash, res.Height)
		},
	}
	cmd.Flags().Bool(flagToEarliest, false, "reset to the log start offset")
	cmd.Flags().Bool(flagToLatest, false, "reset to the high watermark")
	cmd.Flags().Uint64(flagToOffset, 0, "reset to this offset")
	cmd.Flags().String(flagToDatetime, "", "reset to the first record appended at or after this RFC 3339 time")
	cmd.Flags().Int64(flagToTimestamp, 0, "reset to the first record appended at or after this time in ms since the epoch")
	cmd.Flags().UintSlice(flagPartitionsL, nil, "partitions to reset (default: all)")
	flags.AddTxFlagsToCmd(cmd)
	return cmd
}
