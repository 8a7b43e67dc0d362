package eksfake

import (
	"encoding/json"
	"fmt"
	"html"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// The query APIs' Version parameters.
const (
	versionEC2 = "2016-11-15"
	versionIAM = "2010-05-08"
	versionSTS = "2011-06-15"
)

// serveQuery answers the query-protocol APIs (EC2, IAM, STS), told apart
// by Version, with XML. A GET with the parameters in the URL is an
// sts:GetCallerIdentity presigned URL, as the EKS API server sends it.
func (s *Server) serveQuery(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		queryError(w, "ErrorResponse", "MalformedQueryString", err.Error())
		return
	}
	f := r.Form
	action := f.Get("Action")
	switch f.Get("Version") {
	case versionEC2:
		s.serveEC2(w, action, f)
	case versionIAM:
		s.serveIAM(w, action, f)
	case versionSTS:
		s.serveSTS(w, r, action)
	default:
		queryError(w, "ErrorResponse", "InvalidAction", fmt.Sprintf("the fake serves no API of Version %q (Action %q)", f.Get("Version"), action))
	}
}

// x is an XML element: name with children (already XML) inside.
func x(name string, children ...string) string {
	return "<" + name + ">" + strings.Join(children, "") + "</" + name + ">"
}

// t is an XML element holding the text v, escaped.
func t(name, v string) string { return x(name, html.EscapeString(v)) }

// members are list items of an IAM list ("member") or an EC2 list ("item").
func members(item string, elems []string) string {
	var b strings.Builder
	for _, e := range elems {
		b.WriteString(x(item, e))
	}
	return b.String()
}

func writeXML(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "text/xml")
	fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?>`+body)
}

// queryError writes IAM's and STS's <ErrorResponse> or EC2's <Response>.
func queryError(w http.ResponseWriter, root, code, message string) {
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status(code))
	e := x("Error", t("Type", "Sender"), t("Code", code), t("Message", message))
	if root == "Response" {
		fmt.Fprint(w, x("Response", x("Errors", e), t("RequestID", "fake-request")))
		return
	}
	fmt.Fprint(w, x("ErrorResponse", e, t("RequestId", "fake-request")))
}

// iamResult writes an IAM or STS answer: <ActionResponse><ActionResult>.
func iamResult(w http.ResponseWriter, ns, action string, result ...string) {
	writeXML(w, `<`+action+`Response xmlns="`+ns+`">`+x(action+"Result", result...)+
		x("ResponseMetadata", t("RequestId", "fake-request"))+`</`+action+`Response>`)
}

// ec2Filters reads Filter.N.Name / Filter.N.Value.M.
func ec2Filters(f url.Values) map[string][]string {
	out := map[string][]string{}
	for i := 1; ; i++ {
		name := f.Get(fmt.Sprintf("Filter.%d.Name", i))
		if name == "" {
			return out
		}
		for j := 1; ; j++ {
			v, ok := f[fmt.Sprintf("Filter.%d.Value.%d", i, j)]
			if !ok {
				break
			}
			out[name] = append(out[name], v...)
		}
	}
}

func match(filters map[string][]string, name, value string) bool {
	want, ok := filters[name]
	return !ok || slices.Contains(want, value)
}

func (s *Server) serveEC2(w http.ResponseWriter, action string, f url.Values) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fl, ok := s.record("ec2:" + action); ok {
		queryError(w, "Response", fl.code, fl.message)
		return
	}
	filters := ec2Filters(f)
	ns := `xmlns="http://ec2.amazonaws.com/doc/` + versionEC2 + `/"`
	switch action {
	case "DescribeVpcs":
		var items []string
		for _, v := range s.vpcs {
			if match(filters, "isDefault", strconv.FormatBool(v.isDefault)) {
				items = append(items, t("vpcId", v.id)+t("isDefault", strconv.FormatBool(v.isDefault))+t("state", "available"))
			}
		}
		writeXML(w, `<DescribeVpcsResponse `+ns+`>`+t("requestId", "fake-request")+x("vpcSet", members("item", items))+`</DescribeVpcsResponse>`)
	case "DescribeSubnets":
		var items []string
		for _, sn := range s.subnets {
			if match(filters, "vpc-id", sn.vpc) && match(filters, "default-for-az", strconv.FormatBool(sn.defaultForAz)) {
				items = append(items, t("subnetId", sn.id)+t("vpcId", sn.vpc)+t("availabilityZone", s.zone(sn))+t("availabilityZoneId", s.zoneID(s.zone(sn)))+
					t("defaultForAz", strconv.FormatBool(sn.defaultForAz))+t("state", "available"))
			}
		}
		writeXML(w, `<DescribeSubnetsResponse `+ns+`>`+t("requestId", "fake-request")+x("subnetSet", members("item", items))+`</DescribeSubnetsResponse>`)
	default:
		queryError(w, "Response", "InvalidAction", "the fake does not serve ec2:"+action)
	}
}

// iamTags reads Tags.member.N.Key / .Value.
func iamTags(f url.Values) [][2]string {
	var out [][2]string
	for i := 1; ; i++ {
		k, ok := f[fmt.Sprintf("Tags.member.%d.Key", i)]
		if !ok {
			return out
		}
		out = append(out, [2]string{k[0], f.Get(fmt.Sprintf("Tags.member.%d.Value", i))})
	}
}

const createDate = "2026-12-02T03:00:00Z"

func (s *Server) roleXML(r *role) string {
	return t("Path", r.path) + t("RoleName", r.name) + t("RoleId", "AROAFAKE"+strings.ToUpper(r.name)) +
		t("Arn", r.arn) + t("CreateDate", createDate) + t("AssumeRolePolicyDocument", url.QueryEscape(r.trust))
}

func (s *Server) serveIAM(w http.ResponseWriter, action string, f url.Values) {
	const ns = "https://iam.amazonaws.com/doc/2010-05-08/"
	s.mu.Lock()
	defer s.mu.Unlock()
	if fl, ok := s.record("iam:" + action); ok {
		queryError(w, "ErrorResponse", fl.code, fl.message)
		return
	}
	name := f.Get("RoleName")
	r, exists := s.roles[name]
	switch action {
	case "AttachRolePolicy", "DetachRolePolicy", "ListRoleTags", "ListAttachedRolePolicies", "ListInstanceProfilesForRole", "DeleteRole":
		if !exists {
			queryError(w, "ErrorResponse", "NoSuchEntity", "The role with name "+name+" cannot be found.")
			return
		}
	}
	switch action {
	case "CreateRole":
		if exists {
			queryError(w, "ErrorResponse", "EntityAlreadyExists", "Role with name "+name+" already exists.")
			return
		}
		path := f.Get("Path")
		if path == "" {
			path = "/"
		}
		trust := f.Get("AssumeRolePolicyDocument")
		if !json.Valid([]byte(trust)) {
			queryError(w, "ErrorResponse", "MalformedPolicyDocument", "The trust policy is not JSON.")
			return
		}
		r = &role{name: name, path: path, arn: "arn:aws:iam::" + s.Account + ":role" + path + name, trust: trust, tags: iamTags(f), unseen: s.propagation}
		s.roles[name] = r
		iamResult(w, ns, action, x("Role", s.roleXML(r)))
	case "AttachRolePolicy", "DetachRolePolicy":
		arn := f.Get("PolicyArn")
		if !strings.HasPrefix(arn, "arn:aws:iam::aws:policy/") {
			queryError(w, "ErrorResponse", "NoSuchEntity", "Policy "+arn+" does not exist or is not attachable.")
			return
		}
		r.policies = slices.DeleteFunc(r.policies, func(p string) bool { return p == arn })
		if action == "AttachRolePolicy" {
			r.policies = append(r.policies, arn)
		}
		iamResult(w, ns, action)
	case "ListRoles":
		prefix := f.Get("PathPrefix")
		var names []string
		for n, r := range s.roles {
			if strings.HasPrefix(r.path, prefix) {
				names = append(names, n)
			}
		}
		slices.Sort(names)
		page, next := s.page(names, f.Get("Marker"))
		var items []string
		for _, n := range page {
			items = append(items, s.roleXML(s.roles[n]))
		}
		res := []string{x("Roles", members("member", items)), t("IsTruncated", strconv.FormatBool(next != ""))}
		if next != "" {
			res = append(res, t("Marker", next))
		}
		iamResult(w, ns, action, res...)
	case "ListRoleTags":
		var items []string
		for _, kv := range r.tags {
			items = append(items, t("Key", kv[0])+t("Value", kv[1]))
		}
		iamResult(w, ns, action, x("Tags", members("member", items)), t("IsTruncated", "false"))
	case "ListAttachedRolePolicies":
		var items []string
		for _, p := range r.policies {
			items = append(items, t("PolicyName", p[strings.LastIndex(p, "/")+1:])+t("PolicyArn", p))
		}
		iamResult(w, ns, action, x("AttachedPolicies", members("member", items)), t("IsTruncated", "false"))
	case "ListInstanceProfilesForRole":
		var items []string
		for _, p := range slices.Sorted(maps.Keys(s.profiles)) {
			if s.profiles[p][name] {
				items = append(items, t("Path", "/")+t("InstanceProfileName", p)+t("InstanceProfileId", "AIPAFAKE")+
					t("Arn", "arn:aws:iam::"+s.Account+":instance-profile/"+p)+t("CreateDate", createDate)+
					x("Roles", x("member", s.roleXML(r))))
			}
		}
		iamResult(w, ns, action, x("InstanceProfiles", members("member", items)), t("IsTruncated", "false"))
	case "RemoveRoleFromInstanceProfile":
		p := f.Get("InstanceProfileName")
		if !s.profiles[p][name] {
			queryError(w, "ErrorResponse", "NoSuchEntity", "Role "+name+" is not in instance profile "+p+".")
			return
		}
		delete(s.profiles[p], name)
		iamResult(w, ns, action)
	case "DeleteInstanceProfile":
		p := f.Get("InstanceProfileName")
		roles, ok := s.profiles[p]
		switch {
		case !ok:
			queryError(w, "ErrorResponse", "NoSuchEntity", "Instance Profile "+p+" cannot be found.")
		case len(roles) > 0:
			// IAM API Reference, DeleteInstanceProfile: the profile must
			// not have an associated role
			queryError(w, "ErrorResponse", "DeleteConflict", "Cannot delete entity, must remove roles from instance profile first.")
		default:
			delete(s.profiles, p)
			iamResult(w, ns, action)
		}
	case "DeleteRole":
		if len(r.policies) > 0 {
			queryError(w, "ErrorResponse", "DeleteConflict", "Cannot delete entity, must detach all policies first.")
			return
		}
		for _, roles := range s.profiles {
			if roles[name] {
				queryError(w, "ErrorResponse", "DeleteConflict", "Cannot delete entity, must remove roles from instance profile first.")
				return
			}
		}
		delete(s.roles, name)
		iamResult(w, ns, action)
	default:
		queryError(w, "ErrorResponse", "InvalidAction", "the fake does not serve iam:"+action)
	}
}

// serveSTS answers GetCallerIdentity, as a POST (the SDK) or as a presigned
// GET (what the EKS API server does with a bearer token): the GET must carry
// the x-k8s-aws-id header and sign it.
func (s *Server) serveSTS(w http.ResponseWriter, r *http.Request, action string) {
	s.mu.Lock()
	fl, failed := s.record("sts:" + action)
	s.mu.Unlock()
	if failed {
		queryError(w, "ErrorResponse", fl.code, fl.message)
		return
	}
	if action != "GetCallerIdentity" {
		queryError(w, "ErrorResponse", "InvalidAction", "the fake does not serve sts:"+action)
		return
	}
	if r.Method == http.MethodGet {
		signed := r.URL.Query().Get("X-Amz-SignedHeaders")
		if r.Header.Get("x-k8s-aws-id") == "" || !strings.Contains(";"+signed+";", ";x-k8s-aws-id;") {
			queryError(w, "ErrorResponse", "SignatureDoesNotMatch", "the presigned URL must sign the x-k8s-aws-id header and the request must send it")
			return
		}
	}
	iamResult(w, "https://sts.amazonaws.com/doc/2011-06-15/", action,
		t("Arn", "arn:aws:iam::"+s.Account+":user/ci"), t("UserId", "AIDAFAKE"), t("Account", s.Account))
}
