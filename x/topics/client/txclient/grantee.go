package txclient

import (
	"github.com/cosmos/gogoproto/proto"

	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/x/authz"

	"github.com/bftlog/bftlog/x/topics/types"
)

// UseGrant makes the signer produce in granter's name as its x/authz grantee (a topic owner's
// ProduceAuthorization or GenericAuthorization of MsgProduce): Producer is then granter, and
// each MsgProduce naming granter is sent inside a MsgExec the signer signs. Everything else
// (groups, offsets, topics) is still signed and sent as the signer's own.
func (s *Signer) UseGrant(granter string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.granter = granter
}

// Producer is the account a MsgProduce of this signer names: the granter with UseGrant, else
// the signer itself.
func (s *Signer) Producer() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.granter != "" {
		return s.granter
	}
	return s.clientCtx.GetFromAddress().String()
}

// asGrantee is msgs with those the granter must sign (its MsgProduce) inside one MsgExec, in
// the place of the first; msgs as they are without a grant. s.mu is held.
func (s *Signer) asGrantee(msgs []sdk.Msg) []sdk.Msg {
	if s.granter == "" {
		return msgs
	}
	var out, granted []sdk.Msg
	at := -1
	for _, m := range msgs {
		if pm, ok := m.(*types.MsgProduce); ok && pm.Producer == s.granter {
			if at < 0 {
				at = len(out)
				out = append(out, nil)
			}
			granted = append(granted, m)
			continue
		}
		out = append(out, m)
	}
	if at < 0 {
		return msgs
	}
	exec := authz.NewMsgExec(s.clientCtx.GetFromAddress(), granted)
	out[at] = &exec
	return out
}

// innerMsgs is msgs with each MsgExec's messages in its place: what the chain runs.
func innerMsgs(msgs ...sdk.Msg) []sdk.Msg {
	var out []sdk.Msg
	for _, m := range msgs {
		if exec, ok := m.(*authz.MsgExec); ok {
			if inner, err := exec.GetMessages(); err == nil {
				out = append(out, inner...)
				continue
			}
		}
		out = append(out, m)
	}
	return out
}

var execResponseURL = "/" + proto.MessageName(&authz.MsgExecResponse{})

// execResults are the inner messages' responses of a MsgExec's response: the bytes of each,
// without its type (x/authz keeps only the data).
func execResults(value []byte) ([][]byte, error) {
	var res authz.MsgExecResponse
	if err := res.Unmarshal(value); err != nil {
		return nil, err
	}
	return res.Results, nil
}
