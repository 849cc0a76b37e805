package sim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	abci "github.com/cometbft/cometbft/abci/types"

	sdk "github.com/cosmos/cosmos-sdk/types"
	govtypes "github.com/cosmos/cosmos-sdk/x/gov/types"
)

// A run whose transactions all fail keeps an empty, consistent state and breaks no invariant;
// one where naming by digest silently stopped compares carried blocks with carried blocks. So a
// run must show that it exercised what it claims to: every message kind the generator writes
// succeeded, governance executed proposals, the EndBlocker's work ran, transactions were named
// by digest, both crash points were replayed, and the transactions written to be refused were
// (each with its code; Run checks those as they run).

// directKinds are the messages the generator writes into transactions; each must succeed.
var directKinds = []string{
	"MsgCreateTopic", "MsgUpdateTopicConfig", "MsgAddPartitions", "MsgDeleteTopic", "MsgDeleteRecords", "MsgProduce",
	"MsgCreateGroup", "MsgJoinGroup", "MsgHeartbeat", "MsgLeaveGroup", "MsgCommitOffsets", "MsgResetOffsets",
	"MsgDeleteGroup", "MsgDeleteGroupOffsets", "MsgUpdateGroupPolicy", "MsgRemoveGroupMember", "MsgTransferGroupAdmin",
	"MsgKafkaJoinGroup", "MsgKafkaSyncGroup", "MsgKafkaHeartbeat", "MsgKafkaLeaveGroup", "MsgConsumerGroupHeartbeat", "MsgShareGroupHeartbeat", "MsgShareFetch", "MsgSetShareGroupConfig", "MsgAlterShareGroupOffsets",
	"MsgSubmitProposal", "MsgVote", "MsgCreateValidator", "MsgSetDataPlaneEndpoint",
	"MsgGrant", "MsgExec", "MsgGrantAllowance", feeGrantedTx,
}

// feeGrantedTx counts transactions whose fee an allowance paid (x/feegrant), whatever their
// messages.
const feeGrantedTx = "fee-granted transaction"

// neverOK are messages the generator writes only to see them refused.
var neverOK = []string{"MsgAdmitValidator", "MsgDelegate"}

// govKinds are messages governance proposals carry; proposals carrying each must pass and run.
var govKinds = []string{"MsgUpdateParams", "MsgUpdateTopicConfig", "MsgAddPartitions", "MsgDeleteRecords", "MsgDeleteTopic",
	"MsgDeleteGroupOffsets", "MsgAdmitValidator", "MsgSetValidatorPower", "MsgRemoveValidator"}

// blockEvents are the EndBlocker's and governance's work a run must reach.
var blockEvents = []string{"EventRetentionApplied", "EventPartitionCompacted", "EventGroupRebalanced(expire)", "EventRecordsDeleted",
	"EventTopicDeleted", "EventGroupDeleted", "EventGroupOffsetsDeleted", "EventOffsetsCommitted", "EventParamsUpdated", "EventValidatorAdmitted"}

// Coverage is what Run requires of a run (Config.Require); a short run cannot meet it.
type Coverage struct {
	// MinOK is the least number of successful transactions of each kind in directKinds; MinGov
	// of passed proposals carrying each of govKinds.
	MinOK, MinGov int
	// MinNamedPermille is the least share of transactions the node ran named by digest.
	MinNamedPermille int
	// MinPassed is the least number of proposals that passed and ran.
	MinPassed int
}

// unexercised lists what the run did not do of what cov requires, and the message kinds the
// run wrote that no list above names (a new kind must be added to one).
func (r Result) unexercised(cfg Config, cov Coverage) []string {
	var out []string
	for _, k := range directKinds {
		if n := r.Outcomes[k]["ok"]; n < cov.MinOK {
			out = append(out, fmt.Sprintf("%s succeeded %d times (at least %d)", k, n, cov.MinOK))
		}
	}
	for _, k := range neverOK {
		if n := r.Outcomes[k]["ok"]; n > 0 {
			out = append(out, fmt.Sprintf("%s succeeded %d times; only governance may", k, n))
		}
	}
	for _, k := range govKinds {
		if n := r.Outcomes["gov:"+k][govtypes.AttributeValueProposalPassed]; n < cov.MinGov {
			out = append(out, fmt.Sprintf("governance ran %s %d times (at least %d)", k, n, cov.MinGov))
		}
	}
	if r.ProposalsPassed < cov.MinPassed {
		out = append(out, fmt.Sprintf("%d proposals passed (at least %d)", r.ProposalsPassed, cov.MinPassed))
	}
	for name := range r.Outcomes {
		if !strings.HasPrefix(name, "refused: ") && !strings.HasPrefix(name, "gov:") && !slices.Contains(directKinds, name) && !slices.Contains(neverOK, name) {
			out = append(out, fmt.Sprintf("the run wrote %s, which no coverage list names", name))
		}
	}
	for _, e := range blockEvents {
		if r.Events[e] == 0 {
			out = append(out, fmt.Sprintf("no %s", e))
		}
	}
	if cfg.Twin && r.Named*1000 < r.Txs*cov.MinNamedPermille {
		out = append(out, fmt.Sprintf("%d of %d transactions named by digest (at least %d‰)", r.Named, r.Txs, cov.MinNamedPermille))
	}
	if cfg.Twin && r.Reused == 0 {
		out = append(out, "the node reused no decoding (app/decode_cache.go): the twin compared nothing of it")
	}
	if cfg.Twin && cfg.FaultEvery > 0 {
		for _, k := range faultKinds {
			if r.Faults[k] == 0 {
				out = append(out, "no proposal that "+k)
			}
		}
	}
	if cfg.CrashEvery > 0 {
		for _, p := range []string{crashBeforeCommit, crashAfterPrecommit} {
			if r.Crashes[p] == 0 {
				out = append(out, "no crash "+p)
			}
		}
	}
	for _, k := range []string{"replayed transaction", "corrupt batch", "lying record count", "partition out of range",
		"record over max_record_bytes", "unknown topic", "validator admitted by an account", "delegation under proof of authority",
		"data-plane endpoint by an account no operator", "malformed data-plane endpoint", "malformed data-plane key"} {
		if len(r.Outcomes["refused: "+k]) == 0 {
			out = append(out, "no "+k+" was sent")
		}
	}
	slices.Sort(out)
	return out
}

// countProposals counts, for every proposal whose voting ended in this block, the messages it
// carried by how it ended ("gov:MsgX" → proposal_passed, _rejected, _failed: passed means its
// messages ran).
func (r *Result) countProposals(out *abci.ResponseFinalizeBlock, proposal func(id uint64) ([]sdk.Msg, error)) error {
	for _, e := range out.Events {
		if e.Type != govtypes.EventTypeActiveProposal {
			continue
		}
		var id uint64
		var result string
		for _, a := range e.Attributes {
			switch a.Key {
			case govtypes.AttributeKeyProposalID:
				v, err := strconv.ParseUint(a.Value, 10, 64)
				if err != nil {
					return err
				}
				id = v
			case govtypes.AttributeKeyProposalResult:
				result = a.Value
			}
		}
		msgs, err := proposal(id)
		if err != nil {
			return fmt.Errorf("proposal %d: %w", id, err)
		}
		for _, m := range msgs {
			r.count("gov:"+msgName(m), result)
		}
	}
	return nil
}
