package dataplane

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"net/http"
	"slices"
	"strconv"
)

// Availability receipts. A validator's signed answer to a push says, frame by frame, which
// transactions it holds: that signature (over the request's frame hashes and the answer,
// keys.go) is a receipt anyone can check who has the frame hashes. The node that
// pushed a batch collects its peers' receipts, and when more than two thirds of the voting
// power hold a transaction (its own included: it took the transaction from its client) it
// tells the others so with the receipts attached (HeldPath). A receiver counts only receipts
// whose signatures check against the validator set, each validator once: a pusher's word alone
// proves nothing, and a receipt that lies is its signer's signed statement. A proposer then
// names the transaction at once; every voter still fetches what it lacks and syncs it to disk
// before it votes (the prevote rule), which stays the guarantee.

// Receipt is one validator's signed answer to one push request.
type Receipt struct {
	signer string // consensus address, upper-case hex
	at     int64  // Unix ms the answer was signed at
	sig    []byte
	hashes [][32]byte // the request's frames, in order
	answer []byte     // '1' for a frame it holds, '0' otherwise
}

// verifyReceipt checks r's signature as the answer to a push of its frames, and returns its
// signer's power (maxSkew bounds its age, as for any signed request).
func (k *Keys) verifyReceipt(r *Receipt) (int64, error) {
	if len(r.answer) != len(r.hashes) {
		return 0, errBadReceipt
	}
	h := http.Header{}
	h.Set(HeaderValidator, r.signer)
	h.Set(HeaderSignedAt, strconv.FormatInt(r.at, 10))
	h.Set(HeaderSignature, base64.StdEncoding.EncodeToString(r.sig))
	_, power, err := k.verify(h, PushPath+answerPathSuffix, answerDigest(FramesDigest(r.hashes), r.answer))
	return power, err
}

var errBadReceipt = errors.New("malformed receipt")

// encodeHeld is a HeldPath body: the hashes the sender says more than two thirds hold, then
// the receipts that show it. All integers big-endian:
//
//	u32 claims, claims × 32-byte SHA-256
//	u32 receipts, each: u8 len + signer, u64 signed-at ms, u8 len + signature,
//	                    u32 frames, frames × 32-byte SHA-256, frames answer bytes
func encodeHeld(claims [][32]byte, receipts []*Receipt) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(claims)))
	for _, c := range claims {
		b = append(b, c[:]...)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(receipts)))
	for _, r := range receipts {
		b = append(b, byte(len(r.signer)))
		b = append(b, r.signer...)
		b = binary.BigEndian.AppendUint64(b, uint64(r.at))
		b = append(b, byte(len(r.sig)))
		b = append(b, r.sig...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(r.hashes)))
		for _, h := range r.hashes {
			b = append(b, h[:]...)
		}
		b = append(b, r.answer...)
	}
	return b
}

// heldSize is what r adds to a HeldPath body.
func (r *Receipt) heldSize() int {
	return 1 + len(r.signer) + 8 + 1 + len(r.sig) + 4 + 33*len(r.hashes)
}

// decodeHeld parses a HeldPath body; every count is checked against what is left of it.
func decodeHeld(b []byte) (claims [][32]byte, receipts []*Receipt, err error) {
	u32 := func() (int, bool) {
		if len(b) < 4 {
			return 0, false
		}
		v := binary.BigEndian.Uint32(b)
		b = b[4:]
		return int(v), true
	}
	bytesN := func(n int) ([]byte, bool) {
		if n < 0 || len(b) < n {
			return nil, false
		}
		v := b[:n]
		b = b[n:]
		return v, true
	}
	n, ok := u32()
	if !ok || n > len(b)/32 {
		return nil, nil, errBadReceipt
	}
	for i := 0; i < n; i++ {
		v, _ := bytesN(32)
		claims = append(claims, [32]byte(v))
	}
	if n, ok = u32(); !ok || n > maxHeldReceipts || n > len(b)/80 {
		return nil, nil, errBadReceipt
	}
	for i := 0; i < n; i++ {
		r := &Receipt{}
		l, ok := bytesN(1)
		if !ok {
			return nil, nil, errBadReceipt
		}
		s, ok := bytesN(int(l[0]))
		if !ok {
			return nil, nil, errBadReceipt
		}
		r.signer = string(s)
		at, ok := bytesN(8)
		if !ok {
			return nil, nil, errBadReceipt
		}
		r.at = int64(binary.BigEndian.Uint64(at))
		if l, ok = bytesN(1); !ok {
			return nil, nil, errBadReceipt
		}
		if r.sig, ok = bytesN(int(l[0])); !ok {
			return nil, nil, errBadReceipt
		}
		frames, ok := u32()
		if !ok || frames > maxPushFrames || frames > len(b)/33 {
			return nil, nil, errBadReceipt
		}
		r.hashes = make([][32]byte, frames)
		for j := range r.hashes {
			v, _ := bytesN(32)
			r.hashes[j] = [32]byte(v)
		}
		r.answer, _ = bytesN(frames)
		receipts = append(receipts, r)
	}
	if len(b) != 0 {
		return nil, nil, errBadReceipt
	}
	return claims, receipts, nil
}

// receiptOf is the receipt in a push answer's headers (nil if they carry none that parses).
func receiptOf(h http.Header, hashes [][32]byte, answer []byte) *Receipt {
	at, err := strconv.ParseInt(h.Get(HeaderSignedAt), 10, 64)
	if err != nil {
		return nil
	}
	sig, err := base64.StdEncoding.DecodeString(h.Get(HeaderSignature))
	if err != nil {
		return nil
	}
	return &Receipt{signer: h.Get(HeaderValidator), at: at, sig: sig, hashes: hashes, answer: answer}
}

// provenHeld are the claims that the receipts show held by more than two thirds of the voting
// power, counting the sender (sender, senderPower) and each validator whose receipt checks once.
func (k *Keys) provenHeld(claims [][32]byte, receipts []*Receipt, sender string, senderPower int64) (proven [][32]byte, bad int) {
	_, total := k.powers()
	if total <= 0 {
		return nil, 0
	}
	power := map[[32]byte]int64{}
	counted := map[[32]byte][]string{}
	for _, r := range receipts {
		p, err := k.verifyReceipt(r)
		if err != nil || r.signer == sender {
			bad++
			continue
		}
		for i, h := range r.hashes {
			if r.answer[i] != '1' || slices.Contains(counted[h], r.signer) {
				continue
			}
			counted[h] = append(counted[h], r.signer)
			power[h] += p
		}
	}
	for _, c := range claims {
		if 3*(senderPower+power[c]) > 2*total {
			proven = append(proven, c)
		}
	}
	return proven, bad
}
