package dataplane

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/netutil"

	"cosmossdk.io/log"

	"github.com/cosmos/cosmos-sdk/client"
)

// The data plane's own listener (ordering.listen-address), apart from the public API server:
// the validators' pushes, held-words and fetches (push.go, pool.go) then never queue behind the
// API's clients for its connections, and have limits of their own. Each request is bounded in
// time (headers 5 s, body and answer 60 s, idle 90 s); connections in all by
// maxConns; each validator's requests by slotsPerSigner at once, decided by
// its signature (keys.go), never by its address; unsigned requests (clients' pushes,
// fetches, which the receiver checks by hash) share unsignedSlots, and one that finds
// them all taken is answered 503 at once rather than waiting. The API server keeps serving the
// same paths for nodes whose ordering.peers still name API servers.
const (
	maxConns        = 512
	slotsPerSigner  = 8
	unsignedSlots   = 32
	headerTimeout   = 5 * time.Second
	requestTimeout  = 60 * time.Second
	idleTimeout     = 90 * time.Second
	maxHeaderBytes  = 16 << 10
	unsignedSlotKey = ""
)

// signerSlots hands out request slots per signer.
type signerSlots struct {
	keys *Keys

	mu   sync.Mutex
	used map[string]int
}

// take claims a slot for the request's signer ("" unsigned, or a name that is no validator's,
// which counts as unsigned); false when its slots are all taken.
func (s *signerSlots) take(h http.Header) (string, bool) {
	key, limit := unsignedSlotKey, unsignedSlots
	if signed(h) && s.keys.known(h) == nil {
		key, limit = strings.ToUpper(h.Get(HeaderValidator)), slotsPerSigner
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used[key] >= limit {
		return key, false
	}
	s.used[key]++
	return key, true
}

func (s *signerSlots) give(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used[key]--; s.used[key] <= 0 {
		delete(s.used, key)
	}
}

// limit wraps h with the slots. A request naming a validator takes that validator's slots
// before its signature is checked (the handler checks it): a forger can only use up the slots
// of the validator it names while its requests last, each bounded in time, and is refused 403.
func (s *signerSlots) limit(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, ok := s.take(r.Header)
		if !ok {
			http.Error(w, "too many data-plane requests of this sender at once", http.StatusServiceUnavailable)
			return
		}
		defer s.give(key)
		h.ServeHTTP(w, r)
	})
}

// Listen starts the data plane's own listener at ordering.listen-address (tcp://host:port or
// host:port), serving PushPath, HeldPath and PoolPath over clientCtx's node, and logs with
// logger; nil when no address is set.
func (p *Plane) Listen(clientCtx client.Context, logger log.Logger) (*http.Server, error) {
	address := p.cfg.ListenAddress
	if address == "" {
		return nil, nil
	}
	hostPort := address
	if u, err := url.Parse(address); err == nil && u.Host != "" {
		hostPort = u.Host
	}
	l, err := net.Listen("tcp", hostPort)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", FlagListenAddress, address, err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST "+PushPath, p.PushHandler(clientCtx))
	mux.Handle("POST "+HeldPath, p.HeldHandler())
	mux.Handle("GET "+PoolPath, p.TxHandler())
	slots := &signerSlots{keys: p.keys, used: map[string]int{}}
	srv := &http.Server{
		Handler:           slots.limit(mux),
		ReadHeaderTimeout: headerTimeout,
		ReadTimeout:       requestTimeout,
		WriteTimeout:      requestTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
	go func() {
		if err := srv.Serve(netutil.LimitListener(l, maxConns)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("data plane: the listener stopped", "address", address, "err", err)
		}
	}()
	logger.Info("data plane: serving pushes and fetches", "address", l.Addr().String())
	return srv, nil
}
