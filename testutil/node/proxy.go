package node

import (
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Link is a TCP proxy on 127.0.0.1 that carries one node's peer connections to another node's
// p2p port. A network built with NetworkOptions.Proxied sends every peer connection through a
// Link per (dialer, target) pair and turns off peer exchange, so cutting a node's links cuts the
// node off from its peers and from nothing else (clients still reach its RPC and gRPC).
// SetDelay makes it a wide-area link.
type Link struct {
	From, To int // node indexes: To's p2p port is reached by From through Port
	Port     int
	target   string
	ln       net.Listener
	mu       sync.Mutex
	cut      bool
	conns    map[net.Conn]struct{}
	delay    atomic.Int64 // one-way delay of each direction, a time.Duration
}

func newLink(t T, from, to, targetPort int) *Link {
	t.Helper()
	l := &Link{From: from, To: to, Port: FreePort(t), target: "127.0.0.1:" + strconv.Itoa(targetPort), conns: map[net.Conn]struct{}{}}
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(l.Port))
	if err != nil {
		t.Fatal(err)
	}
	l.ln = ln
	go l.serve()
	t.Cleanup(l.Close)
	return l
}

func (l *Link) serve() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		go l.carry(c)
	}
}

// carry pipes one accepted connection to the target until either side closes or the link is cut.
func (l *Link) carry(c net.Conn) {
	l.mu.Lock()
	if l.cut {
		l.mu.Unlock()
		c.Close()
		return
	}
	l.conns[c] = struct{}{}
	l.mu.Unlock()
	u, err := net.Dial("tcp", l.target)
	if err != nil {
		l.drop(c)
		return
	}
	l.mu.Lock()
	if l.cut {
		l.mu.Unlock()
		u.Close()
		l.drop(c)
		return
	}
	l.conns[u] = struct{}{}
	l.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { l.pipe(u, c); done <- struct{}{} }()
	go func() { l.pipe(c, u); done <- struct{}{} }()
	<-done
	l.drop(c)
	l.drop(u)
}

// SetDelay delays every byte through the link by oneWay in each direction (a round trip of
// 2*oneWay between the two nodes), on open connections too. It is a delay line, not a rate
// limit: every chunk read is held until its own time has come while later ones are read on.
func (l *Link) SetDelay(oneWay time.Duration) { l.delay.Store(int64(oneWay)) }

// chunk is bytes read from one side, due at the other.
type chunk struct {
	due time.Time
	b   []byte
}

// pipe copies src to dst in order, each chunk delayed by the link's delay when it was read,
// until src ends (what was read is delivered first) or dst fails.
func (l *Link) pipe(dst, src net.Conn) {
	// A full queue stops the reader, as a full TCP window would; 4,096 chunks hold far more
	// than 100 ms of a validator's traffic.
	q := make(chan chunk, 4096)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(q)
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				c := chunk{due: time.Now().Add(time.Duration(l.delay.Load())), b: append([]byte(nil), buf[:n]...)}
				select {
				case q <- c:
				case <-stop:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range q {
		time.Sleep(time.Until(c.due))
		if _, err := dst.Write(c.b); err != nil {
			return
		}
	}
}

func (l *Link) drop(c net.Conn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
	c.Close()
}

// Cut closes every connection on the link and refuses new ones until Heal.
func (l *Link) Cut() {
	l.mu.Lock()
	l.cut = true
	conns := l.conns
	l.conns = map[net.Conn]struct{}{}
	l.mu.Unlock()
	for c := range conns {
		c.Close()
	}
}

// Heal lets connections through again; the nodes' persistent-peer redial reconnects them.
func (l *Link) Heal() {
	l.mu.Lock()
	l.cut = false
	l.mu.Unlock()
}

// Close stops the link for good.
func (l *Link) Close() {
	l.Cut()
	l.ln.Close()
}

// Isolate cuts every link to and from node i: it keeps running but hears no peer.
func (net *Network) Isolate(i int) {
	net.t.Helper()
	if len(net.Links) == 0 {
		net.t.Fatal("Isolate needs a network started with Proxied: true")
	}
	for _, l := range net.Links {
		if l.From == i || l.To == i {
			l.Cut()
		}
	}
}

// SetDelay gives every link of the network a one-way delay (a round trip of 2*oneWay between
// any two validators), as between data centres.
func (net *Network) SetDelay(oneWay time.Duration) {
	net.t.Helper()
	if len(net.Links) == 0 {
		net.t.Fatal("SetDelay needs a network started with Proxied: true")
	}
	for _, l := range net.Links {
		l.SetDelay(oneWay)
	}
}

// Reconnect heals every link to and from node i.
func (net *Network) Reconnect(i int) {
	for _, l := range net.Links {
		if l.From == i || l.To == i {
			l.Heal()
		}
	}
}
