package topics_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestModuleLinksNoClients keeps x/topics importable alone: a chain that uses the log module
// must not link the Kafka gateway, the Kafka client library or CometBFT's light client (the
// verifying reader), which are clients of the module wired by bftlogd. The compression codecs
// (lz4, zstd, snappy) are the module's own now: the keeper checks compressed record batches.
func TestModuleLinksNoClients(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	deps := goListDeps(t, ".")
	forbidden := []string{
		"github.com/twmb/franz-go",
		"github.com/cometbft/cometbft/light",
		"github.com/bftlog/bftlog/gateway",
		"github.com/bftlog/bftlog/x/topics/client/verify",
	}
	for _, d := range deps {
		for _, f := range forbidden {
			if strings.HasPrefix(d, f) { // client/verify also covers client/verifycli
				t.Errorf("x/topics links %s", d)
			}
		}
	}
	t.Logf("go list -deps ./x/topics: %d packages, none of %d forbidden prefixes", len(deps), len(forbidden))
}

// TestRecordStoreLinksNoKeeper keeps the record store a storage engine below the keeper: it
// knows record store keys (x/topics/types), not the module's state or its gas.
func TestRecordStoreLinksNoKeeper(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, d := range goListDeps(t, "./internal/recordstore") {
		if strings.HasPrefix(d, "github.com/bftlog/bftlog/x/topics/keeper") {
			t.Errorf("x/topics/internal/recordstore links %s", d)
		}
	}
}

// TestBatchCodecLinksNoModule keeps the Kafka batch codec a codec: types, the keeper and every
// client import it, so it imports nothing else of bftlog (types importing it would otherwise
// be a cycle, and clients would link the module's state to read a batch).
func TestBatchCodecLinksNoModule(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, d := range goListDeps(t, "./kbatch") {
		if strings.HasPrefix(d, "github.com/bftlog/bftlog/") && d != "github.com/bftlog/bftlog/x/topics/kbatch" {
			t.Errorf("x/topics/kbatch links %s", d)
		}
	}
}

// goListDeps lists the packages pkg links.
func goListDeps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}
