package kafka

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/query"

	"github.com/bftlog/bftlog/x/topics/types"
)

// Kafka ACLs map onto the permissions the chain already enforces, so an ACL is a transaction
// and the chain, not the gateway, decides who may write and join:
//
//   - ALLOW WRITE on a LITERAL topic for User:P is P's account in the topic's producer
//     allowlist (producer policy ALLOWLIST: the owner and the listed accounts produce);
//   - ALLOW READ on a LITERAL group for User:P is P's account in the group's allowed members
//     (join policy ALLOWLIST).
//
// P is a gateway user's name (its account) or an account address. A topic or group with no
// allowlist has no ACLs: anyone may write or join, as Kafka with allow.everyone.if.no.acl.found.
// The first ACL restricts it to its owner and the listed accounts; deleting the last one leaves
// it to its owner alone (the chain's ALLOWLIST with nobody listed), never open again by
// accident. The transactions are signed by the connection's account: the chain lets a topic's
// owner and a group's admin (or gov) change them. Anything else — DENY, PREFIXED patterns, a host
// other than *, other operations and resource types — cannot be expressed and is refused with
// INVALID_REQUEST and a message saying what can.

const aclRefusal = "bftlog maps ACLs onto the chain's permissions: only ALLOW, host *, LITERAL " +
	"patterns, WRITE on a topic (its producer allowlist) and READ on a group (its allowed members), " +
	"for User:<gateway user or account address>"

// aclBinding is one ACL as the chain holds it: ALLOW, LITERAL, host *.
type aclBinding struct {
	resourceType kmsg.ACLResourceType
	name         string
	account      string
	op           kmsg.ACLOperation
}

// aclAccount is the account of a Kafka principal: a gateway user's, or an address.
func (s *Server) aclAccount(principal string) (string, bool) {
	name, ok := strings.CutPrefix(principal, "User:")
	if !ok {
		return "", false
	}
	if u := s.users[name]; u != nil && u.signer != nil {
		return u.signer.Address(), true
	}
	if addr, err := sdk.AccAddressFromBech32(name); err == nil {
		return addr.String(), true
	}
	return "", false
}

// aclPrincipal is the principal an account shows as: its gateway user's name, else its address.
func (s *Server) aclPrincipal(account string) string {
	for name, u := range s.users {
		if u.signer != nil && u.signer.Address() == account {
			return "User:" + name
		}
	}
	return "User:" + account
}

// aclFor is the binding a creation asks for, or why it cannot be expressed.
func (s *Server) aclFor(c kmsg.CreateACLsRequestCreation) (aclBinding, bool) {
	if c.PermissionType != kmsg.ACLPermissionTypeAllow || c.Host != "*" ||
		(c.ResourcePatternType != kmsg.ACLResourcePatternTypeLiteral && c.ResourcePatternType != 0) {
		return aclBinding{}, false
	}
	account, ok := s.aclAccount(c.Principal)
	if !ok {
		return aclBinding{}, false
	}
	switch {
	case c.ResourceType == kmsg.ACLResourceTypeTopic && c.Operation == kmsg.ACLOperationWrite,
		c.ResourceType == kmsg.ACLResourceTypeGroup && c.Operation == kmsg.ACLOperationRead:
		return aclBinding{resourceType: c.ResourceType, name: c.ResourceName, account: account, op: c.Operation}, true
	}
	return aclBinding{}, false
}

// aclFilter is a Describe/DeleteACLs filter.
type aclFilter struct {
	resourceType kmsg.ACLResourceType
	name         *string
	pattern      kmsg.ACLResourcePatternType
	principal    *string
	host         *string
	op           kmsg.ACLOperation
	permission   kmsg.ACLPermissionType
}

func (s *Server) matches(f aclFilter, b aclBinding) bool {
	switch {
	case f.resourceType != kmsg.ACLResourceTypeAny && f.resourceType != b.resourceType,
		f.name != nil && *f.name != b.name,
		f.pattern != kmsg.ACLResourcePatternTypeAny && f.pattern != kmsg.ACLResourcePatternTypeMatch &&
			f.pattern != kmsg.ACLResourcePatternTypeLiteral && f.pattern != 0,
		f.host != nil && *f.host != "*",
		f.op != kmsg.ACLOperationAny && f.op != b.op,
		f.permission != kmsg.ACLPermissionTypeAny && f.permission != kmsg.ACLPermissionTypeAllow:
		return false
	}
	if f.principal != nil {
		account, ok := s.aclAccount(*f.principal)
		return ok && account == b.account
	}
	return true
}

// acls reads every ACL the chain holds: topics' producer allowlists and groups' allowed members.
func (s *Server) acls(ctx context.Context, resourceType kmsg.ACLResourceType) ([]aclBinding, error) {
	var out []aclBinding
	if resourceType == kmsg.ACLResourceTypeAny || resourceType == kmsg.ACLResourceTypeTopic {
		res, err := s.query.Topics(ctx, &types.QueryTopicsRequest{Pagination: &query.PageRequest{Limit: 10_000}})
		if err != nil {
			return nil, err
		}
		for _, t := range res.Topics {
			if t.Config.ProducerPolicy == types.PRODUCER_POLICY_ALLOWLIST {
				for _, a := range t.Config.AllowedProducers {
					out = append(out, aclBinding{kmsg.ACLResourceTypeTopic, t.Name, a, kmsg.ACLOperationWrite})
				}
			}
		}
	}
	if resourceType == kmsg.ACLResourceTypeAny || resourceType == kmsg.ACLResourceTypeGroup {
		var next []byte
		for listed := 0; listed < maxListedGroups; {
			res, err := s.query.Groups(ctx, &types.QueryGroupsRequest{Pagination: &query.PageRequest{Key: next, Limit: 1_000}})
			if err != nil {
				return nil, err
			}
			for _, g := range res.Groups {
				if g.JoinPolicy == types.JOIN_POLICY_ALLOWLIST {
					for _, a := range g.AllowedMembers {
						out = append(out, aclBinding{kmsg.ACLResourceTypeGroup, g.GroupId, a, kmsg.ACLOperationRead})
					}
				}
			}
			listed += len(res.Groups)
			if res.Pagination == nil || len(res.Pagination.NextKey) == 0 {
				break
			}
			next = res.Pagination.NextKey
		}
	}
	return out, nil
}

// setAllowlist makes accounts the allowlist of a topic's producers or a group's members, in one
// transaction signed by the connection's account.
func (s *Server) setAllowlist(ctx context.Context, resourceType kmsg.ACLResourceType, name string, change func([]string) []string) (int16, *string) {
	id := s.ident(ctx)
	if id.signer == nil {
		return kerr.ClusterAuthorizationFailed.Code, kmsg.StringPtr(errNoSigner.Error())
	}
	if resourceType == kmsg.ACLResourceTypeTopic {
		res, err := s.query.Topic(ctx, &types.QueryTopicRequest{Name: name})
		if err != nil {
			return queryCode(err), kmsg.StringPtr(err.Error())
		}
		cfg := res.Topic.Config
		var listed []string
		if cfg.ProducerPolicy == types.PRODUCER_POLICY_ALLOWLIST {
			listed = cfg.AllowedProducers
		}
		cfg.ProducerPolicy, cfg.AllowedProducers = types.PRODUCER_POLICY_ALLOWLIST, change(listed)
		return s.submit(ctx, &types.MsgUpdateTopicConfig{Authority: id.signer.Address(), Name: name, Config: cfg})
	}
	res, err := s.query.Group(ctx, &types.QueryGroupRequest{GroupId: name})
	if err != nil {
		return kerr.GroupIDNotFound.Code, kmsg.StringPtr(err.Error())
	}
	var listed []string
	if res.Group.JoinPolicy == types.JOIN_POLICY_ALLOWLIST {
		listed = res.Group.AllowedMembers
	}
	return s.submit(ctx, &types.MsgUpdateGroupPolicy{Authority: id.signer.Address(), GroupId: name,
		JoinPolicy: types.JOIN_POLICY_ALLOWLIST, AllowedMembers: change(listed)})
}

func (s *Server) createACLs(ctx context.Context, r *kmsg.CreateACLsRequest) kmsg.Response {
	resp := kmsg.NewPtrCreateACLsResponse()
	resp.SetVersion(r.Version)
	for _, c := range r.Creations {
		res := kmsg.NewCreateACLsResponseResult()
		if b, ok := s.aclFor(c); !ok {
			res.ErrorCode, res.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(aclRefusal)
		} else {
			res.ErrorCode, res.ErrorMessage = s.setAllowlist(ctx, b.resourceType, b.name, func(l []string) []string {
				if slices.Contains(l, b.account) {
					return l
				}
				return append(slices.Clone(l), b.account)
			})
		}
		resp.Results = append(resp.Results, res)
	}
	return resp
}

func (s *Server) describeACLs(ctx context.Context, r *kmsg.DescribeACLsRequest) kmsg.Response {
	resp := kmsg.NewPtrDescribeACLsResponse()
	resp.SetVersion(r.Version)
	all, err := s.acls(ctx, r.ResourceType)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.UnknownServerError.Code, kmsg.StringPtr(err.Error())
		return resp
	}
	f := aclFilter{r.ResourceType, r.ResourceName, r.ResourcePatternType, r.Principal, r.Host, r.Operation, r.PermissionType}
	for _, b := range all {
		if !s.matches(f, b) {
			continue
		}
		i := slices.IndexFunc(resp.Resources, func(x kmsg.DescribeACLsResponseResource) bool {
			return x.ResourceType == b.resourceType && x.ResourceName == b.name
		})
		if i < 0 {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName, res.ResourcePatternType = b.resourceType, b.name, kmsg.ACLResourcePatternTypeLiteral
			resp.Resources = append(resp.Resources, res)
			i = len(resp.Resources) - 1
		}
		acl := kmsg.NewDescribeACLsResponseResourceACL()
		acl.Principal, acl.Host, acl.Operation, acl.PermissionType = s.aclPrincipal(b.account), "*", b.op, kmsg.ACLPermissionTypeAllow
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, acl)
	}
	return resp
}

func (s *Server) deleteACLs(ctx context.Context, r *kmsg.DeleteACLsRequest) kmsg.Response {
	resp := kmsg.NewPtrDeleteACLsResponse()
	resp.SetVersion(r.Version)
	for _, rf := range r.Filters {
		res := kmsg.NewDeleteACLsResponseResult()
		all, err := s.acls(ctx, rf.ResourceType)
		if err != nil {
			res.ErrorCode, res.ErrorMessage = kerr.UnknownServerError.Code, kmsg.StringPtr(err.Error())
			resp.Results = append(resp.Results, res)
			continue
		}
		f := aclFilter{rf.ResourceType, rf.ResourceName, rf.ResourcePatternType, rf.Principal, rf.Host, rf.Operation, rf.PermissionType}
		// One transaction per resource, removing every matching account.
		type resource struct {
			typ  kmsg.ACLResourceType
			name string
		}
		var order []resource
		doomed := map[resource][]aclBinding{}
		for _, b := range all {
			if s.matches(f, b) {
				k := resource{b.resourceType, b.name}
				if doomed[k] == nil {
					order = append(order, k)
				}
				doomed[k] = append(doomed[k], b)
			}
		}
		for _, k := range order {
			code, msg := s.setAllowlist(ctx, k.typ, k.name, func(l []string) []string {
				return slices.DeleteFunc(slices.Clone(l), func(a string) bool {
					return slices.ContainsFunc(doomed[k], func(b aclBinding) bool { return b.account == a })
				})
			})
			for _, b := range doomed[k] {
				m := kmsg.NewDeleteACLsResponseResultMatchingACL()
				m.ErrorCode, m.ErrorMessage = code, msg
				m.ResourceType, m.ResourceName, m.ResourcePatternType = b.resourceType, b.name, kmsg.ACLResourcePatternTypeLiteral
				m.Principal, m.Host, m.Operation, m.PermissionType = s.aclPrincipal(b.account), "*", b.op, kmsg.ACLPermissionTypeAllow
				res.MatchingACLs = append(res.MatchingACLs, m)
			}
		}
		resp.Results = append(resp.Results, res)
	}
	return resp
}
