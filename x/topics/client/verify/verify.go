// Package verify reads x/topics state from a single node without trusting it: every topic,
// partition (high watermark, log start offset), record batch and committed offset comes with a
// Merkle proof against the app hash of a block header, and that header is checked by CometBFT's
// light client from a trust anchor (a height and hash the caller trusts), so it is signed by
// more than two thirds of the validators' power. Any answer that does not verify fails the
// whole read with an *Error naming what did not verify.
package verify

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	dbm "github.com/cometbft/cometbft-db"
	"github.com/cometbft/cometbft/crypto/merkle"
	cmtlog "github.com/cometbft/cometbft/libs/log"
	"github.com/cometbft/cometbft/light"
	"github.com/cometbft/cometbft/light/provider"
	lighthttp "github.com/cometbft/cometbft/light/provider/http"
	lightdb "github.com/cometbft/cometbft/light/store/db"
	cmtcrypto "github.com/cometbft/cometbft/proto/tendermint/crypto"
	rpcclient "github.com/cometbft/cometbft/rpc/client"
	rpchttp "github.com/cometbft/cometbft/rpc/client/http"
	cmttypes "github.com/cometbft/cometbft/types"
	ics23 "github.com/cosmos/ics23/go"

	"cosmossdk.io/store/rootmulti"

	"github.com/bftlog/bftlog/x/topics/types"
)

// ErrNotVerified is what every verification failure matches with errors.Is (registered
// x/topics error, code 32).
var ErrNotVerified = types.ErrNotVerified

// Error names the piece of a read that did not verify, and at which height.
type Error struct {
	What   string
	Height int64
	Err    error
}

func (e *Error) Error() string {
	// Causes from the proof library quote raw store keys; keep the message printable.
	cause := strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return '.'
	}, fmt.Sprint(e.Err))
	return fmt.Sprintf("read not verified: %s at height %d: %s", e.What, e.Height, cause)
}

// Unwrap gives both the registered error (for its code) and the cause.
func (e *Error) Unwrap() []error { return []error{ErrNotVerified, e.Err} }

// Config says which node to read from and what to trust.
type Config struct {
	ChainID string
	// Node is the RPC address (tcp:// or http://) of the node that answers reads; it is also the
	// light client's primary source of headers.
	Node string
	// Witnesses are more RPC addresses the light client cross-checks headers with (fork
	// detection). Empty means Node alone: headers are still checked for validator signatures.
	Witnesses []string
	// TrustHeight and TrustHash are the anchor: a block the caller obtained from a source it
	// trusts (its own node, a colleague, the chain's published checkpoints).
	TrustHeight int64
	TrustHash   []byte
	// TrustPeriod bounds how old the anchor may be (default 168h); keep it below the unbonding
	// time.
	TrustPeriod time.Duration
	// MaxStaleness bounds how old, by the local clock, the newest header may be when a read
	// asks for the latest state (height 0; default DefaultMaxStaleness; negative: unbounded).
	// The node names the latest height, so without it a node could pin a reader to an old,
	// authentic state and hide everything appended since.
	MaxStaleness time.Duration
}

// DefaultMaxStaleness is generous against block times of a second or less (blocks come even
// when idle) while catching a node that hides new blocks for longer.
const DefaultMaxStaleness = time.Minute

// Client reads proven x/topics state.
type Client struct {
	rpc          *rpchttp.HTTP
	lc           *light.Client
	prt          *merkle.ProofRuntime
	maxStaleness time.Duration
}

// New connects to cfg.Node and initialises the light client at the trust anchor.
func New(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.TrustHeight <= 0 || len(cfg.TrustHash) == 0 {
		return nil, fmt.Errorf("verified reads need a trust anchor: a block height and its hash from a source you trust (--trust-height, --trust-hash)")
	}
	if cfg.TrustPeriod == 0 {
		cfg.TrustPeriod = 168 * time.Hour
	}
	if cfg.MaxStaleness == 0 {
		cfg.MaxStaleness = DefaultMaxStaleness
	}
	rpc, err := rpchttp.New(cfg.Node, "/websocket")
	if err != nil {
		return nil, err
	}
	primary, err := lighthttp.New(cfg.ChainID, cfg.Node)
	if err != nil {
		return nil, err
	}
	addrs := cfg.Witnesses
	if len(addrs) == 0 {
		addrs = []string{cfg.Node}
	}
	var witnesses []provider.Provider
	for _, a := range addrs {
		w, err := lighthttp.New(cfg.ChainID, a)
		if err != nil {
			return nil, err
		}
		witnesses = append(witnesses, w)
	}
	lc, err := light.NewClient(ctx, cfg.ChainID,
		light.TrustOptions{Period: cfg.TrustPeriod, Height: cfg.TrustHeight, Hash: cfg.TrustHash},
		primary, witnesses, lightdb.New(dbm.NewMemDB(), "bftlog"),
		light.Logger(cmtlog.NewNopLogger()), light.MaxRetryAttempts(3))
	if err != nil {
		return nil, &Error{What: "trust anchor", Height: cfg.TrustHeight, Err: err}
	}
	return &Client{rpc: rpc, lc: lc, prt: rootmulti.DefaultProofRuntime(), maxStaleness: cfg.MaxStaleness}, nil
}

// LatestHeight is the newest height whose state can be proven now: the state after block H is
// committed to by the app hash in header H+1, so it is the node's latest block minus one.
func (c *Client) LatestHeight(ctx context.Context) (int64, error) {
	st, err := c.rpc.Status(ctx)
	if err != nil {
		return 0, err
	}
	return st.SyncInfo.LatestBlockHeight - 1, nil
}

// header returns the verified header h+1, which holds the app hash of the state at height h.
func (c *Client) header(ctx context.Context, h int64) (*cmttypes.LightBlock, error) {
	lb, err := c.lc.VerifyLightBlockAtHeight(ctx, h+1, time.Now())
	if err != nil {
		return nil, &Error{What: fmt.Sprintf("header %d", h+1), Height: h, Err: err}
	}
	return lb, nil
}

// proven is one store key's proven answer: its value, or its absence with the next key after
// it in the store (the right neighbour, nil at the end of the store).
type proven struct {
	value              []byte
	exists             bool
	nextKey, nextValue []byte
}

// get reads key from the x/topics store at height h and verifies the answer against appHash.
func (c *Client) get(ctx context.Context, h int64, appHash, key []byte, what string) (proven, error) {
	fail := func(err error) (proven, error) { return proven{}, &Error{What: what, Height: h, Err: err} }
	res, err := c.rpc.ABCIQueryWithOptions(ctx, "/store/"+types.StoreKey+"/key", key, rpcclient.ABCIQueryOptions{Height: h, Prove: true})
	if err != nil {
		return fail(err)
	}
	r := res.Response
	if r.Code != 0 {
		return fail(fmt.Errorf("query failed: %s", r.Log))
	}
	if r.ProofOps == nil || len(r.ProofOps.Ops) == 0 {
		return fail(errors.New("the node sent no proof"))
	}
	cp, err := storeProof(r.ProofOps)
	if err != nil {
		return fail(err)
	}
	kp := merkle.KeyPath{}.AppendKey([]byte(types.StoreKey), merkle.KeyEncodingURL).AppendKey(key, merkle.KeyEncodingURL).String()
	switch {
	case cp.GetExist() != nil:
		if err := c.prt.VerifyValue(r.ProofOps, appHash, kp, r.Value); err != nil {
			return fail(fmt.Errorf("value does not match the app hash: %w", err))
		}
		return proven{value: r.Value, exists: true}, nil
	case cp.GetNonexist() != nil:
		if err := c.prt.VerifyAbsence(r.ProofOps, appHash, kp); err != nil {
			return fail(fmt.Errorf("absence does not match the app hash: %w", err))
		}
		out := proven{}
		// VerifyAbsence checked the right neighbour's leaf against the root, so its key and
		// value are as authentic as a proven value.
		if right := cp.GetNonexist().Right; right != nil {
			out.nextKey, out.nextValue = right.Key, right.Value
		}
		return out, nil
	default:
		return fail(errors.New("unknown proof type"))
	}
}

// storeProof is the IAVL (first) proof op of an x/topics store answer.
func storeProof(ops *cmtcrypto.ProofOps) (*ics23.CommitmentProof, error) {
	op := ops.Ops[0]
	if op.Type != "ics23:iavl" {
		return nil, fmt.Errorf("unexpected proof op %q", op.Type)
	}
	cp := &ics23.CommitmentProof{}
	if err := cp.Unmarshal(op.Data); err != nil {
		return nil, fmt.Errorf("malformed proof: %w", err)
	}
	return cp, nil
}

// at resolves height 0 to the latest provable height and fetches its verified app hash. The
// latest height comes from the node, unproven, so its header must also be recent.
func (c *Client) at(ctx context.Context, height int64) (int64, []byte, error) {
	latest := height == 0
	if latest {
		h, err := c.LatestHeight(ctx)
		if err != nil {
			return 0, nil, err
		}
		height = h
	}
	lb, err := c.header(ctx, height)
	if err != nil {
		return height, nil, err
	}
	if age := time.Since(lb.Time); latest && c.maxStaleness > 0 && age > c.maxStaleness {
		return height, nil, &Error{What: fmt.Sprintf("latest state (header %d)", height+1), Height: height,
			Err: fmt.Errorf("stale: the newest header the node offers is %s old (made %s), more than the allowed %s; the node may be hiding newer blocks",
				age.Round(100*time.Millisecond), lb.Time.UTC().Format(time.RFC3339), c.maxStaleness)}
	}
	return height, lb.AppHash, nil
}
