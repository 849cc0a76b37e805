package kafka

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// selfSigned is a certificate for 127.0.0.1 and the pool that trusts it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bftlog gateway"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

// With TLS configured the gateway speaks Kafka over TLS only: a client trusting its
// certificate gets answers, a plaintext client none.
func TestGatewayServesTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	s, err := Listen(Config{Addr: "127.0.0.1:0", TLS: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}})
	require.NoError(t, err)
	go func() { _ = s.Serve() }()
	defer s.Close()

	c, err := tls.Dial("tcp", s.Addr(), &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	require.NoError(t, err)
	defer c.Close()
	av := roundTrip(t, c, 1, kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
	require.Zero(t, av.ErrorCode)
	require.NotEmpty(t, av.ApiKeys)

	plain, err := net.Dial("tcp", s.Addr())
	require.NoError(t, err)
	defer plain.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	frame := req.AppendTo(nil)
	_, _ = plain.Write(append([]byte{0, 0, 0, byte(len(frame) + 10), 0, 18, 0, 0, 0, 0, 0, 1, 0, 0}, frame...))
	_ = plain.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 64)
	n, _ := plain.Read(buf)
	// A TLS server answers a plaintext Kafka frame with a TLS alert (or nothing), never with a
	// Kafka response to our correlation id.
	require.False(t, n >= 8 && buf[4] == 0 && buf[5] == 0 && buf[6] == 0 && buf[7] == 1, "a plaintext request was answered: % x", buf[:n])
}
