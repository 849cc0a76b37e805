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
	// The SDK appends the generic ABCI error of the query/simulate path; the module's own
	// error is the more precise one.
	msg = strings.TrimSuffix(strings.TrimSpace(msg), ": unknown request")
	if cs, code := types.FindError(msg); code != 0 {
		return fmt.Errorf("%s (codespace %s, code %d)", msg, cs, code)
	}
	return fmt.Errorf("%s", msg)
}
