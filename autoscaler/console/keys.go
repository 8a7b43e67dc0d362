package console

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/scaleproof/scaleproof/autoscaler/controller"
)

// Role is what an API key may do.
type Role string

// Roles (Ramen 0.7.5's autoscaling notes, "The bounds": only a super admin or a group admin of the
// group sees and sets the max; viewers and MCP users see the count only).
const (
	RoleSuperAdmin Role = "super_admin"
	RoleGroupAdmin Role = "group_admin"
	RoleViewer     Role = "viewer"
	RoleMCPUser    Role = "mcp_user"
)

// Key is one entry of the keys file.
type Key struct {
	Name   string   `json:"name"`
	Key    string   `json:"key"`
	Role   Role     `json:"role"`
	Groups []string `json:"groups,omitempty"` // group_admin only
}

// Principal is an authenticated caller. Its Name is the audit actor.
type Principal struct {
	Name   string
	Role   Role
	Groups []string
}

// AdminOf reports whether p may see and change group's zones.
func (p Principal) AdminOf(group string) bool {
	return p.Role == RoleSuperAdmin || (p.Role == RoleGroupAdmin && slices.Contains(p.Groups, group))
}

// MayConfigure reports whether p may change the console's configuration
// (the Auto-rebalance scheduler on the Config page): super admins only.
func (p Principal) MayConfigure() bool { return p.Role == RoleSuperAdmin }

// MayReadAudit reports whether p may read the audit log: super admins all
// of it, group admins their groups' entries.
func (p Principal) MayReadAudit() bool { return p.Role == RoleSuperAdmin || p.Role == RoleGroupAdmin }

// Keys is a validated set of API keys.
type Keys struct {
	keys   []Key
	hashes [][sha256.Size]byte
}

// LoadKeys reads and validates a keys file:
//
//	{"keys":[{"name":"root","key":"...","role":"super_admin"},
//	         {"name":"ga","key":"...","role":"group_admin","groups":["g1"]}, ...]}
func LoadKeys(path string) (*Keys, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	k, err := ParseKeys(b)
	if err != nil {
		return nil, fmt.Errorf("keys %s: %w", path, err)
	}
	return k, nil
}

// ParseKeys validates a keys document: at least one key, unique non-empty
// names and keys, known roles, and at least one valid group for each group
// admin.
func ParseKeys(b []byte) (*Keys, error) {
	var doc struct {
		Keys []Key `json:"keys"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("parse keys: %w", err)
	}
	if len(doc.Keys) == 0 {
		return nil, errors.New("no keys")
	}
	names, secrets := map[string]bool{}, map[string]bool{}
	var errs []error
	for i, k := range doc.Keys {
		where := fmt.Sprintf("key %d (%q)", i, k.Name)
		switch {
		case strings.TrimSpace(k.Name) == "":
			errs = append(errs, fmt.Errorf("key %d: empty name", i))
		case names[k.Name]:
			errs = append(errs, fmt.Errorf("%s: duplicate name", where))
		}
		names[k.Name] = true
		switch {
		case k.Key == "":
			errs = append(errs, fmt.Errorf("%s: empty key", where))
		case strings.ContainsAny(k.Key, " \t\r\n"):
			errs = append(errs, fmt.Errorf("%s: key contains whitespace", where))
		case secrets[k.Key]:
			errs = append(errs, fmt.Errorf("%s: duplicate key", where)) // never print the key
		}
		secrets[k.Key] = true
		switch k.Role {
		case RoleSuperAdmin, RoleViewer, RoleMCPUser:
			if len(k.Groups) > 0 {
				errs = append(errs, fmt.Errorf("%s: role %s takes no groups", where, k.Role))
			}
		case RoleGroupAdmin:
			if len(k.Groups) == 0 {
				errs = append(errs, fmt.Errorf("%s: group_admin needs groups", where))
			}
			for _, g := range k.Groups {
				if !controller.ValidName(g) {
					errs = append(errs, fmt.Errorf("%s: invalid group %q", where, g))
				}
			}
		default:
			errs = append(errs, fmt.Errorf("%s: unknown role %q (want super_admin, group_admin, viewer or mcp_user)", where, k.Role))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	ks := &Keys{keys: doc.Keys, hashes: make([][sha256.Size]byte, len(doc.Keys))}
	for i, k := range doc.Keys {
		ks.hashes[i] = sha256.Sum256([]byte(k.Key))
	}
	return ks, nil
}

// Authenticate returns the principal of token. It compares the token with
// every key in constant time (hashes of equal length, no early exit).
func (ks *Keys) Authenticate(token string) (Principal, bool) {
	if token == "" {
		return Principal{}, false
	}
	h := sha256.Sum256([]byte(token))
	found := -1
	for i := range ks.hashes {
		if subtle.ConstantTimeCompare(h[:], ks.hashes[i][:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Principal{}, false
	}
	k := ks.keys[found]
	return Principal{Name: k.Name, Role: k.Role, Groups: slices.Clone(k.Groups)}, true
}

// Len returns the number of keys.
func (ks *Keys) Len() int { return len(ks.keys) }
