package txclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"
	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"
)

// A transaction through a Nodes list: handed to a node, waited for, handed over.

// sent is a transaction a node took: its bytes are kept so that another node can be given the
// very same transaction (same hash) if that node stops answering before it is committed.
type sent struct {
	hash string
	tx   []byte
	at   *endpoint // the node of a Nodes list that took it
	gas  uint64    // the gas limit it was signed with
	via  route     // the route it went by, which waits for it
}

// send is the Nodes list as a Signer's route: broadcast, remembering the node that took tx.
func (n *Nodes) send(tx []byte) (*sdk.TxResponse, sent, error) {
	res, at, err := n.broadcast(tx)
	if err != nil {
		return nil, sent{}, err
	}
	return res, sent{hash: res.TxHash, tx: tx, at: at}, nil
}

// broadcast hands tx to the first node that answers. A node that already holds it (in its
// mempool cache: a node that stopped answering had taken it and passed it on) counts as
// having taken it.
func (n *Nodes) broadcast(tx []byte) (*sdk.TxResponse, *endpoint, error) {
	var res *sdk.TxResponse
	var at *endpoint
	err := n.do(context.Background(), func(ctx context.Context, ep *endpoint) error {
		r, err := ep.t.Broadcast(ctx, tx)
		if err == nil {
			res, at = r, ep
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	if inMempoolCache(res) {
		res.Code, res.Codespace, res.RawLog = 0, "", ""
	}
	return res, at, nil
}

func inMempoolCache(res *sdk.TxResponse) bool {
	return res.Code != 0 && errors.Is(errorsmod.ABCIError(res.Codespace, res.Code, ""), sdkerrors.ErrTxInMempoolCache)
}

// await waits until the transaction s is committed and returns its result (a *TxError of
// stage Delivered if it failed in its block). It waits on the node that took it; when that
// node stops answering, or falls lagBlocks behind another, the next node that answers is asked
// for the transaction by hash and, if it does not know it, given the same bytes: the same
// hash, so the chain executes it at most once however many nodes hold it. A node that lost it
// (restarted: a mempool is not kept on disk) while the chain went on resendAfterBlocks is
// handed it again the same way.
func (n *Nodes) await(s sent) (*sdk.TxResponse, error) {
	deadline := time.Now().Add(commitTimeout)
	at, since, handOver := s.at, time.Now(), false
	var last error
	var startHeight int64
	for time.Now().Before(deadline) {
		if handOver {
			next, res, err := n.takeOver(s, last)
			switch {
			case res != nil || (err != nil && !errors.Is(err, ErrUnreachable)):
				return res, err
			case err != nil: // no node answers (all restarting): the transaction may still commit
				last = err
				time.Sleep(probeEvery)
				continue
			}
			at, since, handOver, startHeight = next, time.Now(), false, 0
		}
		var res *sdk.TxResponse
		err := at.watched(context.Background(), func(ctx context.Context, ep *endpoint) error {
			var err error
			res, err = ep.t.Result(ctx, s.hash, resultWait)
			return err
		})
		if err == nil {
			n.answered(at, last)
			return committed(s.hash, res)
		}
		if !nodeFailed(err) {
			if !errors.Is(err, ErrNotInBlock) {
				return nil, err
			}
			if time.Since(since) < stallAfter {
				continue
			}
			if !n.behind(at) {
				h, herr := at.heightOf()
				if startHeight == 0 || herr != nil {
					startHeight = h
				}
				handOver = herr == nil && h >= startHeight+resendAfterBlocks
				continue
			}
			err = errBehind
		}
		last = fmt.Errorf("node %s: %w", at.RPC, err)
		n.failed(at)
		handOver = true
	}
	if last == nil {
		last = ErrNotInBlock
	}
	return nil, fmt.Errorf("transaction %s %w after %s: %w", s.hash, ErrNotCommitted, commitTimeout, last)
}

// committed is a found result: a *TxError (stage Delivered) if the transaction failed in its
// block.
func committed(hash string, res *sdk.TxResponse) (*sdk.TxResponse, error) {
	if res.Code != 0 {
		return res, NewTxError(Delivered, hash, res.Height, res.Codespace, res.Code, res.RawLog)
	}
	return res, nil
}

// takeOver finds a node for the transaction s, best first (one just taken as down comes last):
// the first that answers is asked for its result (it may be committed already) and, when it
// has none, given the same bytes. It returns that node to wait on, or the result, or the
// refusal of the bytes.
func (n *Nodes) takeOver(s sent, cause error) (*endpoint, *sdk.TxResponse, error) {
	var last error
	for _, ep := range n.order() {
		var res, check *sdk.TxResponse
		err := ep.watched(context.Background(), func(ctx context.Context, ep *endpoint) error {
			var err error
			if res, err = ep.t.Result(ctx, s.hash, 0); !errors.Is(err, ErrNotInBlock) {
				return err
			}
			res = nil
			check, err = ep.t.Broadcast(ctx, s.tx)
			return err
		})
		if nodeFailed(err) {
			n.failed(ep)
			last = fmt.Errorf("node %s: %w", ep.RPC, err)
			continue
		}
		n.answered(ep, cause)
		switch {
		case err != nil:
			return nil, nil, err
		case res != nil:
			r, err := committed(s.hash, res)
			return nil, r, err
		case check.Code == 0 || inMempoolCache(check):
			return ep, nil, nil
		}
		// Refused now: perhaps because it was committed between the two questions.
		ctx, cancel := context.WithTimeout(context.Background(), probeAfter+probeTimeout)
		res, err = ep.t.Result(ctx, s.hash, 0)
		cancel()
		if err == nil {
			r, err := committed(s.hash, res)
			return nil, r, err
		}
		return nil, nil, NewTxError(Checked, s.hash, 0, check.Codespace, check.Code, check.RawLog)
	}
	return nil, nil, fmt.Errorf("%w: %w", ErrUnreachable, last)
}
