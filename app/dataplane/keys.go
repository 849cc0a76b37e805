package dataplane

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
	"strconv"
	"strings"
	"sync"
	"time"

	cmtcrypto "github.com/cometbft/cometbft/crypto"
	"github.com/cometbft/cometbft/crypto/ed25519"
	cmtjson "github.com/cometbft/cometbft/libs/json"
	"github.com/cometbft/cometbft/privval"
)

// Data-plane identity. Validators push transactions to each other and answer what they hold
// (push.go) over HTTP; who sent a request, and who answered one, is decided by a signature with
// a key the chain knows, never by a source address or a host name: any process on a
// validator's host, behind its NAT or on the path can use its address.
//
// The key is the one the validator's operator registered for the data plane beside its
// endpoint (x/poa MsgSetDataPlaneEndpoint: the node's config/data_plane_key.json, made at its
// first start, shown by `bftlogd data-plane-key`), or, while none is registered, the
// validator's consensus key (priv_validator_key.json). The chain holds both public halves and
// the voting power (x/staking's last validator set, which x/poa moves by governance). A
// validator whose consensus key is held by a remote signer registers a data-plane key and
// signs as a validator with it; the node finds which validator it is by that key. Signatures
// cover only bytes that begin with signDomain, which no CometBFT vote, proposal or heartbeat
// begins with, so a data-plane signature can never stand for a consensus message. A node that
// signs for no validator (a full node) pushes as a client: checked before its transactions are
// held and counted against the client budget.
//
// A signed request carries three headers: the signer's consensus address, the time it signed
// (refused when more than maxSkew from the receiver's clock, which bounds a replay), and
// an ed25519 signature over signDomain, the chain ID, the signer's address, the path, the time
// and a digest of the body. The address is signed because a registered key is only a public
// key: an operator could register another validator's, and must not thereby pass that
// validator's signatures off as its own. A push's digest covers each frame's SHA-256, which the receiver computes anyway to
// hold the transaction, so no record byte is hashed again for the signature. An answer is
// signed the same way over the request's digest and the answer, so the sender counts a "held"
// only from the validator whose key signed it, with that validator's voting power.
const (
	signDomain       = "bftlog/data-plane/v2\x00"
	HeaderValidator  = "Bftlog-Validator"
	HeaderSignedAt   = "Bftlog-Signed-At"
	HeaderSignature  = "Bftlog-Signature"
	maxSkew          = 30 * time.Second
	answerPathSuffix = "#answer"
)

// Data-plane errors: a request that names a validator but fails its check is refused whole.
var (
	errNotAValidator = errors.New("the signer is not in this chain's validator set")
	errBadSignature  = errors.New("the data-plane signature does not verify")
	errStaleRequest  = errors.New("the request was signed too long ago (or ahead of this node's clock)")
	errUnsigned      = errors.New("unsigned: the data-plane headers are missing")
	errReplayed      = errors.New("this signed request was seen before")
)

// Validator is one validator as the chain last committed it (Plane.SetValidators).
type Validator struct {
	PubKey cmtcrypto.PubKey
	Power  int64
	// Endpoint is where its operator says it serves the data plane (x/poa
	// MsgSetDataPlaneEndpoint), "" if none.
	Endpoint string
	// DataPlaneKey is the key its operator registered for the data plane (x/poa), which then
	// signs for it instead of PubKey; nil if none.
	DataPlaneKey cmtcrypto.PubKey
}

// verifier is the key v's data-plane signatures are checked against.
func (v Validator) verifier() cmtcrypto.PubKey {
	if v.DataPlaneKey != nil {
		return v.DataPlaneKey
	}
	return v.PubKey
}

// Keys holds this node's signing keys and the chain's validators' public keys and powers.
type Keys struct {
	self  cmtcrypto.PrivKey // consensus key; nil without one (a full node, a remote signer)
	plane cmtcrypto.PrivKey // the data-plane key (config/data_plane_key.json); nil: none

	mu       sync.RWMutex
	selfAddr string // hex consensus address of the validator this node signs for, "" if none
	chainID  string
	vals     map[string]Validator // by upper-case hex consensus address
	total    int64

	seenMu     sync.Mutex
	seen       map[string]map[seenKey]struct{} // signed pushes taken this generation, by signer (firstUse)
	seenBefore map[string]map[seenKey]struct{} // and the generation before
	seenSince  time.Time
}

// NewKeys holds no key and knows no validator until UseKey and SetValidators.
func NewKeys() *Keys {
	return &Keys{vals: map[string]Validator{}}
}

// loadKey reads a consensus key file (priv_validator_key.json, Config.KeyFile) as CometBFT
// writes it. A node without one (no home, a full node's key that the chain does not know, a
// remote signer) simply signs as no validator.
func loadKey(file string) (cmtcrypto.PrivKey, error) {
	if file == "" {
		return nil, nil
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

// dataPlaneKeyFile is the JSON of a data-plane key file, as CometBFT writes node_key.json.
type dataPlaneKeyFile struct {
	PrivKey cmtcrypto.PrivKey `json:"priv_key"`
}

// LoadOrGenDataPlaneKey reads the node's data-plane key from file, making one (ed25519, mode
// 0600) when there is none: written to a file of its own, synced, then linked into place, so a
// power cut leaves no torn key and two processes making it at once (the node's first start and
// `bftlogd data-plane-key`) end with the one that was linked first. "" gives a key of this
// process alone.
func LoadOrGenDataPlaneKey(file string) (cmtcrypto.PrivKey, error) {
	if file == "" {
		return ed25519.GenPrivKey(), nil
	}
	if key, err := readDataPlaneKey(file); !errors.Is(err, os.ErrNotExist) {
		return key, err
	}
	bz, err := cmtjson.Marshal(dataPlaneKeyFile{PrivKey: ed25519.GenPrivKey()})
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(file)+".*.tmp")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(bz)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o600)
	}
	if err != nil {
		return nil, err
	}
	if err := os.Link(tmp.Name(), file); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return readDataPlaneKey(file) // ours, or the one another process linked first
}

func readDataPlaneKey(file string) (cmtcrypto.PrivKey, error) {
	bz, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var kf dataPlaneKeyFile
	if err := cmtjson.Unmarshal(bz, &kf); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if _, ok := kf.PrivKey.(ed25519.PrivKey); !ok {
		return nil, fmt.Errorf("%s: not an ed25519 key", file)
	}
	return kf.PrivKey, nil
}

// UseKey makes this node sign with its consensus key, key, while its validator registers no
// data-plane key.
func (k *Keys) UseKey(key cmtcrypto.PrivKey) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.self = key
	k.selfAddr = ""
	if key != nil {
		k.selfAddr = addressOf(key.PubKey())
	}
}

// UseDataPlaneKey makes this node sign with key where its validator registered key's public
// half as its data-plane key; without a consensus key, that registration is how the node finds
// which validator it is.
func (k *Keys) UseDataPlaneKey(key cmtcrypto.PrivKey) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.plane = key
}

// DataPlanePubKey is the public half of this node's data-plane key, nil without one.
func (k *Keys) DataPlanePubKey() cmtcrypto.PubKey {
	k.mu.RLock()
	defer k.mu.RUnlock()
	if k.plane == nil {
		return nil
	}
	return k.plane.PubKey()
}

// addressOf is a consensus key's address as the data plane names it: upper-case hex.
func addressOf(pub cmtcrypto.PubKey) string {
	return strings.ToUpper(hex.EncodeToString(pub.Address()))
}

// SetValidators makes vals, those of positive power, the validators whose signatures this node
// takes, with their voting powers; chainID is in what every signature covers.
func (k *Keys) SetValidators(chainID string, vals []Validator) {
	set := make(map[string]Validator, len(vals))
	var total int64
	for _, v := range vals {
		if v.Power <= 0 {
			continue
		}
		set[addressOf(v.PubKey)] = v
		total += v.Power
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.chainID, k.vals, k.total = chainID, set, total
	k.selfAddr = ""
	if k.self != nil {
		if k.selfAddr = addressOf(k.self.PubKey()); set[k.selfAddr].Power > 0 {
			return
		}
	}
	// A node whose consensus key file is no validator's (a remote signer holds the key, and
	// the SDK's start wrote a stand-in) is the validator that registered its data-plane key,
	// if exactly one did (x/poa refuses a key another validator registered).
	if k.plane == nil {
		return
	}
	found, n := "", 0
	for addr, v := range set {
		if v.DataPlaneKey != nil && v.DataPlaneKey.Equals(k.plane.PubKey()) {
			found, n = addr, n+1
		}
	}
	if n == 1 {
		k.selfAddr = found
	}
}

// SelfAddress is the consensus address of the validator this node signs for, "" if none.
func (k *Keys) SelfAddress() string {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.selfAddr
}

// powers are this node's voting power and the set's total (0, 0 before the first commit).
func (k *Keys) powers() (own, total int64) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.vals[k.selfAddr].Power, k.total
}

// signBytes is what a data-plane signature by signer (upper-case hex address) covers.
func (k *Keys) signBytes(signer, path string, at int64, digest [32]byte) []byte {
	k.mu.RLock()
	chainID := k.chainID
	k.mu.RUnlock()
	b := make([]byte, 0, len(signDomain)+len(chainID)+len(signer)+len(path)+3+8+32)
	b = append(b, signDomain...)
	b = append(b, chainID...)
	b = append(b, 0)
	b = append(b, signer...)
	b = append(b, 0)
	b = append(b, path...)
	b = append(b, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(at))
	return append(b, digest[:]...)
}

// Sign sets the data-plane headers on h for a message to path with this digest; false when
// this node signs for no validator (a full node's pushes are a client's).
func (k *Keys) Sign(h http.Header, path string, digest [32]byte) bool {
	addr, key := k.signingKey()
	if key == nil {
		return false
	}
	at := time.Now().UnixMilli()
	sig, err := key.Sign(k.signBytes(addr, path, at, digest))
	if err != nil {
		return false
	}
	h.Set(HeaderValidator, addr)
	h.Set(HeaderSignedAt, strconv.FormatInt(at, 10))
	h.Set(HeaderSignature, base64.StdEncoding.EncodeToString(sig))
	return true
}

// signingKey is the validator this node signs for and the key the chain checks its signatures
// against: its registered data-plane key if it registered one (nil if this node's is another),
// else its consensus key.
func (k *Keys) signingKey() (string, cmtcrypto.PrivKey) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	me, ok := k.vals[k.selfAddr]
	switch {
	case !ok:
		return "", nil
	case me.DataPlaneKey != nil:
		if k.plane != nil && me.DataPlaneKey.Equals(k.plane.PubKey()) {
			return k.selfAddr, k.plane
		}
		return "", nil
	default:
		return k.selfAddr, k.self
	}
}

// signed tells whether h carries data-plane headers at all.
func signed(h http.Header) bool { return h.Get(HeaderValidator) != "" }

// known checks, before a body is read, that h names a validator of the chain and a time
// within maxSkew; the signature is checked once the digest is known (verify).
func (k *Keys) known(h http.Header) error {
	_, _, _, err := k.signer(h)
	return err
}

// signer is the validator h names, its entry in the set and the time it signed, checked
// against maxSkew: what known and verify both check before the signature.
func (k *Keys) signer(h http.Header) (addr string, val Validator, at int64, err error) {
	addr = h.Get(HeaderValidator)
	if addr == "" {
		return "", val, 0, errUnsigned
	}
	// Only the canonical spelling (upper-case hex, as Sign writes it): one validator has one
	// name, so it is counted once wherever names are compared (receipts, quorums, budgets).
	if addr != strings.ToUpper(addr) {
		return addr, val, 0, errNotAValidator
	}
	k.mu.RLock()
	val, ok := k.vals[addr]
	k.mu.RUnlock()
	if !ok {
		return addr, val, 0, errNotAValidator
	}
	at, err = strconv.ParseInt(h.Get(HeaderSignedAt), 10, 64)
	if skew := time.Since(time.UnixMilli(at)); err != nil || skew > maxSkew || skew < -maxSkew {
		return addr, val, 0, errStaleRequest
	}
	return addr, val, at, nil
}

// firstUse refuses a signed push seen before (same signer, time and digest): a host that saw a
// validator's push cannot replay it to charge that validator's budget again. A replay to
// another node finds the transactions held already, which charges nothing (push.go). Requests
// are remembered by signer in two generations of 2×maxSkew each, so a request is
// remembered for as long as its time is accepted; each signer has maxSeenPerSigner entries in
// a generation, so one validator's flood of requests costs only its own pushes (403) and a
// bounded memory.
func (k *Keys) firstUse(h http.Header, digest [32]byte) error {
	signer := strings.ToUpper(h.Get(HeaderValidator))
	key := seenKey{at: h.Get(HeaderSignedAt), digest: digest}
	now := time.Now()
	k.seenMu.Lock()
	defer k.seenMu.Unlock()
	if k.seen == nil || now.Sub(k.seenSince) > 2*maxSkew {
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
func (k *Keys) verify(h http.Header, path string, digest [32]byte) (addr string, power int64, err error) {
	addr, val, at, err := k.signer(h)
	if err != nil {
		return addr, 0, err
	}
	sig, err := base64.StdEncoding.DecodeString(h.Get(HeaderSignature))
	if err != nil || !val.verifier().VerifySignature(k.signBytes(addr, path, at, digest), sig) {
		return addr, 0, errBadSignature
	}
	return addr, val.Power, nil
}

// FramesDigest is the digest a push's signature covers: its frames' SHA-256s in order.
func FramesDigest(hashes [][32]byte) [32]byte {
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
