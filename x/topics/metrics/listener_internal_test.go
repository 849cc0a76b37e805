package metrics

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/x/authz"

	"github.com/bftlog/bftlog/x/topics/types"
)

// A grantee's failed MsgExec of MsgProduce counts as a failed produce, as the bare one does.
func TestAnyProduceSeesThroughMsgExec(t *testing.T) {
	grantee := sdk.AccAddress(bytes.Repeat([]byte{1}, 20))
	produce := &types.MsgProduce{Producer: "owner"}
	exec := authz.NewMsgExec(grantee, []sdk.Msg{produce})
	nested := authz.NewMsgExec(grantee, []sdk.Msg{&exec})
	require.True(t, anyProduce([]sdk.Msg{produce}, 0))
	require.True(t, anyProduce([]sdk.Msg{&exec}, 0))
	require.True(t, anyProduce([]sdk.Msg{&nested}, 0))
	other := authz.NewMsgExec(grantee, []sdk.Msg{&types.MsgCreateTopic{Name: "t"}})
	require.False(t, anyProduce([]sdk.Msg{&other, &types.MsgCreateTopic{}}, 0))
}
