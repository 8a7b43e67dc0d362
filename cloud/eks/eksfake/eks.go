package eksfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// serveEKS answers the EKS REST-JSON API: /clusters and
// /clusters/{name}/node-groups.
func (s *Server) serveEKS(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var action string
	switch {
	case len(parts) == 1 && r.Method == http.MethodPost:
		action = "CreateCluster"
	case len(parts) == 1 && r.Method == http.MethodGet:
		action = "ListClusters"
	case len(parts) == 2 && r.Method == http.MethodGet:
		action = "DescribeCluster"
	case len(parts) == 2 && r.Method == http.MethodDelete:
		action = "DeleteCluster"
	case len(parts) == 3 && parts[2] == "node-groups" && r.Method == http.MethodGet:
		action = "ListNodegroups"
	case len(parts) == 4 && parts[2] == "node-groups" && r.Method == http.MethodGet:
		action = "DescribeNodegroup"
	case len(parts) == 4 && parts[2] == "node-groups" && r.Method == http.MethodDelete:
		action = "DeleteNodegroup"
	default:
		eksError(w, "InvalidRequestException", fmt.Sprintf("the fake does not serve %s %s", r.Method, r.URL.Path))
		return
	}
	var body map[string]any
	if r.Method == http.MethodPost {
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			eksError(w, "InvalidParameterException", "the request body is not JSON: "+err.Error())
			return
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.record("eks:" + action); ok {
		eksError(w, f.code, f.message)
		return
	}
	switch action {
	case "CreateCluster":
		s.createClusterOnce(w, body, accessKeyOf(r))
	case "ListClusters":
		names := make([]string, 0, len(s.clusters))
		for n := range s.clusters {
			names = append(names, n)
		}
		sort.Strings(names)
		page, next := s.page(names, r.URL.Query().Get("nextToken"))
		out := map[string]any{"clusters": page}
		if next != "" {
			out["nextToken"] = next
		}
		writeJSON(w, "application/json", out)
	case "DescribeCluster":
		c, ok := s.clusters[parts[1]]
		if !ok {
			eksError(w, "ResourceNotFoundException", "No cluster found for name: "+parts[1]+".")
			return
		}
		s.advanceCluster(c)
		if c.status == "" { // deleted by this poll
			delete(s.clusters, c.name)
			eksError(w, "ResourceNotFoundException", "No cluster found for name: "+parts[1]+".")
			return
		}
		writeJSON(w, "application/json", map[string]any{"cluster": s.clusterJSON(c)})
	case "DeleteCluster":
		c, ok := s.clusters[parts[1]]
		if !ok {
			eksError(w, "ResourceNotFoundException", "No cluster found for name: "+parts[1]+".")
			return
		}
		if c.status == "CREATING" || c.status == "UPDATING" {
			eksError(w, "ResourceInUseException", "Cluster "+c.name+" is currently "+c.status+" and cannot be deleted.")
			return
		}
		for _, g := range s.nodegroups {
			if g.cluster == c.name {
				eksError(w, "ResourceInUseException", "Cluster has nodegroups attached")
				return
			}
		}
		if c.status != "DELETING" {
			c.status, c.left = "DELETING", s.polls
		}
		writeJSON(w, "application/json", map[string]any{"cluster": s.clusterJSON(c)})
	case "ListNodegroups":
		if _, ok := s.clusters[parts[1]]; !ok {
			eksError(w, "ResourceNotFoundException", "No cluster found for name: "+parts[1]+".")
			return
		}
		var names []string
		for _, g := range s.nodegroups {
			if g.cluster == parts[1] {
				names = append(names, g.name)
			}
		}
		sort.Strings(names)
		writeJSON(w, "application/json", map[string]any{"nodegroups": names})
	case "DescribeNodegroup", "DeleteNodegroup":
		key := parts[1] + "/" + parts[3]
		g, ok := s.nodegroups[key]
		if !ok {
			eksError(w, "ResourceNotFoundException", "No node group found for name: "+parts[3]+".")
			return
		}
		if action == "DeleteNodegroup" {
			if g.status != "DELETING" {
				g.status, g.left = "DELETING", s.polls
			}
		} else if g.status == "DELETING" {
			if g.left <= 0 {
				delete(s.nodegroups, key)
				eksError(w, "ResourceNotFoundException", "No node group found for name: "+parts[3]+".")
				return
			}
			g.left--
		}
		writeJSON(w, "application/json", map[string]any{"nodegroup": map[string]any{
			"nodegroupName": g.name, "nodegroupArn": g.arn, "clusterName": g.cluster, "status": g.status, "tags": g.tags,
		}})
	}
}

// createClusterOnce is CreateCluster with its idempotency (EKS API
// Reference, CreateCluster: clientRequestToken "ensures the idempotency of
// the request"; AWS, "Ensuring idempotency": a repeated request with the
// same client token gets the first request's answer): a retry with the
// token of an answered request gets that answer again, not a new attempt.
// Callers hold s.mu.
func (s *Server) createClusterOnce(w http.ResponseWriter, body map[string]any, creator string) {
	tok, _ := body["clientRequestToken"].(string)
	if prev, ok := s.answered[tok]; ok && tok != "" {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-ErrorType", prev.code)
		w.WriteHeader(prev.status)
		_, _ = w.Write(prev.body)
		return
	}
	rec := &recorder{ResponseWriter: w}
	s.createCluster(rec, body, creator)
	if tok != "" {
		s.answered[tok] = answer{status: rec.status, code: rec.Header().Get("X-Amzn-ErrorType"), body: rec.body}
	}
}

// createCluster checks the request as EKS does (a name, a role that
// exists, two subnets that exist, EKS Auto Mode's three settings together)
// and starts the cluster CREATING.
func (s *Server) createCluster(w http.ResponseWriter, body map[string]any, creator string) {
	name, _ := body["name"].(string)
	roleARN, _ := body["roleArn"].(string)
	if name == "" || roleARN == "" {
		eksError(w, "InvalidParameterException", "name and roleArn are required")
		return
	}
	if _, ok := s.clusters[name]; ok {
		eksError(w, "ResourceInUseException", "Cluster already exists with name: "+name)
		return
	}
	if !s.roleARNExists(roleARN) {
		eksError(w, "InvalidParameterException", "Role with arn: "+roleARN+", could not be assumed because it does not exist or the trusted entity is not correct")
		return
	}
	for _, r := range s.roles {
		if r.arn == roleARN && r.unseen > 0 {
			r.unseen--
			eksError(w, "InvalidParameterException", "Role with arn: "+roleARN+", could not be assumed because it does not exist or the trusted entity is not correct")
			return
		}
	}
	vpcCfg, _ := body["resourcesVpcConfig"].(map[string]any)
	ids, _ := vpcCfg["subnetIds"].([]any)
	zones := map[string]bool{}
	for _, id := range ids {
		found := false
		for _, sn := range s.subnets {
			if sn.id == id {
				found, zones[s.zone(sn)] = true, true
			}
		}
		if !found {
			eksError(w, "InvalidParameterException", fmt.Sprintf("The subnet ID '%v' does not exist", id))
			return
		}
	}
	if len(zones) < 2 {
		eksError(w, "InvalidParameterException", "Subnets specified must be in at least two different AZs")
		return
	}
	// EKS refuses a subnet in an unsupported zone, by zone ID, naming the
	// zones (by this account's names) it would accept: CreateCluster's
	// UnsupportedAvailabilityZoneException, with "validZones" (EKS API
	// Reference, CreateCluster, Errors;
	// https://docs.aws.amazon.com/eks/latest/APIReference/API_UnsupportedAvailabilityZoneException.html).
	for z := range zones {
		if UnsupportedZoneIDs[s.zoneID(z)] {
			var valid []string
			for _, sn := range s.subnets {
				if z := s.zone(sn); !UnsupportedZoneIDs[s.zoneID(z)] && !slices.Contains(valid, z) {
					valid = append(valid, z)
				}
			}
			sort.Strings(valid)
			w.Header().Set("X-Amzn-ErrorType", "UnsupportedAvailabilityZoneException")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]any{"clusterName": name, "validZones": valid,
				"message": fmt.Sprintf("Cannot create cluster '%s' because %s, the targeted availability zone, does not currently have sufficient capacity to support the cluster. Retry and choose from these availability zones: %s",
					name, z, strings.Join(valid, ", "))})
			return
		}
	}
	compute := enabled(body, "computeConfig")
	storage := enabled(body, "storageConfig", "blockStorage")
	elb := enabled(body, "kubernetesNetworkConfig", "elasticLoadBalancing")
	if compute != storage || compute != elb {
		eksError(w, "InvalidParameterException", "For EKS Auto Mode, computeConfig, storageConfig.blockStorage and kubernetesNetworkConfig.elasticLoadBalancing must all be enabled or all disabled")
		return
	}
	if compute {
		cc := body["computeConfig"].(map[string]any)
		if nr, _ := cc["nodeRoleArn"].(string); !s.roleARNExists(nr) {
			eksError(w, "InvalidParameterException", "computeConfig.nodeRoleArn must name an existing role")
			return
		}
	}
	tags := map[string]string{}
	if t, ok := body["tags"].(map[string]any); ok {
		for k, v := range t {
			tags[k] = fmt.Sprint(v)
		}
	}
	c := &cluster{name: name, arn: s.arn("eks", "cluster/"+name), status: "CREATING", roleARN: roleARN,
		tags: tags, request: body, left: s.polls, creator: creator}
	s.clusters[name] = c
	writeJSON(w, "application/json", map[string]any{"cluster": s.clusterJSON(c)})
}

// advanceCluster is one poll of c: its operation finishes when left
// reaches zero (a deleted cluster gets status "").
func (s *Server) advanceCluster(c *cluster) {
	switch c.status {
	case "CREATING":
		if s.stuck {
			return
		}
		if c.left > 0 {
			c.left--
			return
		}
		c.status = "ACTIVE"
		if s.failClusters {
			c.status = "FAILED"
			return
		}
		// EKS Auto Mode makes an instance profile for the node role to
		// launch its nodes with (EKS, "Learn about identity and access in
		// EKS Auto Mode"); it is the account's, and it stays after the
		// cluster is deleted until someone deletes it.
		if enabled(c.request, "computeConfig") {
			if role, _ := c.request["computeConfig"].(map[string]any)["nodeRoleArn"].(string); role != "" {
				prof := "eks-" + s.Region + "-" + c.name
				if s.profiles[prof] == nil {
					s.profiles[prof] = map[string]bool{}
				}
				s.profiles[prof][role[strings.LastIndex(role, "/")+1:]] = true
			}
		}
	case "DELETING":
		if c.left > 0 {
			c.left--
			return
		}
		c.status = ""
	}
}

func (s *Server) clusterJSON(c *cluster) map[string]any {
	out := map[string]any{
		"name": c.name, "arn": c.arn, "status": c.status, "roleArn": c.roleARN, "tags": c.tags,
		"createdAt": float64(time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC).Unix()),
	}
	if c.status == "ACTIVE" || c.status == "DELETING" {
		out["endpoint"] = s.apiServer()
		out["certificateAuthority"] = map[string]any{"data": s.caData()}
	}
	if c.status == "FAILED" {
		out["health"] = map[string]any{"issues": []any{map[string]any{"code": "Ec2SubnetInvalidConfiguration", "message": "the fake was told to fail this cluster"}}}
	}
	return out
}

func (s *Server) roleARNExists(arn string) bool {
	for _, r := range s.roles {
		if r.arn == arn {
			return true
		}
	}
	return false
}

// page is one page of names after token (an index), pageSize long.
func (s *Server) page(names []string, token string) ([]string, string) {
	from, _ := strconv.Atoi(token)
	from = min(from, len(names))
	to := from + s.pageSize
	if s.pageSize <= 0 || to >= len(names) {
		return names[from:], ""
	}
	return names[from:to], strconv.Itoa(to)
}

// enabled reads body[path...]["enabled"] == true.
func enabled(body map[string]any, path ...string) bool {
	m := body
	for _, p := range path {
		next, ok := m[p].(map[string]any)
		if !ok {
			return false
		}
		m = next
	}
	b, _ := m["enabled"].(bool)
	return b
}

func eksError(w http.ResponseWriter, code, message string) {
	w.Header().Set("X-Amzn-ErrorType", code)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status(code))
	json.NewEncoder(w).Encode(map[string]string{"message": message})
}

func writeJSON(w http.ResponseWriter, contentType string, v any) {
	w.Header().Set("Content-Type", contentType)
	json.NewEncoder(w).Encode(v)
}

// answer is a response the fake gave to a request with a client token.
type answer struct {
	status int
	code   string
	body   []byte
}

// recorder keeps what a handler wrote, and writes it through.
type recorder struct {
	http.ResponseWriter
	status int
	body   []byte
}

func (r *recorder) WriteHeader(code int) { r.status = code; r.ResponseWriter.WriteHeader(code) }

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.body = append(r.body, b...)
	return r.ResponseWriter.Write(b)
}
