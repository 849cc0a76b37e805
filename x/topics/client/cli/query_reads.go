package cli

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/flags"

	"github.com/bftlog/bftlog/x/topics/client/consumer"
	"github.com/bftlog/bftlog/x/topics/types"
)

const flagTopic = "topic"

// defaultFetchRecords is what fetch returns without --max-records (the node's default).
const defaultFetchRecords = 500

// readCmd is a query command that reads through a Reader: the node's, or, with v and
// --verify, a proving one.
func readCmd(v Verifier, use, short string, nargs int, run func(cmd *cobra.Command, args []string, clientCtx client.Context, r Reader) error) *cobra.Command {
	cmd := &cobra.Command{
		Use: use, Short: short, Args: cobra.ExactArgs(nargs),
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SilenceUsage = true
			clientCtx, err := client.GetClientQueryContext(cmd)
			if err != nil {
				return err
			}
			r, err := reader(cmd, clientCtx, v)
			if err != nil {
				return PlainError(err)
			}
			return run(cmd, args, clientCtx, r)
		},
	}
	if v != nil {
		v.AddFlags(cmd)
	}
	flags.AddQueryFlagsToCmd(cmd)
	return cmd
}

func newFetchCmd(v Verifier) *cobra.Command {
	short := "Fetch raw records of one partition from an offset"
	if v != nil {
		short += " (--verify to check them against a validator-signed header)"
	}
	cmd := readCmd(v, "fetch [topic] [partition] [offset]", short, 3,
		func(cmd *cobra.Command, args []string, clientCtx client.Context, r Reader) error {
			partition, offset, err := parsePartitionOffset(args[1], args[2])
			if err != nil {
				return err
			}
			maxRecords, _ := cmd.Flags().GetUint32("max-records")
			if maxRecords == 0 {
				maxRecords = defaultFetchRecords
			}
			res, err := r.Fetch(cmd.Context(), &types.QueryFetchRequest{Topic: args[0], Partition: partition, Offset: offset, MaxRecords: maxRecords})
			if err != nil {
				return PlainError(err)
			}
			consumer.Truncate(res, maxRecords)
			_, batches, _ := r.Proven()
			provenNote(cmd, r, fmt.Sprintf("%d records in %d batches", len(res.Records), batches))
			return clientCtx.PrintProto(res)
		})
	cmd.Flags().Uint32("max-records", 0, "records to return (0: 500)")
	return cmd
}

func newPartitionsCmd(v Verifier) *cobra.Command {
	short := "Show a topic's partitions with high watermark, log start offset, records and bytes"
	if v != nil {
		short += " (--verify to prove them)"
	}
	return readCmd(v, "partitions [name]", short, 1,
		func(cmd *cobra.Command, args []string, clientCtx client.Context, r Reader) error {
			parts, err := r.Partitions(cmd.Context(), args[0])
			if err != nil {
				return PlainError(err)
			}
			provenNote(cmd, r, fmt.Sprintf("%d partitions", len(parts)))
			return clientCtx.PrintProto(&types.QueryPartitionsResponse{Partitions: parts})
		})
}

func newGroupOffsetsCmd(v Verifier) *cobra.Command {
	short := "Show a group's committed offsets (--topic for one topic)"
	if v != nil {
		short = "Show a group's committed offsets (--topic for one topic; --verify proves every partition of --topic)"
	}
	cmd := readCmd(v, "group-offsets [group-id]", short, 1,
		func(cmd *cobra.Command, args []string, clientCtx client.Context, r Reader) error {
			topic, _ := cmd.Flags().GetString(flagTopic)
			res, err := r.GroupOffsets(cmd.Context(), args[0], topic)
			if err != nil {
				return PlainError(err)
			}
			provenNote(cmd, r, fmt.Sprintf("committed offsets of every partition of %s (%d with a commit)", topic, len(res.Offsets)))
			return clientCtx.PrintProto(res)
		})
	cmd.Flags().String(flagTopic, "", "only this topic")
	return cmd
}

func parsePartitionOffset(partition, offset string) (uint32, uint64, error) {
	p, err := strconv.ParseUint(partition, 10, 32)
	if err != nil {
		return 0, 0, fmt.Errorf("partition %q: %w", partition, err)
	}
	o, err := strconv.ParseUint(offset, 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("offset %q: %w", offset, err)
	}
	return uint32(p), o, nil
}
