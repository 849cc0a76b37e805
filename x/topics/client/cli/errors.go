package cli

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/bftlog/bftlog/x/topics/client/txclient"
	"github.com/bftlog/bftlog/x/topics/types"
)

var (
	stackRef = regexp.MustCompile(`\s*\[[^\]]*\.go:\d+\]`)
	gasUsed  = regexp.MustCompile(`\s*with gas used: '\d+'.*$`)
)

// PlainError turns an error into the module's own message for display. The codespace and code
// come from the error itself, never from its words:
//   - a transaction the chain refused (txclient.TxError) ends with its codespace and code; a
//     refused simulation shows the module's message without the SDK's wrapping, e.g.
//     "message index: 0: ...: partition out of range (codespace topics, code 5)";
//   - an x/topics error raised on this side (a verification failure, an offset checked against
//     the partition) ends with its codespace and code too;
//   - a query's error arrives as a gRPC status that kept only the text: it is shown without the
//     gRPC wrapping and without a code.
//
// The result still unwraps to err.
func PlainError(err error) error {
	if err == nil {
		return nil
	}
	if p, ok := err.(*plainError); ok { // commands and main both call it: add the code once
		return p
	}
	var txErr *txclient.TxError
	if errors.As(err, &txErr) {
		if txErr.Stage != txclient.Simulated {
			return &plainError{msg: clean(err.Error()), err: err} // it names the transaction and code
		}
		msg := strings.TrimPrefix(txErr.Log, "failed to simulate tx: ")
		return &plainError{msg: fmt.Sprintf("%s (codespace %s, code %d)", clean(msg), txErr.Codespace(), txErr.ABCICode()), err: err}
	}
	msg := clean(err.Error())
	var coded interface {
		Codespace() string
		ABCICode() uint32
	}
	if errors.As(err, &coded) && coded.Codespace() == types.ModuleName {
		msg = fmt.Sprintf("%s (codespace %s, code %d)", msg, coded.Codespace(), coded.ABCICode())
	}
	return &plainError{msg: msg, err: err}
}

// clean strips what the SDK and gRPC add around a module's message: the status wrapping, the
// message index prefix of a failed execution, stack references, the gas used, and the generic
// error the query and simulate paths append.
func clean(msg string) string {
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
	return msg
}

// plainError is an error's display text; errors.Is and errors.As still see the error.
type plainError struct {
	msg string
	err error
}

func (e *plainError) Error() string { return e.msg }
func (e *plainError) Unwrap() error { return e.err }
