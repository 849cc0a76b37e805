package kafka

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiInDoc is a Kafka API with its versions as the docs write them: "Fetch (4–17", "OffsetDelete (0".
var apiInDoc = regexp.MustCompile(`([A-Z][A-Za-z]+) \((\d+)(?:–(\d+))?`)

// TestDocsListEveryAPIKey checks the API tables of the README's Kafka section and of
// docs/kafka.md against what the gateway answers: every API key, with exactly its versions.
func TestDocsListEveryAPIKey(t *testing.T) {
	want := map[string]string{}
	for key, v := range versions {
		want[strings.ToLower(kmsg.NameForKey(int16(key)))] = fmt.Sprintf("%d–%d", v[0], v[1])
	}
	for _, doc := range []struct{ file, from, to string }{
		{"../../README.md", "\n## Kafka\n", "\n## "},
		{"../../docs/kafka.md", "| Kafka request (versions) |", "\n\n"},
	} {
		bz, err := os.ReadFile(doc.file)
		require.NoError(t, err)
		text := string(bz)
		i := strings.Index(text, doc.from)
		require.GreaterOrEqual(t, i, 0, "%s has no %q", doc.file, doc.from)
		text = text[i+len(doc.from):]
		if j := strings.Index(text, doc.to); j >= 0 {
			text = text[:j]
		}
		got := map[string]string{}
		for _, line := range strings.Split(text, "\n") {
			cells := strings.Split(line, "|")
			if len(cells) < 3 {
				continue
			}
			for _, m := range apiInDoc.FindAllStringSubmatch(cells[1], -1) {
				hi := m[3]
				if hi == "" {
					hi = m[2]
				}
				name := strings.ToLower(m[1])
				require.NotContains(t, got, name, "%s names %s twice", doc.file, m[1])
				got[name] = m[2] + "–" + hi
			}
		}
		require.Equal(t, want, got, "%s lists the API keys and versions the gateway answers (versions.go)", doc.file)
	}
}
