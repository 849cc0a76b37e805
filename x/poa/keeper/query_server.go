package keeper

import (
	"context"

	errorsmod "cosmossdk.io/errors"

	"github.com/bftlog/bftlog/x/poa/types"
)

type queryServer struct{ k Keeper }

// NewQueryServer returns the x/poa Query service.
func NewQueryServer(k Keeper) types.QueryServer { return queryServer{k} }

func (q queryServer) Admissions(ctx context.Context, req *types.QueryAdmissionsRequest) (*types.QueryAdmissionsResponse, error) {
	out := &types.QueryAdmissionsResponse{}
	err := q.k.Admissions.Walk(ctx, nil, func(_ []byte, a types.Admission) (bool, error) {
		st, err := q.k.Status(ctx, a)
		if err != nil {
			return true, err
		}
		if req == nil || !req.PendingOnly || st.Status == "pending" {
			out.Admissions = append(out.Admissions, st)
		}
		return false, nil
	})
	return out, err
}

func (q queryServer) Admission(ctx context.Context, req *types.QueryAdmissionRequest) (*types.QueryAdmissionResponse, error) {
	if req == nil {
		return nil, errorsmod.Wrap(types.ErrInvalidAddr, "empty request")
	}
	op, err := q.k.operator(req.Operator)
	if err != nil {
		return nil, err
	}
	a, ok, err := q.k.IsAdmitted(ctx, op)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errorsmod.Wrapf(types.ErrNotAdmitted, "%s", req.Operator)
	}
	st, err := q.k.Status(ctx, a)
	if err != nil {
		return nil, err
	}
	return &types.QueryAdmissionResponse{Admission: st}, nil
}

func (q queryServer) DataPlaneEndpoints(ctx context.Context, _ *types.QueryDataPlaneEndpointsRequest) (*types.QueryDataPlaneEndpointsResponse, error) {
	eps, err := q.k.AllEndpoints(ctx)
	return &types.QueryDataPlaneEndpointsResponse{Endpoints: eps}, err
}
