// Package transport measures the two ways a validator's data plane can authenticate its peers
// by the keys the chain knows (issue 39): each request signed (ed25519 over the SHA-256 of its
// frames' SHA-256s, which the receiver computes anyway to hold them), as the data plane does,
// or mutual TLS whose certificates carry those keys. Both run here side by side in one process
// on loopback, so the ratio between them is the figure, not the absolute rates.
//
//	BFTLOG_TRANSPORT_SECONDS=3 go test -run TestTransport -v ./bench/transport/   (make bench-transport)
package transport

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// frame is the size of one transaction; a request carries requestBytes of them.
type shape struct {
	name         string
	frame        int
	requestBytes int
}

var shapes = []shape{
	{"1 MiB requests of 4 KiB transactions", 4 << 10, 1 << 20},
	{"64 KiB requests of 4 KiB transactions", 4 << 10, 64 << 10},
	{"8 KiB requests of 1 KiB transactions", 1 << 10, 8 << 10},
}

// TestTransport prints, for each request shape, what each transport carries in
// BFTLOG_TRANSPORT_SECONDS (0.3 s unset) with 4 senders, and the CPU both ends spent per MB. Over both, the answer is a signed
// receipt (the sender shows it to others, so TLS cannot stand in for that signature). It fails only if a transport breaks (an
// answer that is not 200 or a signature that does not verify), never on a rate.
func TestTransport(t *testing.T) {
	if testing.Short() {
		t.Skip("measures for several seconds")
	}
	// make test checks that both work (a moment each); make bench-transport measures.
	dur := 300 * time.Millisecond
	if v := os.Getenv("BFTLOG_TRANSPORT_SECONDS"); v != "" {
		d, err := time.ParseDuration(v + "s")
		if err != nil {
			t.Fatal(err)
		}
		dur = d
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("| request shape | signed requests MB/s | mutual TLS MB/s | TLS / signed | CPU ms per MB signed | CPU ms per MB TLS |")
	t.Logf("| --- | --- | --- | --- | --- | --- |")
	for _, sh := range shapes {
		body := requestBody(sh)
		signed := run(t, dur, sh, newSigned(t, pub, priv), body)
		mtls := run(t, dur, sh, newMutualTLS(t, pub, priv), body)
		t.Logf("| %s | %.0f | %.0f | %.2f | %.2f | %.2f |", sh.name, signed.mbps, mtls.mbps, mtls.mbps/signed.mbps, signed.cpuPerMB, mtls.cpuPerMB)
	}
}

// requestBody is a push request's body: frames of a big-endian uint32 length and bytes.
func requestBody(sh shape) []byte {
	var b bytes.Buffer
	frame := make([]byte, sh.frame)
	for b.Len()+4+sh.frame <= sh.requestBytes {
		_, _ = rand.Read(frame)
		b.Write([]byte{byte(sh.frame >> 24), byte(sh.frame >> 16), byte(sh.frame >> 8), byte(sh.frame)})
		b.Write(frame)
	}
	return b.Bytes()
}

// digest is what the receiver computes to hold the frames anyway: each frame's SHA-256, and the
// SHA-256 of those, which a signed request's signature covers.
func digest(body []byte) ([32]byte, error) {
	h := sha256.New()
	for len(body) > 0 {
		if len(body) < 4 {
			return [32]byte{}, errors.New("torn frame")
		}
		n := int(body[0])<<24 | int(body[1])<<16 | int(body[2])<<8 | int(body[3])
		if len(body) < 4+n {
			return [32]byte{}, errors.New("torn frame")
		}
		sum := sha256.Sum256(body[4 : 4+n])
		h.Write(sum[:])
		body = body[4+n:]
	}
	return [32]byte(h.Sum(nil)), nil
}

// transport is one way to send a push and have it authenticated.
type transport struct {
	client *http.Client
	url    string
	// prepare sets what a request needs besides its body (a signature).
	prepare func(req *http.Request, body []byte)
	close   func()
}

type result struct {
	mbps, cpuPerMB float64
}

func run(t *testing.T, dur time.Duration, sh shape, tr transport, body []byte) result {
	defer tr.close()
	var sent atomic.Int64
	var failed atomic.Value
	deadline := time.Now().Add(dur)
	cpu0 := cpuTime()
	start := time.Now()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				req, err := http.NewRequest(http.MethodPost, tr.url, bytes.NewReader(body))
				if err != nil {
					failed.Store(err)
					return
				}
				tr.prepare(req, body)
				res, err := tr.client.Do(req)
				if err != nil {
					failed.Store(err)
					return
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					failed.Store(fmt.Errorf("%s: answer %d", sh.name, res.StatusCode))
					return
				}
				sent.Add(int64(len(body)))
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}
	el := time.Since(start).Seconds()
	mb := float64(sent.Load()) / 1e6
	return result{mbps: mb / el, cpuPerMB: (cpuTime() - cpu0).Seconds() * 1000 / mb}
}

// cpuTime is the CPU this process (both ends) has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// newSigned is the data plane as it is: plain HTTP on a listener, each request signed over
// its frames' digest and verified against the sender's key before it is held.
func newSigned(t *testing.T, pub ed25519.PublicKey, priv ed25519.PrivateKey) transport {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		d, err := digest(body)
		sig, _ := base64.StdEncoding.DecodeString(r.Header.Get("X-Signature"))
		if err != nil || !ed25519.Verify(pub, d[:], sig) {
			http.Error(w, "bad signature", http.StatusForbidden)
			return
		}
		receipt(w, priv, d)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler}
	go func() { _ = srv.Serve(ln) }()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	return transport{
		client: client, url: "http://" + ln.Addr().String() + "/push",
		prepare: func(req *http.Request, body []byte) {
			// The sender hashes its frames too: it must name what it signs.
			d, _ := digest(body)
			req.Header.Set("X-Signature", base64.StdEncoding.EncodeToString(ed25519.Sign(priv, d[:])))
		},
		close: func() { _ = srv.Close(); client.CloseIdleConnections() },
	}
}

// newMutualTLS authenticates the connection instead: TLS 1.3, both ends presenting a
// certificate for a registered ed25519 key (checked against the set, as a validator's would
// be), connections reused; the receiver still hashes the frames to hold them.
func newMutualTLS(t *testing.T, pub ed25519.PublicKey, priv ed25519.PrivateKey) transport {
	cert := selfSigned(t, pub, priv)
	known := func(rawCerts [][]byte, _ [][]*x509.Certificate) error {
		if len(rawCerts) == 0 {
			return errors.New("no certificate")
		}
		c, err := x509.ParseCertificate(rawCerts[0])
		if err != nil {
			return err
		}
		if k, ok := c.PublicKey.(ed25519.PublicKey); !ok || !k.Equal(pub) {
			return errors.New("not a registered key")
		}
		return nil
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		d, err := digest(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		receipt(w, priv, d)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler, TLSConfig: &tls.Config{
		MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert},
		ClientAuth: tls.RequireAnyClientCert, VerifyPeerCertificate: known,
	}}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8, TLSClientConfig: &tls.Config{
		MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert},
		InsecureSkipVerify: true, VerifyPeerCertificate: known, // the key is checked, not a name
	}}}
	return transport{
		client: client, url: "https://" + ln.Addr().String() + "/push",
		prepare: func(*http.Request, []byte) {},
		close:   func() { _ = srv.Close(); client.CloseIdleConnections() },
	}
}

// receipt answers a push as the data plane does: a signed answer, which the sender shows third
// parties as proof that this validator holds the frames, so it is signed over either transport.
func receipt(w http.ResponseWriter, priv ed25519.PrivateKey, d [32]byte) {
	w.Header().Set("X-Signature", base64.StdEncoding.EncodeToString(ed25519.Sign(priv, append(d[:], 1))))
	_, _ = w.Write([]byte{1})
}

func selfSigned(t *testing.T, pub ed25519.PublicKey, priv ed25519.PrivateKey) tls.Certificate {
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, priv)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: priv}
}
