package types_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/topics/types"
)

func TestAssignIsDeterministicAndComplete(t *testing.T) {
	parts := map[string]uint32{"a": 7, "b": 3, "c": 1}
	in := []types.AssignInput{{Member: "m3", Topics: []string{"a", "c"}}, {Member: "m1", Topics: []string{"a", "b"}}, {Member: "m2", Topics: []string{"b", "a"}}}
	for _, as := range []types.Assignor{types.ASSIGNOR_RANGE, types.ASSIGNOR_ROUND_ROBIN} {
		out := types.Assign(as, in, parts)
		require.Equal(t, out, types.Assign(as, in, parts))
		owned := map[string]int{}
		for i, tps := range out {
			for _, x := range tps {
				require.Contains(t, in[i].Topics, x.Topic, "only subscribed topics")
				for _, p := range x.Partitions {
					owned[x.Topic+"/"+string(rune('0'+p))]++
				}
			}
		}
		require.Len(t, owned, 11, "every partition assigned (%s)", as)
		for k, n := range owned {
			require.Equal(t, 1, n, "%s assigned once (%s)", k, as)
		}
	}
}
