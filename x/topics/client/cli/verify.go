package cli

import (
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/flags"

	"github.com/bftlog/bftlog/x/topics/client/consumer"
	"github.com/bftlog/bftlog/x/topics/client/verify"
	"github.com/bftlog/bftlog/x/topics/types"
)

const (
	flagVerify      = "verify"
	flagTrustHeight = "trust-height"
	flagTrustHash   = "trust-hash"
	flagTrustPeriod = "trust-period"
	flagWitness     = "witness"
	flagTopic       = "topic"
	flagFromOffset  = "from-offset"
	flagToOffset2   = "until-offset"
)

// addVerifyFlags adds --verify and the trust anchor to a read command.
func addVerifyFlags(cmd *cobra.Command) {
	cmd.Flags().Bool(flagVerify, false, "check every answer with Merkle proofs against a header signed by the validators (needs --trust-height and --trust-hash)")
	addTrustFlags(cmd)
}

func addTrustFlags(cmd *cobra.Command) {
	cmd.Flags().Int64(flagTrustHeight, 0, "height of a block you trust (the light client's anchor)")
	cmd.Flags().String(flagTrustHash, "", "hex hash of that block, from a source you trust (not from the node you read from)")
	cmd.Flags().Duration(flagTrustPeriod, 168*time.Hour, "how old the anchor may be; below the unbonding time")
	cmd.Flags().StringSlice(flagWitness, nil, "RPC addresses of other nodes that cross-check headers (default: --node alone)")
}

// verifier builds the verifying client from the flags; nil when --verify is off (unless always).
func verifier(cmd *cobra.Command, clientCtx client.Context, always bool) (*verify.Client, error) {
	fs := cmd.Flags()
	if on, _ := fs.GetBool(flagVerify); !on && !always {
		return nil, nil
	}
	height, _ := fs.GetInt64(flagTrustHeight)
	hashHex, _ := fs.GetString(flagTrustHash)
	period, _ := fs.GetDuration(flagTrustPeriod)
	witnesses, _ := fs.GetStringSlice(flagWitness)
	hash, err := hex.DecodeString(hashHex)
	if err != nil {
		return nil, fmt.Errorf("--trust-hash must be hex: %w", err)
	}
	chainID := clientCtx.ChainID
	if chainID == "" {
		// The anchor hash pins the chain; a node lying about its chain id fails against it.
		st, err := clientCtx.Client.Status(cmd.Context())
		if err != nil {
			return nil, err
		}
		chainID = st.NodeInfo.Network
	}
	return verify.New(cmd.Context(), verify.Config{
		ChainID: chainID, Node: clientCtx.NodeURI, Witnesses: witnesses,
		TrustHeight: height, TrustHash: hash, TrustPeriod: period,
	})
}

func verifiedNote(cmd *cobra.Command, height int64, what string) {
	fmt.Fprintf(cmd.ErrOrStderr(), "verified %s at height %d against header %d signed by the validators\n", what, height, height+1)
}

// readCmd is a query command that reads either plainly or, with --verify, through vc.
func readCmd(use, short string, nargs int, run func(cmd *cobra.Command, args []string, clientCtx client.Context, vc *verify.Client) error) *cobra.Command {
	cmd := &cobra.Command{
		Use: use, Short: short, Args: cobra.ExactArgs(nargs),
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SilenceUsage = true
			clientCtx, err := client.GetClientQueryContext(cmd)
			if err != nil {
				return err
			}
			vc, err := verifier(cmd, clientCtx, false)
			if err != nil {
				return PlainError(err)
			}
			return run(cmd, args, clientCtx, vc)
		},
	}
	addVerifyFlags(cmd)
	flags.AddQueryFlagsToCmd(cmd)
	return cmd
}

func newFetchCmd() *cobra.Command {
	cmd := readCmd("fetch [topic] [partition] [offset]",
		"Fetch raw records of one partition from an offset (--verify to check them against a validator-signed header)", 3,
		func(cmd *cobra.Command, args []string, clientCtx client.Context, vc *verify.Client) error {
			partition, offset, err := parsePartitionOffset(args[1], args[2])
			if err != nil {
				return err
			}
			maxRecords, _ := cmd.Flags().GetUint32("max-records")
			if vc == nil {
				res, err := types.NewQueryClient(clientCtx).Fetch(cmd.Context(), &types.QueryFetchRequest{Topic: args[0], Partition: partition, Offset: offset, MaxRecords: maxRecords})
				if err != nil {
					return PlainError(err)
				}
				return clientCtx.PrintProto(res)
			}
			res, err := vc.Fetch(cmd.Context(), 0, args[0], partition, offset, maxRecords)
			if err != nil {
				return PlainError(err)
			}
			verifiedNote(cmd, res.Height, fmt.Sprintf("%d records in %d batches", len(res.Records), res.Batches))
			return clientCtx.PrintProto(&types.QueryFetchResponse{Records: res.Records, HighWatermark: res.Partition.HighWatermark, LogStartOffset: res.Partition.LogStartOffset, NextOffset: res.NextOffset})
		})
	cmd.Flags().Uint32("max-records", 0, "records to return (0: 500)")
	return cmd
}

func newPartitionsCmd() *cobra.Command {
	return readCmd("partitions [name]",
		"Show a topic's partitions with high watermark, log start offset, records and bytes (--verify to prove them)", 1,
		func(cmd *cobra.Command, args []string, clientCtx client.Context, vc *verify.Client) error {
			if vc == nil {
				res, err := types.NewQueryClient(clientCtx).Partitions(cmd.Context(), &types.QueryPartitionsRequest{Name: args[0]})
				if err != nil {
					return PlainError(err)
				}
				return clientCtx.PrintProto(res)
			}
			parts, h, err := verifiedPartitions(cmd.Context(), vc, 0, args[0])
			if err != nil {
				return PlainError(err)
			}
			verifiedNote(cmd, h, fmt.Sprintf("%d partitions", len(parts)))
			return clientCtx.PrintProto(&types.QueryPartitionsResponse{Partitions: parts})
		})
}

// verifiedPartitions proves the topic (its partition count) and every partition at one height.
func verifiedPartitions(ctx context.Context, vc *verify.Client, height int64, topic string) ([]types.Partition, int64, error) {
	t, h, err := vc.Topic(ctx, height, topic)
	if err != nil {
		return nil, h, err
	}
	parts := make([]types.Partition, 0, t.Partitions)
	for i := uint32(0); i < t.Partitions; i++ {
		p, _, err := vc.Partition(ctx, h, topic, i)
		if err != nil {
			return nil, h, err
		}
		parts = append(parts, p)
	}
	return parts, h, nil
}

func newGroupOffsetsCmd() *cobra.Command {
	cmd := readCmd("group-offsets [group-id]",
		"Show a group's committed offsets (--topic for one topic; --verify proves every partition of --topic)", 1,
		func(cmd *cobra.Command, args []string, clientCtx client.Context, vc *verify.Client) error {
			topic, _ := cmd.Flags().GetString(flagTopic)
			if vc == nil {
				res, err := types.NewQueryClient(clientCtx).GroupOffsets(cmd.Context(), &types.QueryGroupOffsetsRequest{GroupId: args[0], Topic: topic})
				if err != nil {
					return PlainError(err)
				}
				return clientCtx.PrintProto(res)
			}
			if topic == "" {
				return fmt.Errorf("--verify needs --topic: the proof covers every partition of one topic, including those without a commit")
			}
			parts, h, err := verifiedPartitions(cmd.Context(), vc, 0, topic)
			if err != nil {
				return PlainError(err)
			}
			out := &types.QueryGroupOffsetsResponse{}
			for _, p := range parts {
				o, found, _, err := vc.CommittedOffset(cmd.Context(), h, args[0], topic, p.Partition)
				if err != nil {
					return PlainError(err)
				}
				if found {
					out.Offsets = append(out.Offsets, types.GroupOffset{Committed: o, BelowLogStart: o.Offset < p.LogStartOffset})
				}
			}
			verifiedNote(cmd, h, fmt.Sprintf("committed offsets of %d partitions (%d with a commit)", len(parts), len(out.Offsets)))
			return clientCtx.PrintProto(out)
		})
	cmd.Flags().String(flagTopic, "", "only this topic")
	return cmd
}

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
			vc, err := verifier(cmd, clientCtx, true)
			if err != nil {
				return PlainError(err)
			}
			fs := cmd.Flags()
			only, _ := fs.GetInt32(flagPartition)
			from, _ := fs.GetInt64(flagFromOffset)
			until, _ := fs.GetInt64(flagToOffset2)
			parts, h, err := verifiedPartitions(cmd.Context(), vc, 0, args[0])
			if err != nil {
				return PlainError(err)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "topic %s at height %d (app hash in header %d, verified from the trust anchor)\n", args[0], h, h+1)
			var records, batches int
			for _, p := range parts {
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
						return PlainError(err)
					}
					n, b = n+len(res.Records), b+res.Batches
					next = res.NextOffset
				}
				records, batches = records+n, batches+b
				fmt.Fprintf(w, "partition %d: log start %d, high watermark %d; offsets [%d, %d): %d records in %d batches verified, no gaps\n",
					p.Partition, p.LogStartOffset, p.HighWatermark, start, end, n, b)
			}
			fmt.Fprintf(w, "verified: %d records in %d batches, 0 failures\n", records, batches)
			return nil
		},
	}
	cmd.Flags().Int32(flagPartition, -1, "only this partition")
	cmd.Flags().Int64(flagFromOffset, -1, "first offset (default: log start offset)")
	cmd.Flags().Int64(flagToOffset2, -1, "stop before this offset (default: high watermark)")
	addTrustFlags(cmd)
	flags.AddQueryFlagsToCmd(cmd)
	return cmd
}

// verifyConsumed checks records a group consumer fetched from the node against proofs: the
// same offsets, proven at the newest provable height, must hold the same records. The proof
// trails the node by a block, so it waits for it briefly.
func verifyConsumed(ctx context.Context, vc *verify.Client, recs []consumer.Record) error {
	type tp struct {
		topic     string
		partition uint32
	}
	byTP := map[tp][]types.Record{}
	var order []tp
	for _, r := range recs {
		k := tp{r.Topic, r.Partition}
		if _, ok := byTP[k]; !ok {
			order = append(order, k)
		}
		byTP[k] = append(byTP[k], r.Record)
	}
	for _, k := range order {
		got := byTP[k]
		deadline := time.Now().Add(15 * time.Second)
		for {
			res, err := vc.Fetch(ctx, 0, k.topic, k.partition, got[0].Offset, uint32(len(got)))
			if err != nil {
				return err
			}
			if len(res.Records) == len(got) {
				for i := range got {
					a, _ := got[i].Marshal()
					b, _ := res.Records[i].Marshal()
					if string(a) != string(b) {
						return &verify.Error{What: fmt.Sprintf("record %s/%d offset %d", k.topic, k.partition, got[i].Offset), Height: res.Height,
							Err: fmt.Errorf("the node served a record the validators did not commit")}
					}
				}
				break
			}
			if time.Now().After(deadline) {
				return &verify.Error{What: fmt.Sprintf("records %s/%d from offset %d", k.topic, k.partition, got[0].Offset), Height: res.Height,
					Err: fmt.Errorf("the node served %d records but only %d are proven", len(got), len(res.Records))}
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(300 * time.Millisecond):
			}
		}
	}
	return nil
}
