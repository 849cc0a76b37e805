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
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
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
