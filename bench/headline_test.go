package bench

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The README's headline table is the latest results files' (make figures): a run that wrote
// new results without the table, or a hand edit of the table, fails here.
func TestREADMEHeadlineIsTheLatestResults(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	reps, err := ReadLatest("results")
	require.NoError(t, err)
	require.NotEmpty(t, reps, "no bench/results/latest*.json")
	want, err := SpliceHeadline(readme, Headline(reps))
	require.NoError(t, err)
	require.Equal(t, string(want), string(readme), "the README's headline is not the latest results': run make figures")
	// One row per result, each file's command and commit named.
	for _, r := range reps {
		for _, x := range r.Results {
			require.Contains(t, string(readme), "| "+chartName(x)+" | "+rate(x)+" |")
		}
		require.NotEmpty(t, r.Command, "%s records no command", r.file)
		require.Contains(t, string(readme), "`"+strings.Join(r.Command, " ")+"`")
	}
}

func TestSpliceHeadlineNeedsItsMarkers(t *testing.T) {
	_, err := SpliceHeadline([]byte("# no markers\n"), "x")
	require.Error(t, err)
	out, err := SpliceHeadline([]byte("a\n"+HeadlineBegin+"\nold\n"+HeadlineEnd+"\nb\n"), "new\n")
	require.NoError(t, err)
	require.Equal(t, "a\n"+HeadlineBegin+"\n\nnew\n\n"+HeadlineEnd+"\nb\n", string(out))
}
