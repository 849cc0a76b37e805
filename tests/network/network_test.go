package network_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	clitestutil "github.com/cosmos/cosmos-sdk/testutil/cli"

	"github.com/bftlog/bftlog/testutil/network"
	"github.com/bftlog/bftlog/x/topics/client/cli"
	"github.com/bftlog/bftlog/x/topics/types"
)

// TestProduceThenFetchOverGRPCAndREST creates a topic and produces records with signed
// transactions, then reads the same records back through gRPC and the REST gateway.
func TestProduceThenFetchOverGRPCAndREST(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an in-process network")
	}
	net := network.New(t, 1)
	val := net.Validators[0]
	ctx := val.ClientCtx
	from := fmt.Sprintf("--from=%s", val.Address)
	txFlags := []string{from, "--yes", "--broadcast-mode=sync", "--chain-id=" + net.Config.ChainID}

	_, err := clitestutil.ExecTestCLICmd(ctx, cli.NewTxCmd(), append([]string{"create-topic", "net", "--partitions=2"}, txFlags...))
	require.NoError(t, err)
	out, err := clitestutil.ExecTestCLICmd(ctx, cli.NewTxCmd(), append([]string{
		"produce", "net", "k1:v1", "k2:v2", "k3:v3", "--partition=1", "--key-separator=:", "--header=h=x", "--output=text",
	}, txFlags...))
	require.NoError(t, err)
	require.Contains(t, out.String(), "net/1 offsets 0-2 (3 records)")

	check := func(res *types.QueryFetchResponse) {
		t.Helper()
		require.Equal(t, uint64(3), res.HighWatermark)
		require.Len(t, res.Records, 3)
		for i, r := range res.Records {
			require.Equal(t, uint64(i), r.Offset)
			require.Equal(t, fmt.Sprintf("k%d", i+1), string(r.Key.Data))
			require.Equal(t, fmt.Sprintf("v%d", i+1), string(r.Value.Data))
			require.Equal(t, []types.Header{{Key: "h", Value: []byte("x")}}, r.Headers)
			require.Equal(t, val.Address.String(), r.Producer)
		}
	}

	conn, err := grpc.NewClient(val.AppConfig.GRPC.Address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	qc := types.NewQueryClient(conn)
	res, err := qc.Fetch(context.Background(), &types.QueryFetchRequest{Topic: "net", Partition: 1, Offset: 0})
	require.NoError(t, err)
	check(res)
	// The stored batch itself: the one produced, decoded client-side to the same records.
	batches, err := qc.Fetch(context.Background(), &types.QueryFetchRequest{Topic: "net", Partition: 1, Offset: 1, Format: types.FETCH_FORMAT_BATCHES})
	require.NoError(t, err)
	require.Empty(t, batches.Records)
	require.Len(t, batches.Batches, 1)
	require.Equal(t, uint64(0), batches.Batches[0].BaseOffset, "the batch holding offset 1 starts at 0")
	require.Equal(t, uint64(3), batches.NextOffset)
	recs, err := batches.Batches[0].Records()
	require.NoError(t, err)
	check(&types.QueryFetchResponse{HighWatermark: batches.HighWatermark, Records: recs})
	_, err = qc.Fetch(context.Background(), &types.QueryFetchRequest{Topic: "net", Partition: 1, Offset: 4})
	require.ErrorContains(t, err, "offset out of range")

	resp, err := http.Get(val.APIAddress + "/bftlog/topics/v1/topics/net/partitions/1/records?offset=0&max_records=10")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var rest types.QueryFetchResponse
	require.NoError(t, ctx.Codec.UnmarshalJSON(body, &rest))
	check(&rest)

	resp2, err := http.Get(val.APIAddress + "/bftlog/topics/v1/topics/net/partitions")
	require.NoError(t, err)
	defer resp2.Body.Close()
	var parts types.QueryPartitionsResponse
	body, _ = io.ReadAll(resp2.Body)
	require.NoError(t, ctx.Codec.UnmarshalJSON(body, &parts))
	require.Len(t, parts.Partitions, 2)
	require.Equal(t, uint64(3), parts.Partitions[1].HighWatermark)
}
