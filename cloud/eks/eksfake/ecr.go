package eksfake

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
)

const ecrJSON = "application/x-amz-json-1.1"

// serveECR answers the ECR JSON 1.1 API (X-Amz-Target
// AmazonEC2ContainerRegistry_V20150921.<Action>).
func (s *Server) serveECR(w http.ResponseWriter, r *http.Request) {
	action := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AmazonEC2ContainerRegistry_V20150921.")
	var body struct {
		RepositoryName  string   `json:"repositoryName"`
		RepositoryNames []string `json:"repositoryNames"`
		ResourceArn     string   `json:"resourceArn"`
		Force           bool     `json:"force"`
		Tags            []struct {
			Key, Value string
		} `json:"tags"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		ecrError(w, "InvalidParameterException", "the request body is not JSON: "+err.Error())
		return
	}
	var tags [][2]string
	for _, tg := range body.Tags {
		tags = append(tags, [2]string{tg.Key, tg.Value})
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if fl, ok := s.record("ecr:" + action); ok {
		ecrError(w, fl.code, fl.message)
		return
	}
	byARN := func() *repo {
		for _, rp := range s.repos {
			if rp.arn == body.ResourceArn {
				return rp
			}
		}
		ecrError(w, "RepositoryNotFoundException", "The repository with ARN '"+body.ResourceArn+"' does not exist in the registry with id '"+s.Account+"'")
		return nil
	}
	switch action {
	case "DescribeRepositories":
		names := body.RepositoryNames
		if len(names) == 0 {
			names = slices.Sorted(maps.Keys(s.repos))
		}
		var out []any
		for _, n := range names {
			rp, ok := s.repos[n]
			if !ok {
				ecrError(w, "RepositoryNotFoundException", "The repository with name '"+n+"' does not exist in the registry with id '"+s.Account+"'")
				return
			}
			out = append(out, s.repoJSON(rp))
		}
		writeJSON(w, ecrJSON, map[string]any{"repositories": out})
	case "CreateRepository":
		if _, ok := s.repos[body.RepositoryName]; ok {
			ecrError(w, "RepositoryAlreadyExistsException", "The repository with name '"+body.RepositoryName+"' already exists")
			return
		}
		rp := &repo{name: body.RepositoryName, arn: s.arn("ecr", "repository/"+body.RepositoryName), tags: tags}
		s.repos[rp.name] = rp
		writeJSON(w, ecrJSON, map[string]any{"repository": s.repoJSON(rp)})
	case "ListTagsForResource":
		rp := byARN()
		if rp == nil {
			return
		}
		out := []any{}
		for _, kv := range rp.tags {
			out = append(out, map[string]string{"Key": kv[0], "Value": kv[1]})
		}
		writeJSON(w, ecrJSON, map[string]any{"tags": out})
	case "TagResource":
		rp := byARN()
		if rp == nil {
			return
		}
		rp.tags = setPairs(rp.tags, tags)
		writeJSON(w, ecrJSON, map[string]any{})
	case "DeleteRepository":
		rp, ok := s.repos[body.RepositoryName]
		if !ok {
			ecrError(w, "RepositoryNotFoundException", "The repository with name '"+body.RepositoryName+"' does not exist in the registry with id '"+s.Account+"'")
			return
		}
		if !body.Force {
			ecrError(w, "RepositoryNotEmptyException", "The repository with name '"+rp.name+"' in registry with id '"+s.Account+"' cannot be deleted because it still contains images")
			return
		}
		delete(s.repos, rp.name)
		writeJSON(w, ecrJSON, map[string]any{"repository": s.repoJSON(rp)})
	case "GetAuthorizationToken":
		tok := base64.StdEncoding.EncodeToString([]byte("AWS:" + s.RegistryPassword))
		writeJSON(w, ecrJSON, map[string]any{"authorizationData": []any{map[string]any{
			"authorizationToken": tok,
			"expiresAt":          float64(time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC).Unix()),
			"proxyEndpoint":      "https://" + s.registryHost(),
		}}})
	default:
		ecrError(w, "InvalidParameterException", "the fake does not serve ecr:"+action)
	}
}

func (s *Server) registryHost() string {
	return fmt.Sprintf("%s.dkr.ecr.%s.amazonaws.com", s.Account, s.Region)
}

func (s *Server) repoJSON(rp *repo) map[string]any {
	return map[string]any{
		"repositoryName": rp.name, "repositoryArn": rp.arn, "registryId": s.Account,
		"repositoryUri": s.registryHost() + "/" + rp.name,
	}
}

func ecrError(w http.ResponseWriter, code, message string) {
	w.Header().Set("Content-Type", ecrJSON)
	w.WriteHeader(status(code))
	json.NewEncoder(w).Encode(map[string]string{"__type": code, "message": message})
}
