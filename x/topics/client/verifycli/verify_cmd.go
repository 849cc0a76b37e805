package verifycli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/flags"

	"github.com/bftlog/bftlog/x/topics/client/cli"
)

const (
	flagPartition   = "partition"
	flagFromOffset  = "from-offset"
	flagUntilOffset = "until-offset"
)

func newVerifyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "verify [topic]",
		Short: "Check a topic's records against a validator-signed header and print a report",
		Long: `Prove, at one height, the topic, each partition's watermarks and every record in
[--from-offset, --until-offset) (default: the whole retained log) with Merkle proofs against the
app hash of a header the light client verified from the trust anchor. Exits non-zero naming the
first thing that did not verify.`,
		Example: `bftlogd query topics verify orders --trust-height 1 --trust-hash 4F2A... --node tcp://10.0.0.7:26657`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SilenceUsage = true
			clientCtx, err := client.GetClientQueryContext(cmd)
			if err != nil {
				return err
			}
			vc, err := newClient(cmd, clientCtx)
			if err != nil {
				return cli.PlainError(err)
			}
			fs := cmd.Flags()
			only, _ := fs.GetInt32(flagPartition)
			from, _ := fs.GetInt64(flagFromOffset)
			until, _ := fs.GetInt64(flagUntilOffset)
			parts, err := vc.Partitions(cmd.Context(), 0, args[0])
			if err != nil {
				return cli.PlainError(err)
			}
			h := parts.Height
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "topic %s at height %d (app hash in header %d, verified from the trust anchor)\n", args[0], h, h+1)
			var records, batches int
			for _, p := range parts.Partitions {
				if only >= 0 && p.Partition != uint32(only) {
					continue
				}
				start, end := p.LogStartOffset, p.HighWatermark
				if from >= 0 && uint64(from) > start {
					start = min(uint64(from), end)
				}
				if until >= 0 && uint64(until) < end {
					end = max(uint64(until), start)
				}
				n, b := 0, 0
				for next := start; next < end; {
					res, err := vc.Fetch(cmd.Context(), h, args[0], p.Partition, next, uint32(min(end-next, 10_000)))
					if err != nil {
						return cli.PlainError(err)
					}
					n, b = n+len(res.Records), b+res.Batches
					next = res.NextOffset
				}
				records, batches = records+n, batches+b
				// Offsets without a record (compaction removed them, or transaction markers) are
				// proven empty: none can hide a record.
				gaps := "no gaps"
				if empty := end - start - uint64(n); empty > 0 {
					gaps = fmt.Sprintf("%d offsets proven to hold no record (compacted or transaction markers)", empty)
				}
				fmt.Fprintf(w, "partition %d: log start %d, high watermark %d; offsets [%d, %d): %d records in %d batches verified, %s\n",
					p.Partition, p.LogStartOffset, p.HighWatermark, start, end, n, b, gaps)
			}
			fmt.Fprintf(w, "verified: %d records in %d batches, 0 failures\n", records, batches)
			return nil
		},
	}
	cmd.Flags().Int32(flagPartition, -1, "only this partition")
	cmd.Flags().Int64(flagFromOffset, -1, "first offset (default: log start offset)")
	cmd.Flags().Int64(flagUntilOffset, -1, "stop before this offset (default: high watermark)")
	addTrustFlags(cmd)
	flags.AddQueryFlagsToCmd(cmd)
	return cmd
}
