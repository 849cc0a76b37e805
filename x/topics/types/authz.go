package types

import (
	"context"
	"slices"

	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/x/authz"
)

// MaxAuthorizedTopics bounds the topics one ProduceAuthorization names, and so the work of
// checking a grantee's message against it (batches x topics, charged as gas).
const MaxAuthorizedTopics = 64

// AuthorizationGasPerCheck is charged per topic compared when a grantee's MsgProduce is
// checked against its grant.
const AuthorizationGasPerCheck = 10

var _ authz.Authorization = &ProduceAuthorization{}

// NewProduceAuthorization lets a grantee produce to topics in the granter's name.
func NewProduceAuthorization(topics ...string) *ProduceAuthorization {
	return &ProduceAuthorization{Topics: topics}
}

// MsgTypeURL is MsgProduce's: the only message the grant covers.
func (a ProduceAuthorization) MsgTypeURL() string { return sdk.MsgTypeURL(&MsgProduce{}) }

// Accept admits a MsgProduce whose every batch goes to a topic of the grant. Whether the
// granter may produce there at all is the keeper's check, as for the granter's own messages.
// The grant is neither used up nor changed.
func (a ProduceAuthorization) Accept(ctx context.Context, msg sdk.Msg) (authz.AcceptResponse, error) {
	m, ok := msg.(*MsgProduce)
	if !ok {
		return authz.AcceptResponse{}, errorsmod.Wrapf(ErrInvalidRequest, "a produce authorization covers %s, not %s", a.MsgTypeURL(), sdk.MsgTypeURL(msg))
	}
	sdk.UnwrapSDKContext(ctx).GasMeter().ConsumeGas(uint64(len(m.Batches))*uint64(len(a.Topics))*AuthorizationGasPerCheck, "produce authorization")
	for i, b := range m.Batches {
		if !slices.Contains(a.Topics, b.Topic) {
			return authz.AcceptResponse{}, errorsmod.Wrapf(ErrTopicNotAuthorized, "batch %d: topic %q is not in the grant", i, b.Topic)
		}
	}
	return authz.AcceptResponse{Accept: true}, nil
}

// ValidateBasic checks the topic list: 1 to MaxAuthorizedTopics valid names, each once.
func (a ProduceAuthorization) ValidateBasic() error {
	if len(a.Topics) == 0 || len(a.Topics) > MaxAuthorizedTopics {
		return errorsmod.Wrapf(ErrTopicNotAuthorized, "a produce authorization names 1 to %d topics, not %d", MaxAuthorizedTopics, len(a.Topics))
	}
	for i, t := range a.Topics {
		if err := ValidateTopicName(t); err != nil {
			return err
		}
		if slices.Contains(a.Topics[:i], t) {
			return errorsmod.Wrapf(ErrTopicNotAuthorized, "topic %q named twice", t)
		}
	}
	return nil
}
