package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cosmos/cosmos-sdk/client"

	"github.com/bftlog/bftlog/x/topics/client/consumer"
	"github.com/bftlog/bftlog/x/topics/types"
)

// Reader is where the read commands (consume, fetch, partitions, group-offsets) get their
// answers: the node's query service, or a reader that proves every answer.
type Reader interface {
	Partitions(ctx context.Context, topic string) ([]types.Partition, error)
	// Fetch answers with decoded records (Records) from req.Offset on: at most req.MaxRecords,
	// unless the first stored batch alone holds more (whole batches, as in Kafka).
	Fetch(ctx context.Context, req *types.QueryFetchRequest) (*types.QueryFetchResponse, error)
	GroupOffsets(ctx context.Context, group, topic string) (*types.QueryGroupOffsetsResponse, error)
	// CheckConsumed checks records a group consumer fetched from the node.
	CheckConsumed(ctx context.Context, recs []consumer.Record) error
	// Proven tells the height the answers so far were proven at and how many record batches
	// were proven; ok is false for a reader that proves nothing.
	Proven() (height int64, batches int, ok bool)
}

// Verifier adds --verify to the read commands. The module's own commands have none, so that a
// chain importing x/topics does not link CometBFT's light client; bftlogd builds its query
// commands with one (package verifycli).
type Verifier interface {
	// AddFlags adds --verify and the trust anchor flags to a read command.
	AddFlags(cmd *cobra.Command)
	// Reader returns a proving reader, or nil when the command's --verify is off.
	Reader(cmd *cobra.Command, clientCtx client.Context) (Reader, error)
}

// NodeReader reads from the node's query service and proves nothing.
type NodeReader struct{ QC types.QueryClient }

func (r NodeReader) Partitions(ctx context.Context, topic string) ([]types.Partition, error) {
	res, err := r.QC.Partitions(ctx, &types.QueryPartitionsRequest{Name: topic})
	if err != nil {
		return nil, err
	}
	return res.Partitions, nil
}

// Fetch reads the stored batches and decodes them here (consumer.FetchRecords): the node
// only reads its store.
func (r NodeReader) Fetch(ctx context.Context, req *types.QueryFetchRequest) (*types.QueryFetchResponse, error) {
	return consumer.FetchRecords(ctx, r.QC, req)
}

func (r NodeReader) GroupOffsets(ctx context.Context, group, topic string) (*types.QueryGroupOffsetsResponse, error) {
	return r.QC.GroupOffsets(ctx, &types.QueryGroupOffsetsRequest{GroupId: group, Topic: topic})
}

func (NodeReader) CheckConsumed(context.Context, []consumer.Record) error { return nil }

func (NodeReader) Proven() (int64, int, bool) { return 0, 0, false }

// reader picks the proving reader when v is set and the command asks for it.
func reader(cmd *cobra.Command, clientCtx client.Context, v Verifier) (Reader, error) {
	if v != nil {
		r, err := v.Reader(cmd, clientCtx)
		if err != nil || r != nil {
			return r, err
		}
	}
	return NodeReader{types.NewQueryClient(clientCtx)}, nil
}

// provenNote tells the user, on stderr, what r proved.
func provenNote(cmd *cobra.Command, r Reader, what string) {
	if height, _, ok := r.Proven(); ok {
		fmt.Fprintf(cmd.ErrOrStderr(), "verified %s at height %d against header %d signed by the validators\n", what, height, height+1)
	}
}
