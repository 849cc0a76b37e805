package app

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/netutil"

	"github.com/cosmos/cosmos-sdk/client"
)

// The data plane's own listener (ordering.listen-address), apart from the public API server:
// the validators' pushes, held-words and fetches (push.go, pool.go) then never queue behind the
// API's clients for its connections, and have limits of their own. Each request is bounded in
// time (headers 5 s, body and answer 60 s, idle 90 s); connections in all by
// maxDataPlaneConns; each validator's requests by dataPlaneSlotsPerSigner at once, decided by
// its signature (dataplane_keys.go), never by its address; unsigned requests (clients' pushes,
// fetches, which the receiver checks by hash) share dataPlaneUnsignedSlots, and one that finds
// them all taken is answered 503 at once rather than waiting. The API server keeps serving the
// same paths for nodes whose ordering.peers still name API servers.
const (
	maxDataPlaneConns        = 512
	dataPlaneSlotsPerSigner  = 8
	dataPlaneUnsignedSlots   = 32
	dataPlaneHeaderTimeout   = 5 * time.Second
	dataPlaneRequestTimeout  = 60 * time.Second
	dataPlaneIdleTimeout     = 90 * time.Second
	dataPlaneMaxHeaderBytes  = 16 << 10
	dataPlaneUnsignedSlotKey = ""
)

// dataPlaneSlots hands out request slots per signer.
type dataPlaneSlots struct {
	keys *dataPlaneKeys

	mu   sync.Mutex
	used map[string]int
}

// take claims a slot for the request's signer ("" unsigned, or a name that is no validator's,
// which counts as unsigned); false when its slots are all taken.
func (s *dataPlaneSlots) take(h http.Header) (string, bool) {
	key, limit := dataPlaneUnsignedSlotKey, dataPlaneUnsignedSlots
	if signed(h) && s.keys.known(h) == nil {
		key, limit = strings.ToUpper(h.Get(HeaderValidator)), dataPlaneSlotsPerSigner
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used[key] >= limit {
		return key, false
	}
	s.used[key]++
	return key, true
}

func (s *dataPlaneSlots) give(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used[key]--; s.used[key] <= 0 {
		delete(s.used, key)
	}
}

// limit wraps h with the slots. A request naming a validator takes that validator's slots
// before its signature is checked (the handler checks it): a forger can only use up the slots
// of the validator it names while its requests last, each bounded in time, and is refused 403.
func (s *dataPlaneSlots) limit(h http.Handler) http.Handler {
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

// serveDataPlane starts the data plane's listener at address (tcp://host:port or host:port),
// serving PushPath, HeldPath and PoolPath over clientCtx's node; nil when address is empty.
func (app *App) serveDataPlane(address string, clientCtx client.Context) (*http.Server, error) {
	if address == "" {
		return nil, nil
	}
	hostPort := address
	if u, err := url.Parse(address); err == nil && u.Host != "" {
		hostPort = u.Host
	}
	l, err := net.Listen("tcp", hostPort)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("POST "+PushPath, app.push.handler(clientCtx))
	mux.HandleFunc("POST "+HeldPath, app.push.heldHandler)
	mux.HandleFunc("GET "+PoolPath, app.pool.serve)
	slots := &dataPlaneSlots{keys: app.pool.keys, used: map[string]int{}}
	srv := &http.Server{
		Handler:           slots.limit(mux),
		ReadHeaderTimeout: dataPlaneHeaderTimeout,
		ReadTimeout:       dataPlaneRequestTimeout,
		WriteTimeout:      dataPlaneRequestTimeout,
		IdleTimeout:       dataPlaneIdleTimeout,
		MaxHeaderBytes:    dataPlaneMaxHeaderBytes,
	}
	go func() {
		if err := srv.Serve(netutil.LimitListener(l, maxDataPlaneConns)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			app.Logger().Error("data plane: the listener stopped", "address", address, "err", err)
		}
	}()
	app.Logger().Info("data plane: serving pushes and fetches", "address", l.Addr().String())
	return srv, nil
}
