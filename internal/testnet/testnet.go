// Package testnet generates the homes of a network of validators, as the SDK's `testnet
// init-files` does, by the very commands operators run in a genesis ceremony (docs/deploy.md):
// init, a key, genesis accounts, a gentx each, collect-gentxs, the collected genesis copied to
// every home. `bftlogd testnet` runs it with its own binary and lays out ports, peers and the
// data plane; testutil/node builds its test networks with it, so the networks tests run and the
// ones operators get are made alike.
package testnet

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Runner runs a bftlogd command on node i's home (the runner adds --home) and returns its
// standard output.
type Runner func(i int, args ...string) (string, error)

// Spec is what Generate makes.
type Spec struct {
	ChainID string
	// Homes are the validators' home directories, one per validator.
	Homes []string
	// Moniker and Key name validator i's node and its key in its own test keyring.
	Moniker, Key func(i int) string
	// Balance is each validator account's genesis balance; SelfBond each gentx's self-delegation
	// (equal for all: equal power).
	Balance, SelfBond string
	// BeforeGentxs may add accounts to node 0's genesis and edit it (path given); the gentxs
	// are made on the result.
	BeforeGentxs func(genesis string) error
	// DataPlaneEndpoints, when set, are the validators' data-plane URLs: each node's data-plane
	// key and endpoint are registered in genesis (x/poa data_plane_endpoints), so the first
	// block already knows where and as whom each validator serves its data plane.
	DataPlaneEndpoints []string
}

// NewSpec is a network of len(homes) validators of equal power: node i is "node<i>", its key
// "val<i>", each funded with 10^12 stake and bonding 10^8.
func NewSpec(chainID string, homes []string) Spec {
	return Spec{
		ChainID:  chainID,
		Homes:    homes,
		Moniker:  func(i int) string { return fmt.Sprintf("node%d", i) },
		Key:      func(i int) string { return fmt.Sprintf("val%d", i) },
		Balance:  "1000000000000stake",
		SelfBond: "100000000stake",
	}
}

// Result is what Generate made.
type Result struct {
	// Genesis is the collected genesis file (node 0's), copied to every home.
	Genesis string
	// NodeIDs are the validators' CometBFT node ids; Operators their bftlogvaloper addresses
	// (with Spec.DataPlaneEndpoints).
	NodeIDs, Operators []string
}

// Generate runs the ceremony: each validator's init and key, the validators' genesis accounts
// on node 0, BeforeGentxs, each validator's gentx on that genesis, collect-gentxs on node 0,
// the data-plane endpoints (if any), and the collected genesis copied to every home.
func Generate(run Runner, s Spec) (Result, error) {
	var res Result
	n := len(s.Homes)
	if n == 0 {
		return res, fmt.Errorf("no validators")
	}
	test := []string{"--keyring-backend", "test"}
	for i := 0; i < n; i++ {
		if _, err := run(i, "init", s.Moniker(i), "--chain-id", s.ChainID); err != nil {
			return res, err
		}
		if _, err := run(i, append([]string{"keys", "add", s.Key(i)}, test...)...); err != nil {
			return res, err
		}
	}
	for i := 0; i < n; i++ {
		addr, err := run(i, append([]string{"keys", "show", s.Key(i), "-a"}, test...)...)
		if err != nil {
			return res, err
		}
		if _, err := run(0, "genesis", "add-genesis-account", strings.TrimSpace(addr), s.Balance); err != nil {
			return res, err
		}
	}
	res.Genesis = filepath.Join(s.Homes[0], "config", "genesis.json")
	if s.BeforeGentxs != nil {
		if err := s.BeforeGentxs(res.Genesis); err != nil {
			return res, err
		}
	}
	gentxDir := filepath.Join(s.Homes[0], "config", "gentx")
	if err := os.MkdirAll(gentxDir, 0o755); err != nil {
		return res, err
	}
	for i := 0; i < n; i++ {
		if i > 0 {
			if err := copyFile(res.Genesis, filepath.Join(s.Homes[i], "config", "genesis.json")); err != nil {
				return res, err
			}
		}
		out := filepath.Join(gentxDir, fmt.Sprintf("gentx-%d.json", i))
		args := append([]string{"genesis", "gentx", s.Key(i), s.SelfBond, "--chain-id", s.ChainID, "--output-document", out}, test...)
		if _, err := run(i, args...); err != nil {
			return res, err
		}
	}
	if _, err := run(0, "genesis", "collect-gentxs", "--gentx-dir", gentxDir); err != nil {
		return res, err
	}
	for i, endpoint := range s.DataPlaneEndpoints {
		op, err := run(i, append([]string{"keys", "show", s.Key(i), "-a", "--bech", "val"}, test...)...)
		if err != nil {
			return res, err
		}
		res.Operators = append(res.Operators, strings.TrimSpace(op))
		// The key's proof binds it to this operator (x/poa), so it is made on the node that
		// holds the key and written into the coordinator's genesis.
		flags, err := run(i, "data-plane-key", "--operator", res.Operators[i])
		if err != nil {
			return res, err
		}
		args := append([]string{"genesis", "set-data-plane-endpoint", res.Operators[i], endpoint}, strings.Fields(flags)...)
		if _, err := run(0, args...); err != nil {
			return res, err
		}
	}
	for i := 0; i < n; i++ {
		if i > 0 {
			if err := copyFile(res.Genesis, filepath.Join(s.Homes[i], "config", "genesis.json")); err != nil {
				return res, err
			}
		}
		id, err := run(i, "comet", "show-node-id")
		if err != nil {
			return res, err
		}
		res.NodeIDs = append(res.NodeIDs, strings.TrimSpace(id))
	}
	return res, nil
}

// Peer is a node as the others reach it.
type Peer struct {
	ID      string // CometBFT node id
	Host    string // address or name
	P2PPort int
	// DataPlane is the URL of its data plane (its ordering.listen-address, or its API server).
	DataPlane string
}

// PersistentPeers is CometBFT's p2p.persistent_peers for node self: every other node.
func PersistentPeers(peers []Peer, self int) string {
	var out []string
	for j, p := range peers {
		if j != self {
			out = append(out, p.ID+"@"+net.JoinHostPort(p.Host, strconv.Itoa(p.P2PPort)))
		}
	}
	return strings.Join(out, ",")
}

// DataPlanePeers is ordering.peers for node self: every other node's data plane.
func DataPlanePeers(peers []Peer, self int) []string {
	var out []string
	for j, p := range peers {
		if j != self {
			out = append(out, p.DataPlane)
		}
	}
	return out
}

func copyFile(from, to string) error {
	bz, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, bz, 0o644)
}
