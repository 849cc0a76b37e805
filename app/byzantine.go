//go:build byzantine

package app

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bftlog/bftlog/app/dataplane"
)

// A faulty validator for the e2e harness (tests/e2e/byzantine_dataplane_test.go), built only with
// -tags byzantine. BFTLOG_BYZANTINE lists what it does:
//   - junk: pushes 64 signed frames of random 2 KiB to every peer each 100 ms;
//   - withhold: answers every push '1' and holds nothing, serves no fetch;
//   - false-held: pushes its clients' transactions to one peer only and tells every peer that
//     more than two thirds hold them;
//   - lookalike: as proposer, names for each transaction a look-alike (one record byte flipped,
//     the same signatures), which it serves;
//   - unheld: as proposer, names look-alikes it serves to nobody.
//
// Each act is logged as "byzantine: <act>" so that the harness can tell it happened.
type byzantine struct {
	app  *App
	acts map[string]bool
	seen atomic.Int64
}

func newByzantine(app *App) *byzantine {
	v := os.Getenv("BFTLOG_BYZANTINE")
	if v == "" {
		return nil
	}
	b := &byzantine{app: app, acts: map[string]bool{}}
	for _, a := range strings.Split(v, ",") {
		b.acts[strings.TrimSpace(a)] = true
	}
	app.Logger().Error("byzantine: this node plays a faulty validator", "acts", v)
	return b
}

func (b *byzantine) on(act string) bool { return b != nil && b.acts[act] }

// faults are the data plane's faulty acts (dataplane.Faults), nil when it plays none.
func (b *byzantine) faults() dataplane.Faults {
	if b == nil {
		return nil
	}
	return b
}

// Withholds implements dataplane.Faults.
func (b *byzantine) Withholds() bool {
	if b.on("withhold") {
		b.log("withhold")
		return true
	}
	return false
}

func (b *byzantine) log(act string) {
	if b.seen.Add(1)%50 == 1 {
		b.app.Logger().Error("byzantine: "+act, "times", b.seen.Load())
	}
}

// PushTo implements dataplane.Faults.
func (b *byzantine) PushTo(peers int) (int, bool) {
	if !b.on("false-held") || peers == 0 {
		return peers, false
	}
	b.log("false-held")
	return 1, true
}

func (b *byzantine) proposal(txs [][]byte, height int64) [][]byte {
	if b == nil || !(b.on("lookalike") || b.on("unheld")) {
		return txs
	}
	out := make([][]byte, len(txs))
	for i, bz := range txs {
		out[i] = bz
		ref, ok := parseTxRef(bz)
		if !ok {
			continue
		}
		full, ok := b.app.plane.Get([32]byte(ref.TxHash))
		if !ok {
			continue
		}
		look := bytes.Clone(full)
		look[len(look)/2] ^= 1
		hash := sha256.Sum256(look)
		if b.on("lookalike") {
			b.app.plane.Keep(hash, look, height-1)
			b.log("lookalike")
		} else {
			b.log("unheld")
		}
		out[i] = TxRef(hash, len(look), ref.Signer)
	}
	return out
}

func (b *byzantine) start() {
	if !b.on("junk") {
		return
	}
	go func() {
		for range time.Tick(100 * time.Millisecond) {
			var body bytes.Buffer
			hashes := make([][32]byte, 64)
			for i := range hashes {
				frame := make([]byte, 2048)
				_, _ = rand.Read(frame)
				body.Write(binary.BigEndian.AppendUint32(nil, uint32(len(frame))))
				body.Write(frame)
				hashes[i] = sha256.Sum256(frame)
			}
			for _, peer := range b.app.plane.PushPeers() {
				req, err := http.NewRequest(http.MethodPost, peer+PushPath, bytes.NewReader(body.Bytes()))
				if err != nil {
					continue
				}
				b.app.plane.Keys().Sign(req.Header, PushPath, dataplane.FramesDigest(hashes))
				if res, err := http.DefaultClient.Do(req); err == nil {
					res.Body.Close()
				}
			}
			b.log("junk")
		}
	}()
}
