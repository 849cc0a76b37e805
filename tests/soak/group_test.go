//go:build soak

package soak

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"sync"
	"time"

	"github.com/bftlog/bftlog/x/topics/client/consumer"
	"github.com/bftlog/bftlog/x/topics/types"
)

// groupLog is the consumer group's history as its members saw it: every delivery and every
// acknowledged commit, checked as they happen.
//
// The rule checked (Kafka's): once a commit of offset c for a partition is acknowledged in
// generation g', no member working in a generation g >= g' may be handed a record of that
// partition below c from a poll that started after the acknowledgement. A member of a stale
// generation (g < g': it has not yet learned of the rebalance, its commits are fenced) may
// still read below c — Kafka's zombie consumer — so those deliveries are counted, not failed.
type groupLog struct {
	r  *run
	mu sync.Mutex
	// commits[p][g] is the largest acknowledged commit of partition p made in generation g.
	commits []map[uint64]uint64
	// delivered[p][o] counts the deliveries of offset o of partition p (saturating).
	delivered  [][]uint8
	deliveries uint64
	commitsN   int
	rebalances int
	rejoins    int
	churns     int
	zombies    uint64 // deliveries below a commit of a later generation (allowed)
	violations uint64
	maxGen     uint64
}

func newGroupLog(r *run) *groupLog {
	g := &groupLog{r: r, commits: make([]map[uint64]uint64, partitions), delivered: make([][]uint8, partitions)}
	for p := range g.commits {
		g.commits[p] = map[uint64]uint64{}
	}
	return g
}

// floors snapshots, at a poll's start, per partition the largest acknowledged commit a member
// in generation gen must respect, and the largest of any generation.
func (g *groupLog) floors(gen uint64) (own, all []uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	own, all = make([]uint64, partitions), make([]uint64, partitions)
	for p, byGen := range g.commits {
		for cg, off := range byGen {
			all[p] = max(all[p], off)
			if cg <= gen {
				own[p] = max(own[p], off)
			}
		}
	}
	return own, all
}

// deliver checks and counts a poll's records.
func (g *groupLog) deliver(member string, gen uint64, own, all []uint64, recs []consumer.Record) {
	for _, rec := range recs {
		if rec.Topic != topic || int(rec.Partition) >= partitions {
			g.r.problem("%s was handed a record of %s/%d", member, rec.Topic, rec.Partition)
			continue
		}
		p := int(rec.Partition)
		if err := g.r.checkRecord(p, rec.Record); err != nil {
			g.r.problem("%s: delivered %v", member, err)
		}
		g.mu.Lock()
		switch {
		case rec.Offset < own[p]:
			g.violations++
			if g.violations <= 20 {
				g.r.problem("%s (generation %d) was handed %s/%d offset %d after a commit of offset %d in generation <= %d was acknowledged",
					member, gen, topic, p, rec.Offset, own[p], gen)
			}
		case rec.Offset < all[p]:
			g.zombies++
		}
		d := g.delivered[p]
		for uint64(len(d)) <= rec.Offset {
			d = append(d, make([]uint8, max(1024, len(d)))...)
		}
		if d[rec.Offset] < 255 {
			d[rec.Offset]++
		}
		g.delivered[p] = d
		g.deliveries++
		g.mu.Unlock()
	}
	g.r.rec.Consumed(time.Now(), len(recs))
}

// committed records an acknowledged commit.
func (g *groupLog) committed(msg *types.MsgCommitOffsets) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.commitsN++
	g.maxGen = max(g.maxGen, msg.Generation)
	for _, o := range msg.Offsets {
		if int(o.Partition) < partitions {
			g.commits[o.Partition][msg.Generation] = max(g.commits[o.Partition][msg.Generation], o.Offset)
		}
	}
}

// committedAll tells whether every partition has an acknowledged commit of at least want[p].
func (g *groupLog) committedAll(want []uint64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for p, byGen := range g.commits {
		var best uint64
		for _, off := range byGen {
			best = max(best, off)
		}
		if best < want[p] {
			return false
		}
	}
	return true
}

// checkRecord checks that a record read from the chain is the one acknowledged at its offset.
func (r *run) checkRecord(p int, rec types.Record) error {
	kp, n, ok := parseKey(rec.Key.GetData())
	if !ok || kp != p {
		return fmt.Errorf("%s/%d offset %d has key %q, not one of producer %d's", topic, p, rec.Offset, rec.Key.GetData(), p)
	}
	if !bytes.Equal(rec.Value.GetData(), recordValue(p, n)) {
		return fmt.Errorf("%s/%d offset %d: record %d's value differs from what was produced", topic, p, rec.Offset, n)
	}
	if id, acked := r.prods[p].idAt(rec.Offset); acked && id != n {
		return fmt.Errorf("%s/%d offset %d holds record %d, but record %d was acknowledged there", topic, p, rec.Offset, n, id)
	}
	return nil
}

// member is one consumer of the group; it reconnects to another node when its node fails.
// The churner leaves and rejoins the group at random (seeded) times, so that rebalances
// happen on purpose as well as when sessions expire.
type member struct {
	r       *run
	acct    account
	epIdx   int
	churner bool
	rng     *mathrand.Rand
}

func (m *member) run(ctx context.Context) {
	r, g := m.r, m.r.group
	var c *consumer.GroupConsumer
	nextChurn := time.Now().Add(m.churnGap())
	drop := func() { c, m.epIdx = nil, (m.epIdx+1)%len(r.eps) }
	for ctx.Err() == nil {
		if c == nil {
			cctx, signer, err := connect(m.acct, r.eps[m.epIdx], false)
			if err == nil {
				jctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				c, err = consumer.Join(jctx, cctx, signer, group, []string{topic})
				cancel()
			}
			if err != nil {
				drop()
				time.Sleep(500 * time.Millisecond)
				continue
			}
			g.mu.Lock()
			g.rejoins++
			g.mu.Unlock()
		}
		if m.churner && time.Now().After(nextChurn) && r.stopAt.Load() == 0 {
			if err := c.Leave(ctx); err == nil {
				g.mu.Lock()
				g.churns++
				g.mu.Unlock()
				time.Sleep(time.Duration(3+m.rng.IntN(10)) * time.Second)
			}
			c, nextChurn = nil, time.Now().Add(m.churnGap())
			continue
		}
		gen := c.Generation()
		own, all := g.floors(gen)
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		recs, err := c.Poll(pctx, pollRecords)
		cancel()
		if err != nil {
			drop()
			continue
		}
		g.deliver(m.acct.name, gen, own, all, recs)
		msg := c.CommitMsg()
		err = c.Commit(ctx)
		switch {
		case errors.Is(err, consumer.ErrRebalanced):
			g.mu.Lock()
			g.rebalances++
			g.mu.Unlock()
		case err != nil:
			drop()
		default:
			if msg != nil {
				g.committed(msg)
			}
		}
		if len(recs) == 0 {
			time.Sleep(300 * time.Millisecond)
		}
	}
	if c != nil {
		_ = c.Leave(context.Background())
	}
}

func (m *member) churnGap() time.Duration { return time.Duration(30+m.rng.IntN(40)) * time.Second }
