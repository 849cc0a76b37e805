package types_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/topics/types"
)

// Kafka's murmur2 test vectors (org.apache.kafka.common.utils.UtilsTest).
func TestMurmur2MatchesKafka(t *testing.T) {
	cases := map[string]int32{
		"21":                         -973932308,
		"foobar":                     -790332482,
		"a-little-bit-long-string":   -985981536,
		"a-little-bit-longer-string": -1486304829,
		"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
		"abc": 479470107,
	}
	for in, want := range cases {
		require.Equal(t, want, types.Murmur2([]byte(in)), in)
	}
}
