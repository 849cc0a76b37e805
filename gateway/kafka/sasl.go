package kafka

import (
	"bytes"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Client identity: with users configured, a Kafka client must authenticate (SASL/PLAIN or
// SASL/SCRAM-SHA-256/512, as Kafka brokers offer them) before any other request, and the
// gateway then signs that client's transactions with the user's own on-chain key. The chain
// sees — and topic allowlists and group policies judge — the client's account, not the
// gateway's. Passwords are the gateway's (a config file beside the keys it holds); SCRAM's
// salted credentials are derived from them at start.

// Mechanisms the gateway offers, in Kafka's names.
const (
	mechPlain       = "PLAIN"
	mechScram256    = "SCRAM-SHA-256"
	mechScram512    = "SCRAM-SHA-512"
	scramIterations = 4096
)

var mechanisms = []string{mechPlain, mechScram256, mechScram512}

// errAuthFailed is every failed authentication: which part was wrong is not told.
var errAuthFailed = errors.New("authentication failed: invalid username or password")

// scramCredential is a user's SCRAM verifier for one hash (RFC 5802: salt, iterations,
// StoredKey, ServerKey).
type scramCredential struct {
	salt      []byte
	storedKey []byte
	serverKey []byte
}

func newScramCredential(h func() hash.Hash, password string) (scramCredential, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return scramCredential{}, err
	}
	salted, err := pbkdf2.Key(h, password, salt, scramIterations, h().Size())
	if err != nil {
		return scramCredential{}, err
	}
	clientKey := hmacOf(h, salted, []byte("Client Key"))
	stored := h()
	stored.Write(clientKey)
	return scramCredential{salt: salt, storedKey: stored.Sum(nil), serverKey: hmacOf(h, salted, []byte("Server Key"))}, nil
}

func hmacOf(h func() hash.Hash, key, msg []byte) []byte {
	m := hmac.New(h, key)
	m.Write(msg)
	return m.Sum(nil)
}

func scramHash(mechanism string) func() hash.Hash {
	if mechanism == mechScram512 {
		return sha512.New
	}
	return sha256.New
}

// fakeScramCredential is what SCRAM shows of a user name nobody has: a salt and keys derived
// from the name and the gateway's secret, so the same name gets the same salt each time, as a
// real user's does (RFC 5802 section 9, as Kafka does), and the exchange fails only at the final
// message, as a wrong password does.
func fakeScramCredential(secret []byte, mechanism, name string) scramCredential {
	derive := func(what string, size int) []byte {
		return hmacOf(sha512.New, secret, []byte(mechanism+"\x00"+what+"\x00"+name))[:size]
	}
	size := scramHash(mechanism)().Size()
	return scramCredential{salt: derive("salt", 16), storedKey: derive("stored key", size), serverKey: derive("server key", size)}
}

// saslConn is one connection's authentication: the mechanism chosen by SaslHandshake, a SCRAM
// exchange in progress, the authenticated identity.
type saslConn struct {
	// secret derives the SCRAM credentials shown for unknown user names.
	secret    []byte
	mechanism string
	// raw: SaslHandshake v0 was used, so the tokens come as bare size-prefixed frames, not in
	// SaslAuthenticate requests (Kafka's pre-KIP-152 framing, which some clients still use).
	raw   bool
	scram *scramExchange
	id    *identity
	// failed: the authentication failed; the connection closes once the answer is sent.
	failed bool
}

// scramExchange is a SCRAM conversation after the client's first message.
type scramExchange struct {
	user            *identity // nil for a name nobody has
	cred            scramCredential
	h               func() hash.Hash
	nonce           string
	clientFirstBare string
	serverFirst     string
}

// step takes one client token and returns the server's answer; done once authenticated.
func (c *saslConn) step(users map[string]*identity, token []byte) (answer []byte, done bool, err error) {
	switch c.mechanism {
	case mechPlain:
		// [authzid] NUL authcid NUL passwd (RFC 4616)
		parts := bytes.Split(token, []byte{0})
		if len(parts) != 3 {
			return nil, false, errAuthFailed
		}
		u := users[string(parts[1])]
		password := ""
		if u != nil {
			password = u.password
		}
		// Compared whether or not the user exists, so the time taken does not tell.
		if subtle.ConstantTimeCompare([]byte(password), parts[2]) != 1 || u == nil ||
			(len(parts[0]) > 0 && string(parts[0]) != u.principal) {
			return nil, false, errAuthFailed
		}
		c.id = u
		return nil, true, nil
	case mechScram256, mechScram512:
		if c.scram == nil {
			return c.scramFirst(users, string(token))
		}
		return c.scramFinal(string(token))
	}
	return nil, false, fmt.Errorf("no SASL mechanism chosen")
}

func (c *saslConn) scramFirst(users map[string]*identity, msg string) ([]byte, bool, error) {
	// gs2-header "n,," (or "n,a=authzid,"), then n=user,r=nonce
	if !strings.HasPrefix(msg, "n,") && !strings.HasPrefix(msg, "y,") {
		return nil, false, errAuthFailed // channel binding is not offered
	}
	rest := msg[2:]
	i := strings.IndexByte(rest, ',')
	if i < 0 {
		return nil, false, errAuthFailed
	}
	bare := rest[i+1:]
	attrs := scramAttrs(bare)
	name := strings.NewReplacer("=2C", ",", "=3D", "=").Replace(attrs["n"])
	if attrs["r"] == "" {
		return nil, false, errAuthFailed
	}
	u := users[name]
	var cred scramCredential
	switch {
	case u == nil:
		cred = fakeScramCredential(c.secret, c.mechanism, name)
	case c.mechanism == mechScram512:
		cred = u.scram512
	default:
		cred = u.scram256
	}
	snonce := make([]byte, 18)
	if _, err := rand.Read(snonce); err != nil {
		return nil, false, err
	}
	nonce := attrs["r"] + base64.RawStdEncoding.EncodeToString(snonce)
	first := "r=" + nonce + ",s=" + base64.StdEncoding.EncodeToString(cred.salt) + ",i=" + strconv.Itoa(scramIterations)
	c.scram = &scramExchange{user: u, cred: cred, h: scramHash(c.mechanism), nonce: nonce, clientFirstBare: bare, serverFirst: first}
	return []byte(first), false, nil
}

func (c *saslConn) scramFinal(msg string) ([]byte, bool, error) {
	x := c.scram
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return nil, false, errAuthFailed
	}
	withoutProof := msg[:i]
	attrs := scramAttrs(msg)
	// As Kafka's broker checks it: the nonce ends with the server's (librdkafka 2.0 sends its
	// own nonce in front of the combined one; the proof covers the message as sent).
	if !strings.HasSuffix(attrs["r"], x.nonce) {
		return nil, false, errAuthFailed
	}
	proof, err := base64.StdEncoding.DecodeString(attrs["p"])
	if err != nil || len(proof) != len(x.cred.storedKey) {
		return nil, false, errAuthFailed
	}
	authMessage := []byte(x.clientFirstBare + "," + x.serverFirst + "," + withoutProof)
	signature := hmacOf(x.h, x.cred.storedKey, authMessage)
	clientKey := make([]byte, len(proof))
	for j := range proof {
		clientKey[j] = proof[j] ^ signature[j]
	}
	stored := x.h()
	stored.Write(clientKey)
	if subtle.ConstantTimeCompare(stored.Sum(nil), x.cred.storedKey) != 1 || x.user == nil {
		return nil, false, errAuthFailed
	}
	c.id = x.user
	return []byte("v=" + base64.StdEncoding.EncodeToString(hmacOf(x.h, x.cred.serverKey, authMessage))), true, nil
}

// scramAttrs splits "a=1,b=2" into its attributes (values may hold '=').
func scramAttrs(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if len(kv) >= 2 && kv[1] == '=' {
			out[kv[:1]] = kv[2:]
		}
	}
	return out
}

// saslHandshake chooses the connection's mechanism.
func (s *Server) saslHandshake(sc *saslConn, r *kmsg.SASLHandshakeRequest) kmsg.Response {
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.SetVersion(r.Version)
	resp.SupportedMechanisms = mechanisms
	switch {
	case len(s.users) == 0 || sc.id != nil:
		resp.ErrorCode = kerr.IllegalSaslState.Code
	case !slices.Contains(mechanisms, r.Mechanism):
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		sc.failed = true // as a broker does: the answer, then the connection closes
	default:
		sc.mechanism, sc.raw, sc.scram = r.Mechanism, r.Version == 0, nil
	}
	return resp
}

// saslAuthenticate takes one token of the exchange.
func (s *Server) saslAuthenticate(sc *saslConn, r *kmsg.SASLAuthenticateRequest) kmsg.Response {
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	resp.SetVersion(r.Version)
	if sc.mechanism == "" || sc.id != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.IllegalSaslState.Code, kmsg.StringPtr("SaslHandshake first")
		return resp
	}
	answer, _, err := sc.step(s.users, r.SASLAuthBytes)
	if err != nil {
		// As a broker does: the answer, then the connection closes, so a client cannot go on
		// guessing on it.
		resp.ErrorCode, resp.ErrorMessage = kerr.SaslAuthenticationFailed.Code, kmsg.StringPtr(err.Error())
		sc.mechanism, sc.scram, sc.failed = "", nil, true
		return resp
	}
	resp.SASLAuthBytes = answer
	return resp
}
