// Package verifycli gives bftlogd's read commands --verify: every answer proven against a
// header signed by the validators (package verify). It is wired by the binary, not by the
// x/topics module, so that a chain importing the module does not link CometBFT's light client.
package verifycli

import (
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/cosmos/cosmos-sdk/client"

	"github.com/bftlog/bftlog/x/topics/client/cli"
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
	flagStaleness   = "max-staleness"
)

// NewQueryCmd is `bftlogd query topics` with --verify on its read commands and the verify
// report command.
func NewQueryCmd() *cobra.Command {
	cmd := cli.NewQueryCmdWithVerifier(Verifier{})
	cmd.AddCommand(newVerifyCmd())
	return cmd
}

// Verifier implements cli.Verifier with the light client of package verify.
type Verifier struct{}

// AddFlags adds --verify and the trust anchor.
func (Verifier) AddFlags(cmd *cobra.Command) {
	cmd.Flags().Bool(flagVerify, false, "check every answer with Merkle proofs against a header signed by the validators (needs --trust-height and --trust-hash)")
	addTrustFlags(cmd)
}

func addTrustFlags(cmd *cobra.Command) {
	cmd.Flags().Int64(flagTrustHeight, 0, "height of a block you trust (the light client's anchor)")
	cmd.Flags().String(flagTrustHash, "", "hex hash of that block, from a source you trust (not from the node you read from)")
	cmd.Flags().Duration(flagTrustPeriod, 168*time.Hour, "how old the anchor may be; below the unbonding time")
	cmd.Flags().StringSlice(flagWitness, nil, "RPC addresses of other nodes that cross-check headers (default: --node alone)")
	cmd.Flags().Duration(flagStaleness, verify.DefaultMaxStaleness, "refuse to read the latest state when its header is older than this by the local clock (a node hiding new blocks); negative: no bound")
}

// Reader returns a proving reader when --verify is set.
func (Verifier) Reader(cmd *cobra.Command, clientCtx client.Context) (cli.Reader, error) {
	if on, _ := cmd.Flags().GetBool(flagVerify); !on {
		return nil, nil
	}
	vc, err := newClient(cmd, clientCtx)
	if err != nil {
		return nil, err
	}
	return &Reader{VC: vc}, nil
}

// newClient builds the verifying client from the trust anchor flags.
func newClient(cmd *cobra.Command, clientCtx client.Context) (*verify.Client, error) {
	fs := cmd.Flags()
	height, _ := fs.GetInt64(flagTrustHeight)
	hashHex, _ := fs.GetString(flagTrustHash)
	period, _ := fs.GetDuration(flagTrustPeriod)
	witnesses, _ := fs.GetStringSlice(flagWitness)
	staleness, _ := fs.GetDuration(flagStaleness)
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
		TrustHeight: height, TrustHash: hash, TrustPeriod: period, MaxStaleness: staleness,
	})
}

// Reader proves everything at one height, chosen by its first read (the partitions, when
// consuming), so the watermarks and the records it serves belong to the same state.
type Reader struct {
	VC      *verify.Client
	height  int64
	batches int
	// rangesProven: a group consumer proves its polls through CheckRange, so CheckConsumed
	// has nothing left to prove.
	rangesProven bool
}

var (
	_ cli.Reader      = (*Reader)(nil)
	_ consumer.Prover = (*Reader)(nil)
)

// Start proves a group consumer's starting point (consumer.Prover).
func (r *Reader) Start(ctx context.Context, minHeight int64, group, topic string, partition uint32) (uint64, bool, types.Partition, error) {
	off, part, err := r.VC.ConsumerStart(ctx, minHeight, group, topic, partition)
	if err != nil {
		return 0, false, types.Partition{}, err
	}
	r.height = part.Height
	return off.Offset.Offset, off.Found, part.Partition, nil
}

// CheckRange proves a group consumer's poll of one partition (consumer.Prover).
func (r *Reader) CheckRange(ctx context.Context, topic string, partition uint32, offset, next uint64, recs []types.Record) error {
	r.rangesProven = true
	res, err := r.VC.CheckRange(ctx, topic, partition, offset, next, recs)
	if err != nil {
		return err
	}
	if res.Height > 0 {
		r.height = res.Height
	}
	r.batches += res.Batches
	return nil
}

// Partition proves one partition at the newest provable height (consumer.Prover).
func (r *Reader) Partition(ctx context.Context, topic string, partition uint32) (types.Partition, error) {
	res, err := r.VC.Partition(ctx, 0, topic, partition)
	if err != nil {
		return types.Partition{}, err
	}
	r.height = res.Height
	return res.Partition, nil
}

func (r *Reader) Partitions(ctx context.Context, topic string) ([]types.Partition, error) {
	res, err := r.VC.Partitions(ctx, 0, topic)
	if err != nil {
		return nil, err
	}
	r.height = res.Height
	return res.Partitions, nil
}

func (r *Reader) Fetch(ctx context.Context, req *types.QueryFetchRequest) (*types.QueryFetchResponse, error) {
	res, err := r.VC.Fetch(ctx, r.height, req.Topic, req.Partition, req.Offset, req.MaxRecords)
	if err != nil {
		return nil, err
	}
	r.height, r.batches = res.Height, r.batches+res.Batches
	return &types.QueryFetchResponse{Records: res.Records, HighWatermark: res.Partition.HighWatermark, LogStartOffset: res.Partition.LogStartOffset, NextOffset: res.NextOffset}, nil
}

// GroupOffsets proves the group's committed offset, or its absence, for every partition of
// topic: a proof covers a whole topic, so the node cannot leave a commit out.
func (r *Reader) GroupOffsets(ctx context.Context, group, topic string) (*types.QueryGroupOffsetsResponse, error) {
	if topic == "" {
		return nil, fmt.Errorf("--verify needs --topic: the proof covers every partition of one topic, including those without a commit")
	}
	parts, err := r.Partitions(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := &types.QueryGroupOffsetsResponse{}
	for _, p := range parts {
		o, err := r.VC.CommittedOffset(ctx, r.height, group, topic, p.Partition)
		if err != nil {
			return nil, err
		}
		if o.Found {
			out.Offsets = append(out.Offsets, types.GroupOffset{Committed: o.Offset, BelowLogStart: o.Offset.Offset < p.LogStartOffset})
		}
	}
	return out, nil
}

// CheckConsumed proves the records a group consumer read, partition by partition.
func (r *Reader) CheckConsumed(ctx context.Context, recs []consumer.Record) error {
	if r.rangesProven {
		return nil
	}
	type tp struct {
		topic     string
		partition uint32
	}
	byTP := map[tp][]types.Record{}
	var order []tp
	for _, rec := range recs {
		k := tp{rec.Topic, rec.Partition}
		if _, ok := byTP[k]; !ok {
			order = append(order, k)
		}
		byTP[k] = append(byTP[k], rec.Record)
	}
	for _, k := range order {
		res, err := r.VC.CheckConsumed(ctx, k.topic, k.partition, byTP[k])
		if err != nil {
			return err
		}
		r.height, r.batches = res.Height, r.batches+res.Batches
	}
	return nil
}

// Proven tells the height of the last proven answer and how many batches were proven.
func (r *Reader) Proven() (int64, int, bool) { return r.height, r.batches, true }
