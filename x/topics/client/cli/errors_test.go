package cli

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPlainError(t *testing.T) {
	cases := map[string]string{
		`rpc error: code = Unknown desc = failed to execute message; message index: 0: batch 0: topic "demo" has 3 partitions, asked for partition 7: partition out of range [/work/main/x/topics/keeper/produce.go:96] with gas used: '32670': unknown request`: `message index: 0: batch 0: topic "demo" has 3 partitions, asked for partition 7: partition out of range (codespace topics, code 5)`,
		`rpc error: code = Unknown desc = offset 99999 of demo/0 is outside [log start offset 0, high watermark 2]: offset out of range: unknown request`:                                                                                                        `offset 99999 of demo/0 is outside [log start offset 0, high watermark 2]: offset out of range (codespace topics, code 12)`,
		`rpc error: code = Unknown desc = rpc error: code = Unknown desc = topic "x" does not exist: unknown topic`:                                                                                                                                              `topic "x" does not exist: unknown topic (codespace topics, code 4)`,
		// Query errors with a gRPC code get the SDK's matching generic error appended.
		`rpc error: code = NotFound desc = topic "x" does not exist: unknown topic: key not found`:           `topic "x" does not exist: unknown topic (codespace topics, code 4)`,
		`rpc error: code = InvalidArgument desc = offset 5 must be below 3: invalid offset: invalid request`: `offset 5 must be below 3: invalid offset (codespace topics, code 31)`,
		`connection refused`: `connection refused`,
	}
	for in, want := range cases {
		require.Equal(t, want, PlainError(errors.New(in)).Error())
	}
}
