package testnet

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/creachadair/tomledit"
	"github.com/creachadair/tomledit/parser"
)

// Ports are one node's listeners.
type Ports struct {
	P2P, RPC, API, GRPC, DataPlane, Prometheus, Pprof int
}

// DefaultPorts are a node's ports where it has its host to itself: CometBFT's and the SDK's
// defaults, and the data plane's listener beside the API server (docs/digest-ordering.md).
var DefaultPorts = Ports{P2P: 26656, RPC: 26657, API: 1317, GRPC: 9090, DataPlane: 1318, Prometheus: 26660, Pprof: 6060}

// PortStep separates the ports of nodes that share an address: the k-th node on a host uses
// DefaultPorts + k×PortStep (no two of a node's defaults are PortStep apart or more within a
// group, so no port is handed out twice).
const PortStep = 10

// Layout gives node i, on hosts[i], its ports: the defaults for the first node on a host, each
// further node on the same host the next PortStep up.
func Layout(hosts []string) []Ports {
	seen := map[string]int{}
	out := make([]Ports, len(hosts))
	for i, h := range hosts {
		k := seen[h]
		seen[h]++
		d := k * PortStep
		p := DefaultPorts
		out[i] = Ports{P2P: p.P2P + d, RPC: p.RPC + d, API: p.API + d, GRPC: p.GRPC + d, DataPlane: p.DataPlane + d, Prometheus: p.Prometheus + d, Pprof: p.Pprof + d}
	}
	return out
}

// SetTOML sets keys of a TOML file (key, value, key, value, ...; a key is section.name, a
// value TOML, or a bare string), as `bftlogd config set` does, keeping comments. A key the file
// lacks is an error: a misspelt setting must not pass silently.
func SetTOML(path string, kv ...string) error {
	if len(kv)%2 != 0 {
		return fmt.Errorf("SetTOML %s: odd number of arguments", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	doc, err := tomledit.Parse(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for i := 0; i < len(kv); i += 2 {
		key, raw := kv[i], kv[i+1]
		found := doc.Find(strings.Split(key, ".")...)
		if len(found) != 1 || found[0].KeyValue == nil {
			return fmt.Errorf("%s: no single setting %s", path, key)
		}
		v, err := parser.ParseValue(raw)
		if err != nil {
			v = parser.MustValue(fmt.Sprintf("%q", raw))
		}
		found[0].Value = v
	}
	var buf bytes.Buffer
	if err := tomledit.Format(&buf, doc); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
