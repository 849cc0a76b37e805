package kafka

import (
	"context"
	"encoding/base64"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/bftlog/bftlog/x/topics/client/txclient"
)

// saslGateway is a gateway with one user, alice; nothing here signs, so her signer is empty.
func saslGateway(t *testing.T) *Server {
	t.Helper()
	s, err := Listen(Config{Addr: "127.0.0.1:0", Users: []User{{Name: "alice", Password: "alice-secret", Signer: &txclient.Signer{}}}})
	require.NoError(t, err)
	go func() { _ = s.Serve() }()
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func dial(t *testing.T, s *Server) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func saslHandshake(t *testing.T, c net.Conn, mechanism string) {
	t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = mechanism
	require.Zero(t, roundTrip(t, c, 1, hs).(*kmsg.SASLHandshakeResponse).ErrorCode)
}

func saslToken(t *testing.T, c net.Conn, corr int32, token []byte) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.SetVersion(1)
	req.SASLAuthBytes = token
	return roundTrip(t, c, corr, req).(*kmsg.SASLAuthenticateResponse)
}

// requireClosed fails unless the gateway has closed c: a read ends, and not by our deadline.
func requireClosed(t *testing.T, c net.Conn) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err := c.Read(make([]byte, 1))
	var netErr net.Error
	require.False(t, errors.As(err, &netErr) && netErr.Timeout(), "the connection is still open after 5 s")
	require.Error(t, err)
}

// scramTo runs a SCRAM exchange as user with password up to the server's answer to the final
// message, and returns the server-first message and that answer.
func scramTo(t *testing.T, s *Server, m sasl.Mechanism) (net.Conn, string, *kmsg.SASLAuthenticateResponse) {
	t.Helper()
	c := dial(t, s)
	saslHandshake(t, c, m.Name())
	session, first, err := m.Authenticate(context.Background(), s.Addr())
	require.NoError(t, err)
	resp := saslToken(t, c, 2, first)
	require.Zero(t, resp.ErrorCode, "client-first refused: %v", resp.ErrorMessage)
	serverFirst := string(resp.SASLAuthBytes)
	_, final, err := session.Challenge(resp.SASLAuthBytes)
	require.NoError(t, err)
	return c, serverFirst, saslToken(t, c, 3, final)
}

// scramShape is what a server-first message shows of a user: its attribute names, the salt's
// size and the iteration count (the nonce is fresh each time).
func scramShape(t *testing.T, serverFirst string) (attrs []string, salt []byte, iterations string) {
	t.Helper()
	for _, kv := range strings.Split(serverFirst, ",") {
		attrs = append(attrs, kv[:2])
		switch kv[:2] {
		case "s=":
			var err error
			salt, err = base64.StdEncoding.DecodeString(kv[2:])
			require.NoError(t, err)
		case "i=":
			iterations = kv[2:]
		}
	}
	return attrs, salt, iterations
}

// As a Kafka broker does, the gateway closes a connection whose SASL authentication failed
// (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), so a client cannot keep guessing on it; a
// successful authentication keeps it open.
func TestAttackFailedSASLAuthenticationClosesTheConnection(t *testing.T) {
	s := saslGateway(t)

	c := dial(t, s)
	saslHandshake(t, c, mechPlain)
	resp := saslToken(t, c, 2, []byte("\x00alice\x00guess"))
	require.Equal(t, kerr.SaslAuthenticationFailed.Code, resp.ErrorCode)
	requireClosed(t, c)

	for _, m := range []sasl.Mechanism{
		scram.Auth{User: "alice", Pass: "guess"}.AsSha256Mechanism(),
		scram.Auth{User: "alice", Pass: "guess"}.AsSha512Mechanism(),
	} {
		c, _, resp := scramTo(t, s, m)
		require.Equal(t, kerr.SaslAuthenticationFailed.Code, resp.ErrorCode, m.Name())
		requireClosed(t, c)
	}

	// The right password: authenticated, and the connection serves requests.
	c, _, resp = scramTo(t, s, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())
	require.Zero(t, resp.ErrorCode)
	require.Zero(t, roundTrip(t, c, 4, kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse).ErrorCode)
	t.Logf("failed PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 authentications: SASL_AUTHENTICATION_FAILED, then the connection closed")
}

// SCRAM does not tell which user names exist: an unknown user gets a server-first message of
// the same shape as a known one (a salt derived from its name and a server secret, the same
// each time, as a real user's is, and the same iteration count) and fails only at the final
// message, with the same error as a wrong password.
func TestAttackSCRAMDoesNotTellWhichUsersExist(t *testing.T) {
	s := saslGateway(t)
	for _, mech := range []string{mechScram256, mechScram512} {
		as := func(user string) sasl.Mechanism {
			if mech == mechScram512 {
				return scram.Auth{User: user, Pass: "guess"}.AsSha512Mechanism()
			}
			return scram.Auth{User: user, Pass: "guess"}.AsSha256Mechanism()
		}
		cKnown, firstKnown, known := scramTo(t, s, as("alice"))
		cUnknown, firstUnknown, unknown := scramTo(t, s, as("mallory"))
		_, firstUnknownAgain, _ := scramTo(t, s, as("mallory"))
		_, firstKnownAgain, _ := scramTo(t, s, as("alice"))

		attrsKnown, saltKnown, itersKnown := scramShape(t, firstKnown)
		attrsUnknown, saltUnknown, itersUnknown := scramShape(t, firstUnknown)
		require.Equal(t, attrsKnown, attrsUnknown, mech)
		require.Len(t, saltUnknown, len(saltKnown), mech)
		require.Equal(t, itersKnown, itersUnknown, mech)
		_, saltKnownAgain, _ := scramShape(t, firstKnownAgain)
		_, saltUnknownAgain, _ := scramShape(t, firstUnknownAgain)
		require.Equal(t, saltKnown, saltKnownAgain, "a user's salt stays: %s", mech)
		require.Equal(t, saltUnknown, saltUnknownAgain, "so must an unknown user's: %s", mech)
		require.NotEqual(t, saltKnown, saltUnknown, mech)

		require.Equal(t, kerr.SaslAuthenticationFailed.Code, known.ErrorCode, mech)
		require.Equal(t, known.ErrorCode, unknown.ErrorCode, mech)
		require.Equal(t, known.ErrorMessage, unknown.ErrorMessage, mech)
		requireClosed(t, cKnown)
		requireClosed(t, cUnknown)
		t.Logf("%s: known %q and unknown %q answered alike; both failed at the final message with %q", mech, firstKnown, firstUnknown, *unknown.ErrorMessage)
	}
}
