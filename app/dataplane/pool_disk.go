package dataplane

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// Height files: what a proposal names is written to <home>/data/pool/<height> and synced before
// this node votes for it, so it can execute the block again after a crash and serve it to a peer.
// An entry is the transaction's SHA-256, its length (big-endian uint32) and its bytes.

const diskEntryHeader = 32 + 4 // sha256, big-endian length

type diskTx struct {
	height int64
	off    int64
	size   int
}

// loadIndex reads the height files' entry headers; a torn last entry (a crash while writing,
// before the sync that precedes any vote) is cut off.
func (p *Pool) loadIndex() error {
	names, err := os.ReadDir(p.dir)
	if err != nil {
		return err
	}
	for _, e := range names {
		h, err := strconv.ParseInt(e.Name(), 10, 64)
		if err != nil {
			continue
		}
		f, err := os.OpenFile(filepath.Join(p.dir, e.Name()), os.O_RDWR, 0)
		if err != nil {
			return err
		}
		// Only a torn or damaged entry ends the scan early: an error reading or sizing the file
		// must not cut whole entries off.
		st, err := f.Stat()
		var off int64
		var hdr [diskEntryHeader]byte
		for err == nil {
			if _, err = f.ReadAt(hdr[:], off); err != nil {
				break
			}
			// Past the end of the file, or larger than any transaction the pool holds (admit):
			// damaged, and what follows cannot be found.
			size := int64(binary.BigEndian.Uint32(hdr[32:]))
			if size > maxPoolMemBytes/4 || off+diskEntryHeader+size > st.Size() {
				break
			}
			hash := [32]byte(hdr[:32])
			// Written again at a later height (persist): the newest copy is kept longest, and the
			// files are read in name order, not by height.
			if d, ok := p.disk[hash]; !ok || d.height < h {
				p.disk[hash] = diskTx{height: h, off: off + diskEntryHeader, size: int(size)}
			}
			p.byHeight[h] = append(p.byHeight[h], hash)
			off += diskEntryHeader + size
		}
		if errors.Is(err, io.EOF) { // a torn header
			err = nil
		}
		if err == nil {
			p.diskBytes[h] = off
			p.onDisk += off
			err = f.Truncate(off)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (p *Pool) readDisk(d diskTx) ([]byte, error) {
	f, err := os.Open(filepath.Join(p.dir, strconv.FormatInt(d.height, 10)))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	bz := make([]byte, d.size)
	_, err = f.ReadAt(bz, d.off)
	return bz, err
}

// Seams for tests (pool_disk_test.go): a failed write and a directory's sync are otherwise
// unobservable.
var (
	poolWriteAt = (*os.File).WriteAt
	syncDir     = func(dir string) error {
		d, err := os.Open(dir)
		if err != nil {
			return err
		}
		return errors.Join(d.Sync(), d.Close())
	}
)

// Persist writes the named transactions not in height's file yet to it and syncs it: done
// before this node votes for a proposal that names them. One written at an older height is
// written again: that height's file goes first, and this block's replay or a peer asking for
// it would find nothing.
func (p *Pool) Persist(height int64, txs map[[32]byte][]byte) (err error) {
	if p.dir == "" || len(txs) == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	hashes := make([][32]byte, 0, len(txs))
	for h := range txs {
		if d, ok := p.disk[h]; !ok || d.height < height {
			hashes = append(hashes, h)
		}
	}
	if len(hashes) == 0 {
		return nil
	}
	slices.SortFunc(hashes, func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) })
	// A new file's name is durable only once its directory is synced too: O_EXCL tells one.
	name := filepath.Join(p.dir, strconv.FormatInt(height, 10))
	f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	created := err == nil
	if errors.Is(err, os.ErrExist) {
		f, err = os.OpenFile(name, os.O_RDWR, 0)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	off := int64(-1)
	defer func() {
		// A partial entry left in place would be read as the header of the next one appended
		// after it. A new file goes whole, so that the next attempt creates it, and syncs its
		// directory, again.
		switch {
		case err == nil:
		case created:
			err = errors.Join(err, os.Remove(name))
		case off >= 0:
			err = errors.Join(err, f.Truncate(off))
		}
	}()
	if off, err = f.Seek(0, io.SeekEnd); err != nil {
		off = -1
		return err
	}
	var hdr [diskEntryHeader]byte
	placed := make([]diskTx, len(hashes))
	w := off
	for i, h := range hashes {
		bz := txs[h]
		copy(hdr[:32], h[:])
		binary.BigEndian.PutUint32(hdr[32:], uint32(len(bz)))
		if _, err := poolWriteAt(f, hdr[:], w); err != nil {
			return err
		}
		if _, err := poolWriteAt(f, bz, w+diskEntryHeader); err != nil {
			return err
		}
		placed[i] = diskTx{height: height, off: w + diskEntryHeader, size: len(bz)}
		w += diskEntryHeader + int64(len(bz))
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if created {
		if err := syncDir(p.dir); err != nil {
			return err
		}
	}
	// A copy at an older height stays in its file, unindexed (committed deletes by height).
	for i, h := range hashes {
		p.disk[h] = placed[i]
		p.byHeight[height] = append(p.byHeight[height], h)
	}
	p.diskBytes[height] += w - off
	p.onDisk += w - off
	return nil
}
