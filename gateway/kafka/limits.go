package kafka

import (
	"context"
	"io"
	"sync"
	"time"
)

// Any Kafka client may be hostile, so what a connection can make the gateway hold is bounded:
// connections (MaxConnections), the time a request's bytes take to arrive and an answer's to
// leave (RequestTimeout), idle time (IdleTimeout), the bytes of requests read and not yet
// answered and of answers not yet sent (MaxRequestBytes per connection, MaxBufferedBytes in
// total), a Fetch answer (MaxFetchBytes) and open transactions (MaxTransactionBytes per
// principal). Before SASL authentication a frame holds at most maxHandshakeFrame bytes.

// Defaults of Config's bounds (and of `bftlogd kafka serve`'s flags).
const (
	DefaultMaxRequestBytes     = 100 << 20 // Kafka's socket.request.max.bytes
	DefaultMaxConnections      = 1000
	DefaultMaxBufferedBytes    = 256 << 20
	DefaultMaxFetchBytes       = 50 << 20 // what the gateway answered without a max before
	DefaultMaxTransactionBytes = 64 << 20
	DefaultIdleTimeout         = 10 * time.Minute // Kafka's connections.max.idle.ms
	DefaultRequestTimeout      = 30 * time.Second // Kafka clients' request.timeout.ms
)

const (
	// maxHandshakeFrame bounds a frame before SASL authentication: ApiVersions and a SASL
	// token take a few hundred bytes.
	maxHandshakeFrame = 8 << 10
	// connAllowance is what each connection holds without the shared budget, so that its
	// small requests (ApiVersions, Metadata, a Fetch request) are read however full it is.
	connAllowance = 64 << 10
	// firstFrameBuffer is where a frame's buffer starts: it doubles as bytes arrive, so a peer
	// that announces a large frame and sends little holds little.
	firstFrameBuffer = 4 << 10
)

// budget bounds the bytes held at once.
type budget struct {
	mu    sync.Mutex
	used  int64
	limit int64
	room  chan struct{} // closed when bytes are given back
}

func newBudget(limit int64) *budget { return &budget{limit: limit, room: make(chan struct{})} }

// take holds n bytes, waiting until they fit (n larger than the limit fits an empty budget);
// it fails when ctx ends first.
func (b *budget) take(ctx context.Context, n int64) error {
	for {
		b.mu.Lock()
		if b.used+n <= b.limit || b.used == 0 {
			b.used += n
			b.mu.Unlock()
			return nil
		}
		room := b.room
		b.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// takeUpTo holds what it can of n bytes without waiting and returns how many.
func (b *budget) takeUpTo(n int64) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	n = max(min(n, b.limit-b.used), 0)
	b.used += n
	return n
}

// force holds n bytes at once, past the limit if need be.
func (b *budget) force(n int64) {
	b.mu.Lock()
	b.used += n
	b.mu.Unlock()
}

func (b *budget) give(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	close(b.room)
	b.room = make(chan struct{})
	b.mu.Unlock()
}

// connBytes is what one connection holds of requests read and not yet answered and of answers
// not yet sent: its first connAllowance bytes its own, the rest from the budget every
// connection shares. Its reader takes; its writer gives back once an answer is sent.
type connBytes struct {
	conn   *budget // this connection's: MaxRequestBytes
	shared *budget // every connection's: MaxBufferedBytes
	mu     sync.Mutex
	own    int64 // held within connAllowance
}

// grant is bytes held of a connBytes: n in all, own of them within its allowance.
type grant struct{ n, own int64 }

func (g grant) plus(h grant) grant { return grant{g.n + h.n, g.own + h.own} }

func (cb *connBytes) takeOwn(n int64) int64 {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	own := max(min(n, connAllowance-cb.own), 0)
	cb.own += own
	return own
}

// takeFrame holds a request frame's n bytes, waiting while the connection holds its limit
// (its earlier requests' answers are still being made or sent) or the shared budget is full.
func (cb *connBytes) takeFrame(ctx context.Context, n int64) (grant, error) {
	if err := cb.conn.take(ctx, n); err != nil {
		return grant{}, err
	}
	g := grant{n: n, own: cb.takeOwn(n)}
	if err := cb.shared.take(ctx, n-g.own); err != nil {
		cb.conn.give(n)
		cb.mu.Lock()
		cb.own -= g.own
		cb.mu.Unlock()
		return grant{}, err
	}
	return g, nil
}

// takeUpTo holds what it can of an answer's n bytes without waiting: a Fetch asks the node for
// no more than that.
func (cb *connBytes) takeUpTo(n int64) grant {
	if cb == nil {
		return grant{n: n}
	}
	g := grant{own: cb.takeOwn(n)}
	g.n = g.own + cb.shared.takeUpTo(n-g.own)
	cb.conn.force(g.n) // an answer is bounded by MaxFetchBytes, not by waiting
	return g
}

// trim gives back what g holds beyond n bytes (the shared part first) and returns the rest.
func (cb *connBytes) trim(g grant, n int64) grant {
	if cb == nil || n >= g.n {
		return g
	}
	back := g.n - n
	shared := min(back, g.n-g.own)
	cb.conn.give(back)
	cb.shared.give(shared)
	cb.mu.Lock()
	cb.own -= back - shared
	cb.mu.Unlock()
	return grant{n: n, own: g.own - (back - shared)}
}

func (cb *connBytes) give(g grant) {
	if cb == nil {
		return
	}
	cb.conn.give(g.n)
	cb.shared.give(g.n - g.own)
	cb.mu.Lock()
	cb.own -= g.own
	cb.mu.Unlock()
}

// answerKey carries a request's *answerBytes in its context.
type answerKey struct{}

// answerBytes collects what a request's answer holds of its connection's bytes while it is
// made; the writer gives it back once the answer is sent.
type answerBytes struct {
	cb   *connBytes
	held grant
}

func answerOf(ctx context.Context) *answerBytes {
	a, _ := ctx.Value(answerKey{}).(*answerBytes)
	return a
}

func (a *answerBytes) conn() *connBytes {
	if a == nil {
		return nil
	}
	return a.cb
}

func (a *answerBytes) keep(g grant) {
	if a != nil {
		a.held = a.held.plus(g)
	}
}

// readFrame reads a frame of size bytes into a buffer that grows as they arrive.
func readFrame(r io.Reader, size int) ([]byte, error) {
	buf := make([]byte, 0, min(size, firstFrameBuffer))
	for len(buf) < size {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(size, 2*cap(buf)))
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil && len(buf) < size {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return buf, nil
}
