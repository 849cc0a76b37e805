package app

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	cmtcrypto "github.com/cometbft/cometbft/crypto"
	cmtjson "github.com/cometbft/cometbft/libs/json"
	"github.com/cometbft/cometbft/privval"
	cmtproto "github.com/cometbft/cometbft/proto/tendermint/types"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cast"

	"github.com/cosmos/cosmos-sdk/client/flags"
	cryptocodec "github.com/cosmos/cosmos-sdk/crypto/codec"
	servertypes "github.com/cosmos/cosmos-sdk/server/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
)

// Data-plane identity. Validators push transactions to each other and answer what they hold
// (push.go) over HTTP; who sent a request, and who answered one, is decided by a signature with
// a key the chain knows, never by a source address or a host name: any process on a
// validator's host, behind its NAT or on the path can use its address.
//
// The key is the validator's consensus key (priv_validator_key.json), whose public half and
// voting power the chain holds (x/staking's last validator set, which x/poa moves by
// governance). It signs only bytes that begin with dataPlaneDomain, which no CometBFT vote,
// proposal or heartbeat begins with, so a data-plane signature can never stand for a consensus
// message. A node without that file (a full node, a remote signer) is no validator here: its
// pushes are a client's, checked before they are held and counted against the client budget.
//
// A signed request carries three headers: the signer's consensus address, the time it signed
// (refused when more than dataPlaneSkew from the receiver's clock, which bounds a replay), and
// an ed25519 signature over dataPlaneDomain, the chain ID, the path, the time and a digest of
// the body. A push's digest covers each frame's SHA-256, which the receiver computes anyway to
// hold the transaction, so no record byte is hashed again for the signature. An answer is
// signed the same way over the request's digest and the answer, so the sender counts a "held"
// only from the validator whose key signed it, with that validator's voting power.
const (
	dataPlaneDomain    = "bftlog/data-plane/v1\x00"
	HeaderValidator    = "Bftlog-Validator"
	HeaderSignedAt     = "Bftlog-Signed-At"
	HeaderSignature    = "Bftlog-Signature"
	dataPlaneSkew      = 30 * time.Second
	answerPathSuffix   = "#answer"
	validatorKeyOption = "priv_validator_key_file"
)

// Data-plane errors: a request that names a validator but fails its check is refused whole.
var (
	errNotAValidator = errors.New("the signer is not in this chain's validator set")
	errBadSignature  = errors.New("the data-plane signature does not verify")
	errStaleRequest  = errors.New("the request was signed too long ago (or ahead of this node's clock)")
	errUnsigned      = errors.New("unsigned: the data-plane headers are missing")
	errReplayed      = errors.New("this signed request was seen before")
)

// dataPlaneValidator is one validator as the chain last committed it.
type dataPlaneValidator struct {
	pub   cmtcrypto.PubKey
	power int64
}

// dataPlaneKeys holds this node's signing key and the chain's validators' public keys and powers.
type dataPlaneKeys struct {
	self     cmtcrypto.PrivKey // nil: this node signs nothing (not a validator)
	selfAddr string            // hex consensus address

	mu      sync.RWMutex
	chainID string
	vals    map[string]dataPlaneValidator // by upper-case hex consensus address
	total   int64

	seenMu     sync.Mutex
	seen       map[string]map[seenKey]struct{} // signed pushes taken this generation, by signer (firstUse)
	seenBefore map[string]map[seenKey]struct{} // and the generation before
	seenSince  time.Time
}

func newDataPlaneKeys() *dataPlaneKeys {
	return &dataPlaneKeys{vals: map[string]dataPlaneValidator{}}
}

// loadValidatorKey reads the node's consensus key from priv_validator_key_file (config.toml),
// relative to the home. A node without one (no home, a full node's key that the chain does not
// know, a remote signer) simply signs as no validator.
func loadValidatorKey(appOpts servertypes.AppOptions) (cmtcrypto.PrivKey, error) {
	home := cast.ToString(appOpts.Get(flags.FlagHome))
	file := cast.ToString(appOpts.Get(validatorKeyOption))
	if home == "" {
		return nil, nil
	}
	if file == "" {
		file = filepath.Join("config", "priv_validator_key.json")
	}
	if !filepath.IsAbs(file) {
		file = filepath.Join(home, file)
	}
	bz, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var key privval.FilePVKey
	if err := cmtjson.Unmarshal(bz, &key); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return key.PrivKey, nil
}

// useKey makes this node sign with key.
func (k *dataPlaneKeys) useKey(key cmtcrypto.PrivKey) {
	k.self = key
	k.selfAddr = ""
	if key != nil {
		k.selfAddr = strings.ToUpper(hex.EncodeToString(key.PubKey().Address()))
	}
}

// refreshDataPlaneKeys reads the validator set from the latest committed state (after each Commit).
func (app *App) refreshDataPlaneKeys() {
	ctx := app.NewUncachedContext(false, app.checkStateHeader())
	vals, err := app.StakingKeeper.GetLastValidators(ctx)
	if err != nil {
		app.Logger().Error("data plane: reading the validator set", "err", err)
		return
	}
	reduction := app.StakingKeeper.PowerReduction(ctx)
	set := make(map[string]dataPlaneValidator, len(vals))
	var total int64
	var endpoints []string
	for _, v := range vals {
		pk, err := v.ConsPubKey()
		if err != nil {
			continue
		}
		cpk, err := cryptocodec.ToCmtPubKeyInterface(pk)
		if err != nil {
			continue
		}
		power := v.ConsensusPower(reduction)
		if power <= 0 {
			continue
		}
		addr := strings.ToUpper(hex.EncodeToString(cpk.Address()))
		set[addr] = dataPlaneValidator{pub: cpk, power: power}
		total += power
		if app.peersFromChain && addr != app.pool.keys.selfAddress() {
			if ep := app.validatorEndpoint(ctx, v.OperatorAddress); ep != "" {
				endpoints = append(endpoints, ep)
			}
		}
	}
	if app.peersFromChain {
		// Sorted: GetLastValidators' order follows power, which must not churn the queues.
		slices.Sort(endpoints)
		endpoints = slices.Compact(endpoints)
		if len(endpoints) == 0 {
			app.pool.setPeers(app.fallbackPeers)
		} else {
			app.pool.setPeers(endpoints)
		}
		app.push.setPeers(endpoints)
	}
	k := app.pool.keys
	k.mu.Lock()
	k.chainID, k.vals, k.total = app.ChainID(), set, total
	k.mu.Unlock()
}

// checkStateHeader is a header for reading the latest committed state.
func (app *App) checkStateHeader() (h cmtproto.Header) {
	h.Height = app.LastBlockHeight()
	h.ChainID = app.ChainID()
	return h
}

// selfAddress is this node's consensus address, "" without a key.
func (k *dataPlaneKeys) selfAddress() string { return k.selfAddr }

// powers are this node's voting power and the set's total (0, 0 before the first commit).
func (k *dataPlaneKeys) powers() (own, total int64) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.vals[k.selfAddr].power, k.total
}

// signBytes is what a data-plane signature covers.
func (k *dataPlaneKeys) signBytes(path string, at int64, digest [32]byte) []byte {
	k.mu.RLock()
	chainID := k.chainID
	k.mu.RUnlock()
	b := make([]byte, 0, len(dataPlaneDomain)+len(chainID)+len(path)+2+8+32)
	b = append(b, dataPlaneDomain...)
	b = append(b, chainID...)
	b = append(b, 0)
	b = append(b, path...)
	b = append(b, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(at))
	return append(b, digest[:]...)
}

// sign sets the data-plane headers on h for a message to path with this digest; false when
// this node has no key or its key is no validator's (a full node's pushes are a client's).
func (k *dataPlaneKeys) sign(h http.Header, path string, digest [32]byte) bool {
	if k.self == nil {
		return false
	}
	k.mu.RLock()
	_, validator := k.vals[k.selfAddr]
	k.mu.RUnlock()
	if !validator {
		return false
	}
	at := time.Now().UnixMilli()
	sig, err := k.self.Sign(k.signBytes(path, at, digest))
	if err != nil {
		return false
	}
	h.Set(HeaderValidator, k.selfAddr)
	h.Set(HeaderSignedAt, strconv.FormatInt(at, 10))
	h.Set(HeaderSignature, base64.StdEncoding.EncodeToString(sig))
	return true
}

// signed tells whether h carries data-plane headers at all.
func signed(h http.Header) bool { return h.Get(HeaderValidator) != "" }

// known checks, before a body is read, that h names a validator of the chain and a time
// within dataPlaneSkew; the signature is checked once the digest is known (verify).
func (k *dataPlaneKeys) known(h http.Header) error {
	_, _, _, err := k.signer(h)
	return err
}

// signer is the validator h names, its entry in the set and the time it signed, checked
// against dataPlaneSkew: what known and verify both check before the signature.
func (k *dataPlaneKeys) signer(h http.Header) (addr string, val dataPlaneValidator, at int64, err error) {
	addr = strings.ToUpper(h.Get(HeaderValidator))
	if addr == "" {
		return "", val, 0, errUnsigned
	}
	k.mu.RLock()
	val, ok := k.vals[addr]
	k.mu.RUnlock()
	if !ok {
		return addr, val, 0, errNotAValidator
	}
	at, err = strconv.ParseInt(h.Get(HeaderSignedAt), 10, 64)
	if skew := time.Since(time.UnixMilli(at)); err != nil || skew > dataPlaneSkew || skew < -dataPlaneSkew {
		return addr, val, 0, errStaleRequest
	}
	return addr, val, at, nil
}

// firstUse refuses a signed push seen before (same signer, time and digest): a host that saw a
// validator's push cannot replay it to charge that validator's budget again. A replay to
// another node finds the transactions held already, which charges nothing (push.go). Requests
// are remembered by signer in two generations of 2×dataPlaneSkew each, so a request is
// remembered for as long as its time is accepted; each signer has maxSeenPerSigner entries in
// a generation, so one validator's flood of requests costs only its own pushes (403) and a
// bounded memory.
func (k *dataPlaneKeys) firstUse(h http.Header, digest [32]byte) error {
	signer := strings.ToUpper(h.Get(HeaderValidator))
	key := seenKey{at: h.Get(HeaderSignedAt), digest: digest}
	now := time.Now()
	k.seenMu.Lock()
	defer k.seenMu.Unlock()
	if k.seen == nil || now.Sub(k.seenSince) > 2*dataPlaneSkew {
		k.seenBefore, k.seen, k.seenSince = k.seen, map[string]map[seenKey]struct{}{}, now
	}
	if _, ok := k.seenBefore[signer][key]; ok {
		return errReplayed
	}
	mine := k.seen[signer]
	if _, ok := mine[key]; ok {
		return errReplayed
	}
	if len(mine) >= maxSeenPerSigner {
		return errReplayed // more requests in a minute than any honest validator sends
	}
	if mine == nil {
		mine = map[seenKey]struct{}{}
		k.seen[signer] = mine
	}
	mine[key] = struct{}{}
	return nil
}

type seenKey struct {
	at     string
	digest [32]byte
}

// maxSeenPerSigner bounds one validator's requests remembered in a generation (a minute, about
// 25 MB at most): an honest sender has one push request in flight per peer, so its rate is
// bounded by the round trip, at most ~3,000 a second on loopback, 180,000 a minute.
const maxSeenPerSigner = 1 << 18

// verify checks h's signature for a message to path with this digest and returns the signer,
// a validator of the chain, and its power.
func (k *dataPlaneKeys) verify(h http.Header, path string, digest [32]byte) (addr string, power int64, err error) {
	addr, val, at, err := k.signer(h)
	if err != nil {
		return addr, 0, err
	}
	sig, err := base64.StdEncoding.DecodeString(h.Get(HeaderSignature))
	if err != nil || !val.pub.VerifySignature(k.signBytes(path, at, digest), sig) {
		return addr, 0, errBadSignature
	}
	return addr, val.power, nil
}

// framesDigest is the digest a push's signature covers: its frames' SHA-256s in order.
func framesDigest(hashes [][32]byte) [32]byte {
	h := sha256.New()
	for _, x := range hashes {
		h.Write(x[:])
	}
	return [32]byte(h.Sum(nil))
}

// answerDigest is the digest an answer's signature covers: the request's and the answer.
func answerDigest(request [32]byte, answer []byte) [32]byte {
	h := sha256.New()
	h.Write(request[:])
	h.Write(answer)
	return [32]byte(h.Sum(nil))
}

// dataPlaneRefusals counts what this node refused or dropped of each sender's pushes, by
// reason; a sender is a validator's consensus address or "client" (unsigned). Outside consensus.
var dataPlaneRefusals = registerCounterVec(prometheus.CounterOpts{
	Namespace: "bftlog", Subsystem: "data_plane", Name: "refused_total",
	Help: "Transactions or requests of a data-plane sender that this node refused or dropped, by reason.",
}, []string{"sender", "reason"})

// dataPlaneFetchFailures counts the fetches of a named transaction a peer failed to serve.
var dataPlaneFetchFailures = registerCounterVec(prometheus.CounterOpts{
	Namespace: "bftlog", Subsystem: "data_plane", Name: "fetch_failures_total",
	Help: "Requests for a named transaction a peer failed to answer with bytes of the right hash.",
}, []string{"peer"})

// registerCounterVec registers a counter once per process (several apps may share one).
func registerCounterVec(opts prometheus.CounterOpts, labels []string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(opts, labels)
	if err := prometheus.DefaultRegisterer.Register(c); err != nil {
		var already prometheus.AlreadyRegisteredError
		if errors.As(err, &already) {
			if existing, ok := already.ExistingCollector.(*prometheus.CounterVec); ok {
				return existing
			}
		}
	}
	return c
}

// validatorEndpoint is the data-plane endpoint the operator set on chain, "" if none.
func (app *App) validatorEndpoint(ctx sdk.Context, operator string) string {
	op, err := app.StakingKeeper.ValidatorAddressCodec().StringToBytes(operator)
	if err != nil {
		return ""
	}
	ep, err := app.PoaKeeper.Endpoint(ctx, op)
	if err != nil {
		app.Logger().Error("data plane: reading a validator's endpoint", "operator", operator, "err", err)
		return ""
	}
	return ep
}
