package cli

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/bftlog/bftlog/x/topics/types"
)

var (
	stackRef = regexp.MustCompile(`\s*\[[^\]]*\.go:\d+\]`)
	gasUsed  = regexp.MustCompile(`\s*with gas used: '\d+'.*$`)
)

// PlainError turns an error that came back over gRPC or from a simulation into the module's
// own message with its stable code, e.g. "partition out of range: ... (codespace topics, code 5)".
func PlainError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, "desc = "); i >= 0 {
		msg = msg[i+len("desc = "):]
	}
	msg = strings.TrimPrefix(msg, "failed to execute message; ")
	msg = stackRef.ReplaceAllString(msg, "")
	msg = gasUsed.ReplaceAllString(msg, "")
	// The SDK appends the generic ABCI error of the query/simulate path, chosen by the gRPC
	// code of the module's error (NotFound: key not found, InvalidArgument: invalid request,
	// others: unknown request); the module's own error is the more precise one.
	msg = strings.TrimSpace(msg)
	for _, generic := range []string{": unknown request", ": key not found", ": invalid request"} {
		if strings.HasSuffix(msg, generic) {
			msg = strings.TrimSuffix(msg, generic)
			break
		}
	}
	if cs, code := types.FindError(msg); code != 0 {
		return fmt.Errorf("%s (codespace %s, code %d)", msg, cs, code)
	}
	return fmt.Errorf("%s", msg)
}
