package dataplane

import (
	"crypto/sha256"
	"net/http"
	"slices"
	"time"

	"cosmossdk.io/log"

	"github.com/cosmos/cosmos-sdk/client"
	sdk "github.com/cosmos/cosmos-sdk/types"
)

// Plane is a node's data plane: its pool of admitted transactions (Pool, whose methods the app
// calls through it), the pushes to its peers and their answers, the keys that sign and check
// them, and the handlers and listener that serve its peers.
type Plane struct {
	*Pool
	push *Pusher
	keys *Keys
	cfg  Config
}

// Host is what the plane needs of the app that runs it.
type Host interface {
	// StageTx is what goes to CometBFT's mempool for bz of this hash, which a validator
	// (sender) pushed: a stub when the mempool holds stubs, staged in the pool (Pool.Stage),
	// else bz itself (staged false). created says this call staged it; full that the sender's
	// budget is spent (its frame is answered '0').
	StageTx(bz []byte, hash [32]byte, sender string) (tx []byte, staged, created, full bool)
	// ParseStub is the hash of the transaction a stub stands for, if tx is a stub.
	ParseStub(tx []byte) (hash [32]byte, ok bool)
}

// Faults are the acts of a faulty validator the e2e harness builds (app/byzantine.go, build tag
// byzantine); a release passes none.
type Faults interface {
	// Withholds: answer every push '1' and hold nothing, serve no fetch.
	Withholds() bool
	// PushTo is how many of the node's peers (the first ones) it pushes a transaction to, and
	// whether it then claims that more than two thirds hold it.
	PushTo(peers int) (n int, claimHeld bool)
}

// withholds asks f, nil for a node that follows the protocol.
func withholds(f Faults) bool { return f != nil && f.Withholds() }

// New is the data plane cfg describes: the pool (its height files under cfg.Dir read back), a
// sender for each push peer, and the node's consensus key. It knows no validator until
// SetValidators. faults is nil but in the e2e harness's faulty validator.
func New(cfg Config, host Host, faults Faults, logger log.Logger) (*Plane, error) {
	pool, err := newPool(cfg.Dir, cfg.fetchPeers(), cfg.KeepHeights, cfg.KeepBytes, logger)
	if err != nil {
		return nil, err
	}
	push := newPusher(cfg.pushPeers(), pool, host, logger)
	// Requests are signed with the data-plane key its operator registered, or its consensus
	// key, and checked against the chain's validators (keys.go), handed over after each commit
	// (SetValidators).
	key, err := loadKey(cfg.KeyFile)
	if err != nil {
		return nil, err
	}
	pool.keys.UseKey(key)
	planeKey, err := LoadOrGenDataPlaneKey(cfg.DataPlaneKeyFile)
	if err != nil {
		return nil, err
	}
	pool.keys.UseDataPlaneKey(planeKey)
	pool.faults, push.faults = faults, faults
	// With stubs in the mempool (app/stub.go) the pool holds what CometBFT's limits bounded.
	if cfg.MaxTxsBytes > 0 {
		pool.clientBytes = min(cfg.MaxTxsBytes, maxPoolMemBytes/2)
	}
	return &Plane{Pool: pool, push: push, keys: pool.keys, cfg: cfg}, nil
}

// Keys are the node's signing key and the validators whose signatures it takes.
func (p *Plane) Keys() *Keys { return p.keys }

// SetValidators hands the plane the validator set of the latest committed state (after each
// commit): the keys whose signatures it takes, with their powers, and, when the peers come from
// the chain, their endpoints as the peers. A new endpoint gets a queue and a sender, one that
// left has its sender stopped; while none is set, fetches go to cfg.FallbackPeers and nothing
// is pushed.
func (p *Plane) SetValidators(chainID string, vals []Validator) {
	p.keys.SetValidators(chainID, vals)
	if p.cfg.peersFromChain() {
		var endpoints []string
		self := p.keys.SelfAddress()
		for _, v := range vals {
			if v.Endpoint != "" && v.Power > 0 && addressOf(v.PubKey) != self {
				endpoints = append(endpoints, v.Endpoint)
			}
		}
		// Sorted: the validator set's order follows power, which must not churn the queues.
		slices.Sort(endpoints)
		endpoints = slices.Compact(endpoints)
		if len(endpoints) == 0 {
			p.setPeers(p.cfg.FallbackPeers)
		} else {
			p.setPeers(endpoints)
		}
		p.push.setPeers(endpoints)
	}
}

// Admit keeps a transaction this node's CheckTx admitted (not on recheck), with its decoding:
// one a validator pushed is held for it (its sender known from the push that is giving it to
// CheckTx), one a client gave this node is also queued for every push peer.
func (p *Plane) Admit(bz []byte, lastHeight int64, decoded sdk.Tx) {
	sender := p.push.fromPeer(bz)
	hash, held := p.admit(bz, lastHeight, sender, decoded, true)
	if sender == "" {
		if !held {
			hash = sha256.Sum256(bz) // small: carried whole, hashed for the push's signature
		}
		p.push.admitted(bz, hash)
	}
}

// Push queues a transaction of this hash, which this node's client gave it and its CheckTx
// admitted, for every push peer.
func (p *Plane) Push(bz []byte, hash [32]byte) { p.push.admitted(bz, hash) }

// Pushes tells whether this node pushes its clients' transactions to any peer.
func (p *Plane) Pushes() bool { return len(p.push.peerQueues()) > 0 }

// PushPeers are the peers this node pushes to.
func (p *Plane) PushPeers() []string {
	var peers []string
	for _, q := range p.push.peerQueues() {
		peers = append(peers, q.peer)
	}
	return peers
}

// Refused logs and counts what a sender's push cost it (bftlog_data_plane_refused_total).
func (p *Plane) Refused(sender, reason string, n int) { p.push.refused(sender, reason, n) }

// PushHandler serves PushPath over clientCtx's CometBFT node (push.go).
func (p *Plane) PushHandler(clientCtx client.Context) http.Handler { return p.push.handler(clientCtx) }

// HeldHandler serves HeldPath (push.go).
func (p *Plane) HeldHandler() http.Handler { return http.HandlerFunc(p.push.heldHandler) }

// TxHandler serves PoolPath: the transactions this node holds, by hash (pool_fetch.go).
func (p *Plane) TxHandler() http.Handler { return http.HandlerFunc(p.serve) }

// SetMinNameAge replaces minNameAge, how long after a peer's push a proposer names what it
// pushed; tests set it past any run, so that timing cannot change what proposals name.
func (p *Plane) SetMinNameAge(d time.Duration) { p.minAge = d }

// LimitClientBytes makes the pool stage at most n bytes of clients' transactions, as
// mempool.max_txs_bytes = n would (app/stub.go); for tests.
func (p *Plane) LimitClientBytes(n int) { p.clientBytes = n }
