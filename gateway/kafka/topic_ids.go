package kafka

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cosmos/cosmos-sdk/types/query"

	"github.com/bftlog/bftlog/x/topics/types"
)

// Kafka names a topic by a 16-byte topic ID as well as by its name (KIP-516): Metadata v10+
// shows it, Fetch v13+ addresses topics by ID only, CreateTopics v7 answers it and DeleteTopics
// v6 takes it. A broker draws it at random when the topic is created and keeps it; the chain keeps
// none, so the gateway derives it from what the chain keeps of the topic's creation — its name
// and the height of the block that created it — and every gateway of a fleet computes the same
// ID. A deleted topic's name cannot be taken again in the block that deleted it (it stays
// reserved until the EndBlocker's purge of the old topic ends: x/topics/keeper/topics.go), so a
// recreated topic has a later height and another ID; a client still holding the old ID is
// answered UNKNOWN_TOPIC_ID, as by Kafka.

// topicIDDomain separates topic IDs from any other hash of the same bytes. Changing it, or
// anything else topicID hashes, changes every topic's ID: clients of a fleet whose gateways
// disagree would see their topics recreated.
const topicIDDomain = "bftlog/kafka/topic-id/v1\x00"

// topicID is a topic's Kafka topic ID: SHA-256 over the domain, the creation height (8 bytes)
// and the name, cut to 16 bytes and marked as an RFC 9562 version 8 (custom) UUID. It is never
// Kafka's zero or reserved metadata ID (the version bits are set), and, as Kafka's own
// Uuid.randomUuid, it never begins with '-' in base64: command-line tools would read it as a flag.
func topicID(t types.Topic) [16]byte {
	h := sha256.New()
	h.Write([]byte(topicIDDomain))
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(t.CreatedHeight)))
	h.Write([]byte(t.Name))
	var id [16]byte
	copy(id[:], h.Sum(nil))
	id[6] = id[6]&0x0f | 0x80
	id[8] = id[8]&0x3f | 0x80
	if id[0]>>2 == 62 { // '-' is 62 in URL-safe base64
		id[0] ^= 0x80
	}
	return id
}

// relistEvery is how often, at most, an ID the gateway does not know makes it list the chain's
// topics: a client naming unknown IDs cannot make it list them on every request.
const relistEvery = time.Second

// maxListedTopics bounds one listing of the chain's topics.
const maxListedTopics = 100_000

// topicIDs maps the topic IDs this gateway has shown or listed back to topic names.
type topicIDs struct {
	mu     sync.Mutex
	names  map[[16]byte]string
	listMu sync.Mutex // one listing at a time; the others wait for it
	listed time.Time  // when the last listing started
}

func (m *topicIDs) name(id [16]byte) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name, ok := m.names[id]
	return name, ok
}

// learn records t's ID (shown to a client, so it may come back) and returns it.
func (m *topicIDs) learn(t types.Topic) [16]byte {
	id := topicID(t)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.names == nil {
		m.names = map[[16]byte]string{}
	}
	m.names[id] = t.Name
	return id
}

// topic reads a topic by name; found false when the chain has no such topic.
func (s *Server) topic(ctx context.Context, name string) (types.Topic, bool, error) {
	res, err := s.query.Topic(ctx, &types.QueryTopicRequest{Name: name})
	if err != nil {
		if queryCode(err) == kerr.UnknownTopicOrPartition.Code {
			return types.Topic{}, false, nil
		}
		return types.Topic{}, false, err
	}
	return res.Topic, true, nil
}

// topicByID is the topic id names now; found false for an ID no topic has (UNKNOWN_TOPIC_ID). A
// name known for id is checked against the chain (the topic may be gone, or recreated with
// another ID); an ID not known makes the gateway list the chain's topics, at most every
// relistEvery.
func (s *Server) topicByID(ctx context.Context, id [16]byte) (types.Topic, bool, error) {
	if name, ok := s.topicIDs.name(id); ok {
		t, found, err := s.topic(ctx, name)
		if err != nil {
			return types.Topic{}, false, err
		}
		if found && topicID(t) == id {
			return t, true, nil
		}
	}
	asked := time.Now()
	m := &s.topicIDs
	m.listMu.Lock()
	defer m.listMu.Unlock()
	if m.listed.Before(asked) && time.Since(m.listed) >= relistEvery {
		m.listed = time.Now()
		topics, err := s.allTopics(ctx)
		if err != nil {
			return types.Topic{}, false, err
		}
		// Added to what is known, not put in its place: an ID learned but missing from a listing
		// (one past maxListedTopics, say) still names its topic, checked against the chain on use.
		m.mu.Lock()
		if m.names == nil {
			m.names = map[[16]byte]string{}
		}
		for _, t := range topics {
			m.names[topicID(t)] = t.Name
		}
		m.mu.Unlock()
		for _, t := range topics {
			if topicID(t) == id {
				return t, true, nil
			}
		}
		return types.Topic{}, false, nil
	}
	// Listed while this request waited, or within relistEvery: the map is as fresh as allowed.
	name, ok := m.name(id)
	if !ok {
		return types.Topic{}, false, nil
	}
	t, found, err := s.topic(ctx, name)
	if err != nil || !found || topicID(t) != id {
		return types.Topic{}, false, err
	}
	return t, true, nil
}

// allTopics lists the chain's topics, at most maxListedTopics.
func (s *Server) allTopics(ctx context.Context) ([]types.Topic, error) {
	var out []types.Topic
	var next []byte
	for {
		res, err := s.query.Topics(ctx, &types.QueryTopicsRequest{Pagination: &query.PageRequest{Key: next, Limit: 1_000}})
		if err != nil {
			return nil, err
		}
		out = append(out, res.Topics...)
		if res.Pagination == nil || len(res.Pagination.NextKey) == 0 || len(out) >= maxListedTopics {
			return out, nil
		}
		next = res.Pagination.NextKey
	}
}

// fetchTopicsByID names the topics of a Fetch v13+ request, which gives their IDs only: each
// topic's Topic is set to its name, and codes holds UNKNOWN_TOPIC_ID (or the query's error) for
// a topic it could not name. failed is true when no topic could be named: the answer need not
// wait for data, as Kafka answers a fetch of erroneous partitions only at once.
func (s *Server) fetchTopicsByID(ctx context.Context, r *kmsg.FetchRequest) (codes []int16, failed bool) {
	if r.Version < 13 {
		return nil, false
	}
	codes, failed = make([]int16, len(r.Topics)), len(r.Topics) > 0
	for i := range r.Topics {
		t, found, err := s.topicByID(ctx, r.Topics[i].TopicID)
		switch {
		case err != nil:
			codes[i] = queryCode(err)
		case !found:
			codes[i] = kerr.UnknownTopicID.Code
		default:
			r.Topics[i].Topic, failed = t.Name, false
		}
	}
	return codes, failed
}
