package cli

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/flags"
	clienttx "github.com/cosmos/cosmos-sdk/client/tx"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/types"
)

const (
	flagToEarliest  = "to-earliest"
	flagToLatest    = "to-latest"
	flagToOffset    = "to-offset"
	flagToDatetime  = "to-datetime"
	flagToTimestamp = "to-timestamp"
	flagPartitionsL = "partitions"

	flagJoinPolicy       = "join-policy"
	flagAllowedMembers   = "allowed-members"
	flagAssignor         = "assignor"
	flagSessionTimeoutMs = "session-timeout-ms"
)

// create-group and update-group-policy are hand-written, not autocli's, for --allowed-members:
// autocli parses a repeated address flag before the command has its client context, so it
// cannot look key names up in the keyring, and it takes one address per flag, not a comma list.
// The other flags and the output (the broadcast response) are what autocli gave.

func newCreateGroupCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create-group [group-id]",
		Short: "Create a consumer group you administer, with who may join (--join-policy anyone|allowlist; default: only you)",
		Example: `bftlogd tx topics create-group billing --join-policy allowlist --allowed-members bob,carol --from alice
bftlogd tx topics create-group billing --join-policy allowlist --allowed-members bftlog1...,bftlog1... --from alice`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			clientCtx, err := client.GetClientTxContext(cmd)
			if err != nil {
				return err
			}
			fs := cmd.Flags()
			msg := &types.MsgCreateGroup{Admin: clientCtx.GetFromAddress().String(), GroupId: args[0]}
			policy, err := enumFlag(fs, flagJoinPolicy, "JOIN_POLICY_", types.JoinPolicy_value)
			if err != nil {
				return err
			}
			assignor, err := enumFlag(fs, flagAssignor, "ASSIGNOR_", types.Assignor_value)
			if err != nil {
				return err
			}
			msg.JoinPolicy, msg.Assignor = types.JoinPolicy(policy), types.Assignor(assignor)
			if msg.SessionTimeoutMs, err = fs.GetInt64(flagSessionTimeoutMs); err != nil {
				return err
			}
			if msg.AllowedMembers, err = allowedMembers(clientCtx, fs); err != nil {
				return err
			}
			return clienttx.GenerateOrBroadcastTxCLI(clientCtx.WithOutput(cmd.OutOrStdout()), fs, msg)
		},
	}
	addJoinPolicyFlags(cmd)
	cmd.Flags().String(flagAssignor, "unspecified", "who assigns partitions: range, round-robin or unspecified (range)")
	cmd.Flags().Int64(flagSessionTimeoutMs, 0, "how long a member may go without a heartbeat, in ms (0: 30 s)")
	flags.AddTxFlagsToCmd(cmd)
	cmd.SilenceUsage = true
	return cmd
}

func newUpdateGroupPolicyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "update-group-policy [group-id]",
		Short: "Replace who may join a group: --join-policy anyone|allowlist|unspecified (admin only) and --allowed-members (group admin or gov)",
		Example: `bftlogd tx topics update-group-policy billing --join-policy anyone --from alice
bftlogd tx topics update-group-policy billing --join-policy allowlist --allowed-members bob --allowed-members carol --from alice`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			clientCtx, err := client.GetClientTxContext(cmd)
			if err != nil {
				return err
			}
			fs := cmd.Flags()
			msg := &types.MsgUpdateGroupPolicy{Authority: clientCtx.GetFromAddress().String(), GroupId: args[0]}
			policy, err := enumFlag(fs, flagJoinPolicy, "JOIN_POLICY_", types.JoinPolicy_value)
			if err != nil {
				return err
			}
			msg.JoinPolicy = types.JoinPolicy(policy)
			if msg.AllowedMembers, err = allowedMembers(clientCtx, fs); err != nil {
				return err
			}
			return clienttx.GenerateOrBroadcastTxCLI(clientCtx.WithOutput(cmd.OutOrStdout()), fs, msg)
		},
	}
	addJoinPolicyFlags(cmd)
	flags.AddTxFlagsToCmd(cmd)
	cmd.SilenceUsage = true
	return cmd
}

func addJoinPolicyFlags(cmd *cobra.Command) {
	cmd.Flags().String(flagJoinPolicy, "unspecified", "who may join: anyone, allowlist (you and --allowed-members) or unspecified (only you)")
	cmd.Flags().StringSlice(flagAllowedMembers, nil, "accounts that may join, as addresses or key names: comma-separated or the flag repeated")
}

// allowedMembers is --allowed-members as account addresses: each value is an address, or the
// name of a key in the keyring (as --from is).
func allowedMembers(clientCtx client.Context, fs *pflag.FlagSet) ([]string, error) {
	values, err := fs.GetStringSlice(flagAllowedMembers)
	if err != nil {
		return nil, err
	}
	var addrs []string
	for _, v := range values {
		addr, err := accountAddress(clientCtx, v)
		if err != nil {
			return nil, fmt.Errorf("--%s %w", flagAllowedMembers, err)
		}
		addrs = append(addrs, addr)
	}
	return addrs, nil
}

// accountAddress reads an account given as a bech32 address or as the name of a key in the
// keyring. An address is taken without opening the keyring (which may ask for a passphrase).
func accountAddress(clientCtx client.Context, s string) (string, error) {
	s = strings.TrimSpace(s)
	addr, addrErr := sdk.AccAddressFromBech32(s)
	if addrErr == nil {
		return addr.String(), nil
	}
	if clientCtx.Keyring == nil {
		return "", fmt.Errorf("%q is not an account address (%v), and there is no keyring to look it up as a key name", s, addrErr)
	}
	rec, err := clientCtx.Keyring.Key(s)
	if err != nil {
		// The keyring's error stays inside the text: PlainError drops a trailing "key not found".
		return "", fmt.Errorf("%q is neither the name of a key in the keyring (%s backend: %w) nor an account address (%v)",
			s, clientCtx.Keyring.Backend(), err, addrErr)
	}
	if addr, err = rec.GetAddress(); err != nil {
		return "", fmt.Errorf("key %q: %w", s, err)
	}
	return addr.String(), nil
}

// enumFlag reads a flag naming a proto enum value as autocli spells it: lower case without the
// enum's prefix, "-" for "_" (JOIN_POLICY_ALLOWLIST is "allowlist", ASSIGNOR_ROUND_ROBIN "round-robin").
func enumFlag(fs *pflag.FlagSet, name, prefix string, values map[string]int32) (int32, error) {
	s, err := fs.GetString(name)
	if err != nil {
		return 0, err
	}
	if v, ok := values[prefix+strings.ToUpper(strings.ReplaceAll(s, "-", "_"))]; ok {
		return v, nil
	}
	valid := make([]string, 0, len(values))
	for k := range values {
		valid = append(valid, strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(k, prefix), "_", "-")))
	}
	slices.Sort(valid)
	return 0, fmt.Errorf("--%s %q: want one of %s", name, s, strings.Join(valid, ", "))
}

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
