package cmd

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/rpc"
	sdk "github.com/cosmos/cosmos-sdk/types"
	authtx "github.com/cosmos/cosmos-sdk/x/auth/tx"

	"github.com/bftlog/bftlog/x/topics/client/txclient"
)

// waitTxPoll is how often wait-tx asks the node for the transaction: about a block's time.
const waitTxPoll = 250 * time.Millisecond

// waitTxCmd is `query wait-tx`, the SDK's command with its flags, waiting by asking the node
// for the transaction until it answers instead of by a subscription. The SDK's subscribes over
// the WebSocket, then asks once: its Subscribe returns when the request is queued, not when the
// node has registered it, and the node indexes a block's transactions after it publishes their
// events, so a transaction committed meanwhile is neither found nor told, and wait-tx times
// out on a committed transaction (TestWaitTxFindsEveryCommittedTx: 2 of 60 back-to-back bank
// sends, each then in a block). It also never finds a transaction a block named by digest
// (app/ordering.go); this one does, by its ordered.tx_hash event, as `query tx` does.
func waitTxCmd() *cobra.Command {
	cmd := rpc.WaitTxCmd()
	cmd.Long = "Waits until the node answers the transaction with the given hash (a block committed it), " +
		"asking every " + waitTxPoll.String() + ", and prints its result."
	cmd.RunE = func(c *cobra.Command, args []string) error {
		clientCtx, err := client.GetClientQueryContext(c)
		if err != nil {
			return err
		}
		timeout, err := c.Flags().GetDuration(rpc.TimeoutFlag)
		if err != nil {
			return err
		}
		var hash string
		if len(args) == 1 {
			hash = args[0]
		} else if hash, err = hashFromTxOutput(c.InOrStdin()); err != nil {
			return err
		}
		if b, err := hex.DecodeString(hash); err != nil || len(b) != 32 {
			return fmt.Errorf("%q is not a transaction hash (64 hexadecimal digits)", hash)
		}
		hash = strings.ToUpper(hash)
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		res, err := pollTx(ctx, func() (*sdk.TxResponse, error) { return findTx(clientCtx, hash) }, waitTxPoll)
		if err != nil {
			return fmt.Errorf("timed out waiting for transaction %s to be included in a block: %w", hash, err)
		}
		return clientCtx.PrintProto(res)
	}
	return cmd
}

// pollTx calls find until it answers or ctx ends, every interval; on ctx's end it returns
// find's last error.
func pollTx(ctx context.Context, find func() (*sdk.TxResponse, error), every time.Duration) (*sdk.TxResponse, error) {
	for {
		res, err := find()
		if err == nil {
			return res, nil
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(every):
		}
	}
}

// findTx is the committed transaction with this hash, carried by a block or named by one.
func findTx(clientCtx client.Context, hash string) (*sdk.TxResponse, error) {
	res, err := authtx.QueryTx(clientCtx, hash)
	if err == nil {
		return res, nil
	}
	found, serr := authtx.QueryTxsByEvents(clientCtx, 1, 1, txclient.OrderedQuery(hash), "")
	if serr != nil || found == nil || len(found.Txs) == 0 {
		return nil, err
	}
	return found.Txs[0], nil
}

// hashFromTxOutput is the txhash a `tx` command printed (JSON or YAML), read from r: the
// SDK's wait-tx takes its input piped too.
func hashFromTxOutput(r io.Reader) (string, error) {
	in, err := io.ReadAll(r)
	if err != nil {
		return "", err
	}
	var res struct {
		TxHash string `json:"txhash"`
	}
	if json.Unmarshal(in, &res) == nil && res.TxHash != "" {
		return res.TxHash, nil
	}
	for _, line := range strings.Split(string(in), "\n") {
		if h, ok := strings.CutPrefix(line, "txhash:"); ok {
			return strings.TrimSpace(h), nil
		}
	}
	return "", errors.New("no txhash in the input: give the hash, or pipe a tx command's output")
}
