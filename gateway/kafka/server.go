package kafka

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cosmos/cosmos-sdk/client"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/client/txclient"
	"github.com/bftlog/bftlog/x/topics/types"
)

// Config configures a gateway.
type Config struct {
	// Addr is the listen address (default 127.0.0.1:9092).
	Addr string
	// Advertise is the host:port the gateway gives Kafka clients as its broker address in
	// Metadata and FindCoordinator (default: where it listens). A fleet behind a load balancer
	// advertises the balancer, so clients that lose a gateway reconnect to another.
	Advertise string
	// ClientCtx reaches a bftlog node (gRPC or RPC) for queries.
	ClientCtx client.Context
	// Signer signs the gateway's transactions (produce, create topics, ...). Listen switches
	// it to unordered transactions, so the key may sign elsewhere too (the CLI, a second
	// gateway) without wedging the gateway on the account sequence.
	Signer *txclient.Signer
	// Users, when given, require every client to authenticate with SASL (PLAIN, SCRAM-SHA-256
	// or SCRAM-SHA-512) as one of them; each user's transactions are signed with its own key.
	// Signer then signs nothing for clients.
	Users []User
	// TLS, when set, serves TLS (e.g. with SASL/PLAIN, whose password is otherwise in clear).
	TLS *tls.Config
	// MaxRequestBytes bounds one request frame (default 100 MiB, Kafka's
	// socket.request.max.bytes), and what one connection holds of requests read and not yet
	// answered: past it the gateway reads no more of that connection until answers are sent.
	MaxRequestBytes int32
	// MaxBufferedBytes bounds, over all connections, the bytes of requests read and not yet
	// answered and of Fetch answers not yet sent (default 256 MiB; Kafka's
	// queued.max.request.bytes). Each connection's first 64 KiB do not count here, so its small
	// requests are read however full it is; a Fetch answer is cut to what fits.
	MaxBufferedBytes int64
	// MaxFetchBytes bounds one Fetch answer whatever the client asks (default 50 MiB; Kafka's
	// fetch.max.bytes), past its first batch.
	MaxFetchBytes int32
	// MaxTransactionBytes bounds what one principal's open Kafka transactions hold: record
	// batches, offsets and transactional ids (default 64 MiB).
	MaxTransactionBytes int64
	// MaxConnections bounds the connections served at once (default 1,000); one more is
	// closed as it is accepted.
	MaxConnections int
	// IdleTimeout closes a connection that sends no request for this long (default 10 min,
	// Kafka's connections.max.idle.ms).
	IdleTimeout time.Duration
	// RequestTimeout bounds how long a request's bytes take to arrive once its size is read,
	// how long an answer takes to be sent and, with Users, how long a client takes to
	// authenticate after connecting (default 30 s, Kafka clients' request.timeout.ms).
	RequestTimeout time.Duration
	// Log receives the errors the gateway answers clients with (default: discarded).
	Log func(format string, args ...any)
	// OnRequest, when set, is called with each request's client id, API key and version as it
	// is read, before it is checked or answered (so a version the gateway does not serve is
	// seen too). It runs on the connection's reading goroutine, for all connections at once:
	// it must be quick and safe for concurrent use. Tests record what clients send with it.
	OnRequest func(clientID string, key, version int16)
	// Telemetry is the subscription to client metrics (KIP-714) offered to clients; the
	// zero value subscribes to nothing, so clients push nothing (telemetry.go).
	Telemetry Telemetry
	// MetricsAddr, when set, serves the gateway's Prometheus registry at its /metrics: the
	// gateway's own series and the metrics clients push (telemetry_export.go).
	MetricsAddr string
}

// User is a Kafka principal of the gateway: its name and password, and the signer with its
// on-chain key.
type User struct {
	Name, Password string
	Signer         *txclient.Signer
}

// identity is who a connection's requests act as: a principal (empty without SASL) with its
// signer, and the produce lanes and group coordinator that sign with it.
type identity struct {
	principal          string
	password           string
	scram256, scram512 scramCredential
	signer             *txclient.Signer
	producer           *producer
	groups             *coordinator
	shares             *shareCoordinator
	txns               *txnCoordinator
}

// Server is a running gateway.
type Server struct {
	cfg Config
	ln  net.Listener
	// buffered is every connection's share of MaxBufferedBytes.
	buffered *budget
	query    types.QueryClient
	anon     *identity            // without users: every client, signing with cfg.Signer
	users    map[string]*identity // with users: by principal
	ids      []*identity
	// topicIDs maps the Kafka topic IDs shown to clients back to names (topic_ids.go).
	topicIDs topicIDs
	// metrics is the gateway's Prometheus registry and series; telemetry what clients push.
	metrics     *gatewayMetrics
	telemetry   *telemetry
	metricsHTTP *http.Server
	metricsAddr string
	// scramSecret derives the SCRAM salts shown for user names nobody has.
	scramSecret []byte
	host        string
	port        int32
	mu          sync.Mutex
	conns       map[net.Conn]context.CancelFunc
	wg          sync.WaitGroup
	closeOnce   sync.Once
}

// Listen opens the listener; Serve (in a goroutine) accepts clients.
func Listen(cfg Config) (*Server, error) {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:9092"
	}
	cfg.MaxRequestBytes = orDefault(cfg.MaxRequestBytes, DefaultMaxRequestBytes)
	cfg.MaxBufferedBytes = orDefault(cfg.MaxBufferedBytes, DefaultMaxBufferedBytes)
	cfg.MaxFetchBytes = orDefault(cfg.MaxFetchBytes, DefaultMaxFetchBytes)
	cfg.MaxTransactionBytes = orDefault(cfg.MaxTransactionBytes, DefaultMaxTransactionBytes)
	cfg.MaxConnections = orDefault(cfg.MaxConnections, DefaultMaxConnections)
	cfg.IdleTimeout = orDefault(cfg.IdleTimeout, DefaultIdleTimeout)
	cfg.RequestTimeout = orDefault(cfg.RequestTimeout, DefaultRequestTimeout)
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, err
	}
	advertised := ln.Addr().String()
	if cfg.Advertise != "" {
		advertised = cfg.Advertise
	}
	host, portS, err := net.SplitHostPort(advertised)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("advertised address %q: %w", advertised, err)
	}
	port, err := strconv.Atoi(portS)
	if err != nil || port <= 0 || port > 65535 {
		ln.Close()
		return nil, fmt.Errorf("advertised address %q: bad port", advertised)
	}
	s := &Server{cfg: cfg, ln: ln, query: types.NewQueryClient(cfg.ClientCtx), host: host, port: int32(port), conns: map[net.Conn]context.CancelFunc{},
		scramSecret: make([]byte, 32), buffered: newBudget(cfg.MaxBufferedBytes)}
	if _, err := rand.Read(s.scramSecret); err != nil {
		ln.Close()
		return nil, err
	}
	s.metrics = newGatewayMetrics(s)
	s.telemetry = newTelemetry(cfg.Telemetry, s.metrics)
	s.metrics.registry.MustRegister(s.telemetry)
	newIdentity := func(principal, password string, signer *txclient.Signer) (*identity, error) {
		if signer != nil { // a gateway without a signer serves reads only
			signer.UseUnordered()
		}
		id := &identity{principal: principal, password: password, signer: signer,
			producer: newProducer(cfg.ClientCtx, signer, cfg.Log), groups: newCoordinator(newChainGroups(cfg.ClientCtx, signer, s.query)),
			shares: newShareCoordinator(cfg.ClientCtx, signer),
			txns:   newTxnCoordinator(signer, cfg.MaxTransactionBytes)}
		id.groups.log = cfg.Log
		id.groups.shareMember = func(ctx context.Context, group, member string) bool {
			st, err := s.shareGroupState(ctx, group)
			m := findShareMember(st, member)
			return err != nil || (m != nil && m.Owner == id.groups.chain.owner()) // unreadable: keep it
		}
		s.ids = append(s.ids, id)
		if password == "" {
			return id, nil
		}
		var err error
		if id.scram256, err = newScramCredential(scramHash(mechScram256), password); err != nil {
			return nil, err
		}
		id.scram512, err = newScramCredential(scramHash(mechScram512), password)
		return id, err
	}
	if len(cfg.Users) == 0 {
		id, err := newIdentity("", "", cfg.Signer)
		if err != nil {
			ln.Close()
			return nil, err
		}
		s.anon = id
	} else {
		s.users = map[string]*identity{}
		for _, u := range cfg.Users {
			if u.Name == "" || u.Password == "" || u.Signer == nil || s.users[u.Name] != nil {
				s.closeIdentities()
				ln.Close()
				return nil, fmt.Errorf("gateway user %q: give a unique name, a password and a key", u.Name)
			}
			id, err := newIdentity(u.Name, u.Password, u.Signer)
			if err != nil {
				s.closeIdentities()
				ln.Close()
				return nil, err
			}
			s.users[u.Name] = id
		}
	}
	// Served last: every error return above closes only what it opened.
	if cfg.MetricsAddr != "" {
		if err := s.serveMetrics(cfg.MetricsAddr); err != nil {
			s.closeIdentities()
			ln.Close()
			return nil, err
		}
	}
	if cfg.TLS != nil {
		s.ln = tls.NewListener(ln, cfg.TLS)
	}
	return s, nil
}

// Addr is where the gateway listens.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Serve accepts connections until Close.
func (s *Server) Serve() error {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		ctx, cancel := context.WithCancel(context.Background())
		s.mu.Lock()
		full := len(s.conns) >= s.cfg.MaxConnections
		if !full {
			s.conns[c] = cancel
		}
		s.mu.Unlock()
		if full {
			cancel()
			c.Close()
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer cancel()
			s.serveConn(ctx, c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			c.Close()
		}()
	}
}

// Close stops accepting, closes every connection and stops the producer; later calls do
// nothing.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		err = s.ln.Close()
		s.mu.Lock()
		for c, cancel := range s.conns {
			cancel() // wakes requests waiting in a join, sync or fetch
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
		s.closeIdentities()
		if s.metricsHTTP != nil {
			_ = s.metricsHTTP.Close()
		}
	})
	return err
}

func (s *Server) closeIdentities() {
	for _, id := range s.ids {
		id.producer.close()
		id.groups.close()
		id.shares.close()
	}
}

// saslKey carries a connection's *saslConn in its requests' context.
type saslKey struct{}

// ident is the identity a request acts as: the connection's authenticated user, or the
// gateway's own signer without SASL.
func (s *Server) ident(ctx context.Context) *identity {
	if sc, _ := ctx.Value(saslKey{}).(*saslConn); sc != nil && sc.id != nil {
		return sc.id
	}
	return s.anon
}

// pending is a response in the making: produce requests answer once their records are in a
// block, so a connection keeps reading (clients pipeline produce requests) while a writer sends
// the answers in request order, as a broker must.
type pending struct {
	corr int32
	key  int16
	// wait makes the answer; nil from it sends nothing (acks=0).
	wait func() kmsg.Response
	// raw, with wait nil, is a bare SASL token answered to a SaslHandshake v0 client.
	raw []byte
	// held is what the request and its answer hold of the connection's bytes until sent.
	held grant
}

// serveConn answers one client's requests in order.
func (s *Server) serveConn(ctx context.Context, c net.Conn) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cb := &connBytes{conn: newBudget(int64(s.cfg.MaxRequestBytes)), shared: s.buffered}
	r := bufio.NewReaderSize(c, 16<<10)
	queue := make(chan pending, 64)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		s.writeAnswers(c, queue, cb, cancel)
	}()
	defer func() { close(queue); <-writerDone }()
	sc := &saslConn{secret: s.scramSecret}
	ctx = context.WithValue(ctx, saslKey{}, sc)
	ctx = context.WithValue(ctx, hostKey{}, remoteHost(c))
	authBy := time.Now().Add(s.cfg.RequestTimeout)
	var prefix [4]byte
	for {
		// Before SASL authentication frames are small and the whole handshake has
		// RequestTimeout; after it a client may idle for IdleTimeout between requests.
		handshake := len(s.users) > 0 && sc.id == nil
		limit, deadline := s.cfg.MaxRequestBytes, time.Now().Add(s.cfg.IdleTimeout)
		if handshake {
			limit, deadline = maxHandshakeFrame, authBy
		}
		_ = c.SetReadDeadline(deadline)
		if _, err := io.ReadFull(r, prefix[:]); err != nil {
			return
		}
		size := int32(binary.BigEndian.Uint32(prefix[:]))
		rawToken := sc.raw && sc.mechanism != "" && sc.id == nil
		if (size < 10 && !rawToken) || size < 0 || size > limit {
			return // not a Kafka frame, or more than the gateway takes: nothing sensible to answer
		}
		held, err := cb.takeFrame(ctx, int64(size))
		if err != nil {
			return
		}
		if !handshake {
			_ = c.SetReadDeadline(time.Now().Add(s.cfg.RequestTimeout))
		}
		frame, err := readFrame(r, int(size))
		if err != nil {
			cb.give(held)
			return
		}
		if rawToken {
			answer, _, err := sc.step(s.users, frame)
			if err != nil {
				cb.give(held)
				s.cfg.Log("kafka gateway: %s: SASL %s: %v", c.RemoteAddr(), sc.mechanism, err)
				return // as a broker does after a failed handshake-v0 exchange
			}
			queue <- pending{raw: answer, held: held}
			continue
		}
		answer := &answerBytes{cb: cb}
		p, err := s.handleFrame(context.WithValue(ctx, answerKey{}, answer), frame)
		p.held = held.plus(answer.held)
		if err != nil || p.wait == nil {
			cb.give(p.held)
		} else {
			queue <- p
		}
		if err != nil || sc.failed {
			return // closed after a failed authentication too, as a broker does
		}
	}
}

// writeAnswers sends the queued answers in request order, each within RequestTimeout, and
// gives back what each held once sent (or once made, after the connection failed).
func (s *Server) writeAnswers(c net.Conn, queue <-chan pending, cb *connBytes, cancel context.CancelFunc) {
	w := bufio.NewWriterSize(c, 16<<10)
	failed := false
	for p := range queue {
		var out []byte
		if p.wait == nil {
			out = binary.BigEndian.AppendUint32(nil, uint32(len(p.raw)))
			out = append(out, p.raw...)
		} else if resp := p.wait(); resp != nil {
			out = frameResponse(p.corr, p.key, resp)
		}
		if out != nil && !failed {
			_ = c.SetWriteDeadline(time.Now().Add(s.cfg.RequestTimeout))
			_, err := w.Write(out)
			if err == nil {
				err = w.Flush() // every answer: the next may wait for a block
			}
			if err != nil {
				failed = true
				c.Close()
				cancel() // the reader stops, waiting or reading
			}
		}
		cb.give(p.held)
	}
}

// handleFrame decodes a request header and body and dispatches it.
func (s *Server) handleFrame(ctx context.Context, frame []byte) (pending, error) {
	key := int16(binary.BigEndian.Uint16(frame[0:2]))
	version := int16(binary.BigEndian.Uint16(frame[2:4]))
	p := pending{corr: int32(binary.BigEndian.Uint32(frame[4:8])), key: key}
	body := frame[8:]
	// client id: a nullable string with an int16 length, in every request header version >= 1
	n := int16(binary.BigEndian.Uint16(body))
	body = body[2:]
	if n > 0 {
		if int(n) > len(body) {
			return p, fmt.Errorf("short client id")
		}
		ctx = context.WithValue(ctx, clientIDKey{}, string(body[:n]))
		body = body[n:]
	}
	s.metrics.request(key)
	if s.cfg.OnRequest != nil {
		s.cfg.OnRequest(clientID(ctx), key, version)
	}
	req := kmsg.RequestForKey(key)
	if req == nil {
		return p, fmt.Errorf("unknown API key %d", key) // no response shape exists: close, as Kafka does
	}
	if sc, _ := ctx.Value(saslKey{}).(*saslConn); len(s.users) > 0 && sc.id == nil && !saslAllowed(key) {
		// Kafka closes a connection that sends anything else before authenticating.
		return p, fmt.Errorf("request %d before SASL authentication", key)
	}
	if !supported(key, version) {
		resp := unsupported(key, version)
		p.wait = func() kmsg.Response { return resp }
		return p, nil
	}
	req.SetVersion(version)
	if req.IsFlexible() { // request header v2: tagged fields after the client id
		var err error
		if body, err = skipTags(body); err != nil {
			return p, err
		}
	}
	if err := req.ReadFrom(body); err != nil {
		resp := invalidRequest(req)
		p.wait = func() kmsg.Response { return resp }
		return p, nil
	}
	if pr, ok := req.(*kmsg.ProduceRequest); ok {
		p.wait = s.produce(ctx, pr)
		return p, nil
	}
	resp := s.dispatch(ctx, req)
	p.wait = func() kmsg.Response { return resp }
	return p, nil
}

// clientIDKey carries a request header's client id in its context.
type clientIDKey struct{}

func clientID(ctx context.Context) string {
	id, _ := ctx.Value(clientIDKey{}).(string)
	return id
}

// frameResponse adds the size and response header; ApiVersions always answers with header v0.
func frameResponse(corr int32, key int16, resp kmsg.Response) []byte {
	out := make([]byte, 4, 64)
	out = binary.BigEndian.AppendUint32(out, uint32(corr))
	if resp.IsFlexible() && key != kmsg.ApiVersions.Int16() {
		out = append(out, 0)
	}
	out = resp.AppendTo(out)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	return out
}

// skipTags skips a flexible request header's tagged fields.
func skipTags(b []byte) ([]byte, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, fmt.Errorf("bad tagged fields")
	}
	b = b[n:]
	for i := uint64(0); i < count; i++ {
		_, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, fmt.Errorf("bad tag")
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < size {
			return nil, fmt.Errorf("bad tag size")
		}
		b = b[n+int(size):]
	}
	return b, nil
}

// saslAllowed are the requests a client may send before it has authenticated.
func saslAllowed(key int16) bool {
	switch kmsg.Key(key) {
	case kmsg.ApiVersions, kmsg.SASLHandshake, kmsg.SASLAuthenticate:
		return true
	}
	return false
}

func (s *Server) dispatch(ctx context.Context, req kmsg.Request) kmsg.Response {
	switch r := req.(type) {
	case *kmsg.SASLHandshakeRequest:
		return s.saslHandshake(ctx.Value(saslKey{}).(*saslConn), r)
	case *kmsg.SASLAuthenticateRequest:
		return s.saslAuthenticate(ctx.Value(saslKey{}).(*saslConn), r)
	case *kmsg.ApiVersionsRequest:
		return apiVersions(r)
	case *kmsg.MetadataRequest:
		return s.metadata(ctx, r)
	case *kmsg.DescribeTopicPartitionsRequest:
		return s.describeTopicPartitions(ctx, r)
	case *kmsg.InitProducerIDRequest:
		return s.initProducerID(ctx, r)
	case *kmsg.AddPartitionsToTxnRequest:
		return s.ident(ctx).txns.addPartitions(r)
	case *kmsg.AddOffsetsToTxnRequest:
		return s.ident(ctx).txns.addOffsets(r)
	case *kmsg.TxnOffsetCommitRequest:
		return s.txnOffsetCommit(ctx, r)
	case *kmsg.EndTxnRequest:
		return s.ident(ctx).txns.endTxn(r)
	case *kmsg.FetchRequest:
		return s.fetch(ctx, r)
	case *kmsg.ListOffsetsRequest:
		return s.listOffsets(ctx, r)
	case *kmsg.CreateTopicsRequest:
		return s.createTopics(ctx, r)
	case *kmsg.DeleteTopicsRequest:
		return s.deleteTopics(ctx, r)
	case *kmsg.CreatePartitionsRequest:
		return s.createPartitions(ctx, r)
	case *kmsg.DescribeConfigsRequest:
		return s.describeConfigs(ctx, r)
	case *kmsg.IncrementalAlterConfigsRequest:
		return s.incrementalAlterConfigs(ctx, r)
	case *kmsg.AlterConfigsRequest:
		return s.alterConfigs(ctx, r)
	case *kmsg.OffsetDeleteRequest:
		return s.offsetDelete(ctx, r)
	case *kmsg.DescribeProducersRequest:
		return s.describeProducers(ctx, r)
	case *kmsg.DeleteRecordsRequest:
		return s.deleteRecords(ctx, r)
	case *kmsg.CreateACLsRequest:
		return s.createACLs(ctx, r)
	case *kmsg.DescribeACLsRequest:
		return s.describeACLs(ctx, r)
	case *kmsg.DeleteACLsRequest:
		return s.deleteACLs(ctx, r)
	case *kmsg.ListTransactionsRequest:
		return s.ident(ctx).txns.listTransactions(r)
	case *kmsg.DescribeTransactionsRequest:
		return s.ident(ctx).txns.describeTransactions(r)
	case *kmsg.FindCoordinatorRequest:
		return s.findCoordinator(r)
	case *kmsg.JoinGroupRequest:
		return s.ident(ctx).groups.joinGroup(ctx, r, clientID(ctx))
	case *kmsg.SyncGroupRequest:
		return s.ident(ctx).groups.syncGroup(ctx, r)
	case *kmsg.HeartbeatRequest:
		return s.ident(ctx).groups.heartbeat(ctx, r)
	case *kmsg.LeaveGroupRequest:
		return s.ident(ctx).groups.leaveGroup(ctx, r)
	case *kmsg.OffsetCommitRequest:
		return s.offsetCommit(ctx, r)
	case *kmsg.OffsetFetchRequest:
		return s.offsetFetch(ctx, r)
	case *kmsg.ConsumerGroupHeartbeatRequest:
		return s.consumerGroupHeartbeat(ctx, r)
	case *kmsg.ConsumerGroupDescribeRequest:
		return s.consumerGroupDescribe(ctx, r)
	case *kmsg.ShareGroupHeartbeatRequest:
		return s.shareGroupHeartbeat(ctx, r)
	case *kmsg.ShareGroupDescribeRequest:
		return s.shareGroupDescribe(ctx, r)
	case *kmsg.ShareFetchRequest:
		return s.shareFetch(ctx, r)
	case *kmsg.ShareAcknowledgeRequest:
		return s.shareAcknowledge(ctx, r)
	case *kmsg.DescribeShareGroupOffsetsRequest:
		return s.describeShareGroupOffsets(ctx, r)
	case *kmsg.AlterShareGroupOffsetsRequest:
		return s.alterShareGroupOffsets(ctx, r)
	case *kmsg.DeleteShareGroupOffsetsRequest:
		return s.deleteShareGroupOffsets(ctx, r)
	case *kmsg.ListGroupsRequest:
		return s.listGroups(ctx, r)
	case *kmsg.DescribeGroupsRequest:
		return s.describeGroups(ctx, r)
	case *kmsg.DeleteGroupsRequest:
		return s.deleteGroups(ctx, r)
	case *kmsg.DescribeClusterRequest:
		return s.describeCluster(r)
	case *kmsg.OffsetForLeaderEpochRequest:
		return s.offsetForLeaderEpoch(ctx, r)
	case *kmsg.DescribeLogDirsRequest:
		return s.describeLogDirs(ctx, r)
	case *kmsg.DescribeUserSCRAMCredentialsRequest:
		return s.describeUserSCRAMCredentials(r)
	case *kmsg.GetTelemetrySubscriptionsRequest:
		return s.telemetry.getTelemetrySubscriptions(r, s.telemetryCaller(ctx))
	case *kmsg.PushTelemetryRequest:
		return s.telemetry.pushTelemetry(r, s.telemetryCaller(ctx))
	}
	return unsupported(req.Key(), req.GetVersion())
}

// orDefault is v, or def when v is not set (or negative).
func orDefault[T int | int32 | int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// submit sends an admin message signed as the connection's identity and answers with Kafka's error code and
// the chain's message (0 and nil when it was committed).
func (s *Server) submit(ctx context.Context, msg sdk.Msg) (int16, *string) {
	if _, err := s.ident(ctx).signer.SubmitAndWait(msg); err != nil {
		return kafkaCode(err), kmsg.StringPtr(err.Error())
	}
	return 0, nil
}
