package console

import (
	"net/http"

	"github.com/scaleproof/scaleproof/autoscaler/controller"
)

// The zone policy API:
//
//	GET /api/v1/groups/{g}/zones/{z}/policy   controller.PolicyView
//	PUT /api/v1/groups/{g}/zones/{z}/policy   controller.PolicySpec -> controller.PolicyView
//
// Both are for a super admin or a group admin of g; anyone else gets 403,
// audited as workers.policy with error:forbidden. A malformed body is 400
// (not audited), a value out of range 422 with every bad field named
// (audited with error:invalid), an unknown zone 404. A PUT is audited as
// workers.policy with tags from and to (the policy names) and hpa (the
// resolved spec in one line).

// policyZone is zoneParams for a policy request, with a caller who is not an
// admin of the group refused too (403, audited as workers.policy): ok false.
func (s *Server) policyZone(w http.ResponseWriter, r *http.Request, p Principal) (group, zone string, ok bool) {
	group, zone, ok = zoneParams(w, r)
	if ok && !p.AdminOf(group) {
		s.forbidden(w, p, group, zone, controller.AuditPolicy, "only a super admin or a group admin of "+group+" may read or change its zones' policy")
		return group, zone, false
	}
	return group, zone, ok
}

func (s *Server) getPolicy(w http.ResponseWriter, r *http.Request, p Principal) {
	group, zone, ok := s.policyZone(w, r, p)
	if !ok {
		return
	}
	v, err := s.c.Policy(group, zone)
	s.reply(w, r, v, err)
}

func (s *Server) putPolicy(w http.ResponseWriter, r *http.Request, p Principal) {
	group, zone, ok := s.policyZone(w, r, p)
	if !ok {
		return
	}
	var req controller.PolicySpec
	err := readJSON(r, &req)
	if err != nil {
		writeError(w, badBodyStatus(err), err.Error())
		return
	}
	if req.Policy == "" {
		writeError(w, http.StatusBadRequest, `missing "policy": send {"policy":"step"} or {"policy":"hpa","hpa":{"query":"...","threshold":N}}`)
		return
	}
	if err := s.c.CheckPolicyQuery(r.Context(), p.Name, group, zone, req); err != nil {
		s.fail(w, r, err)
		return
	}
	v, err := s.c.SetPolicy(p.Name, group, zone, req)
	s.reply(w, r, v, err)
}
