package app

// The JSON text of the SDK's answers as the explorer view (ordering_query.go) reads and
// rewrites it: cheap scans before any parse, and splices that copy an answer once.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"

	"github.com/bftlog/bftlog/app/ordering"
)

// spanOf is where the value at path (object keys from the top) lies in a JSON text.
func spanOf(body []byte, path ...string) (from, to int, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	depth := 0 // of path matched so far
	for {
		tok, err := dec.Token()
		if err != nil {
			return 0, 0, false
		}
		if d, isDelim := tok.(json.Delim); !isDelim || d != '{' {
			return 0, 0, false
		}
		for {
			key, err := dec.Token()
			if err != nil {
				return 0, 0, false
			}
			if d, isDelim := key.(json.Delim); isDelim && d == '}' {
				return 0, 0, false // the key is not there
			}
			if key != path[depth] {
				var skip json.RawMessage
				if dec.Decode(&skip) != nil {
					return 0, 0, false
				}
				continue
			}
			if depth++; depth < len(path) {
				break // into the value, an object
			}
			at := int(dec.InputOffset())
			var value json.RawMessage
			if dec.Decode(&value) != nil {
				return 0, 0, false
			}
			to := int(dec.InputOffset())
			from := bytes.Index(body[at:to], value[:1]) + at
			return from, to, true
		}
	}
}

// typeURLInBase64 is the reference's type URL as it reads inside base64 text, at each of the
// three alignments (block.data.txs holds transactions' bytes in base64).
var typeURLInBase64 = func() (out [3][]byte) {
	for k := range out {
		enc := base64.StdEncoding.EncodeToString(append(make([]byte, k), ordering.TypeURL...))
		from := 0
		if k > 0 {
			from = 4 // the first group mixes in the padding bytes
		}
		out[k] = []byte(enc[from : 4*((k+len(ordering.TypeURL))/3)])
	}
	return out
}()

// namesReference says whether an answer may name a reference: its JSON or a transaction's
// base64 holds the MsgOrderedTx type URL. A cheap scan before any parse.
func namesReference(body []byte) bool {
	if bytes.Contains(body, []byte(ordering.TypeURL)) {
		return true
	}
	for _, in64 := range typeURLInBase64 {
		if bytes.Contains(body, in64) {
			return true
		}
	}
	return false
}

// withField adds "key": value to a JSON object's text, copying it once.
func withField(obj []byte, key string, value json.RawMessage) ([]byte, bool) {
	end := bytes.LastIndexByte(obj, '}')
	start := bytes.IndexByte(obj, '{')
	if start < 0 || end < start {
		return nil, false
	}
	out := make([]byte, 0, len(obj)+len(key)+len(value)+4)
	out = append(out, obj[:end]...)
	if len(bytes.TrimSpace(obj[start+1:end])) != 0 {
		out = append(out, ',')
	}
	out = append(append(append(out, mustJSON(key)...), ':'), value...)
	return append(out, obj[end:]...), true
}

// mustJSON marshals what came from JSON, or plain values, which always marshal.
func mustJSON(v any) json.RawMessage {
	bz, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return bz
}

// bufferedResponse holds the SDK's answer until it is known to be final.
type bufferedResponse struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header         { return b.header }
func (b *bufferedResponse) WriteHeader(code int)        { b.code = code }
func (b *bufferedResponse) Write(p []byte) (int, error) { return b.body.Write(p) }

// setBody replaces the answer's body; its length is then the server's to set.
func (b *bufferedResponse) setBody(body []byte) {
	b.body = *bytes.NewBuffer(body)
	b.header.Del("Content-Length")
}

func (b *bufferedResponse) writeTo(w http.ResponseWriter) {
	for k, vals := range b.header {
		w.Header()[k] = vals
	}
	w.WriteHeader(b.code)
	_, _ = w.Write(b.body.Bytes())
}
