package load

import (
	"cmp"
	"slices"
)

// ErrorCount is one distinct reason calls failed with, and how many did:
// vegeta's "Error Set", counted. Err is a Result's Err (for an HTTP error,
// its status line and, where the body carried one, the JSON-RPC error's
// message).
type ErrorCount struct {
	Class Class  `json:"class"`
	Err   string `json:"error"`
	N     int64  `json:"count"`
}

// MaxErrorReasons is how many distinct reasons Metrics keeps per class; the
// calls of a later reason are counted in their class's total only.
const MaxErrorReasons = 16

// maxReasonBytes bounds one kept reason (a transport error names the URL
// before its cause, so it is longer than a status line).
const maxReasonBytes = 300

type errorKey struct {
	class Class
	err   string
}

// errorSet counts the distinct reasons of the calls that did not end ok.
type errorSet struct {
	n        map[errorKey]int64
	perClass map[Class]int
}

func (s *errorSet) add(c Class, err string, n int64) {
	if c == ClassOK || err == "" || n <= 0 {
		return
	}
	if len(err) > maxReasonBytes {
		err = err[:maxReasonBytes] + "..."
	}
	k := errorKey{c, err}
	if _, ok := s.n[k]; !ok {
		if s.perClass[c] >= MaxErrorReasons {
			return
		}
		if s.n == nil {
			s.n, s.perClass = map[errorKey]int64{}, map[Class]int{}
		}
		s.perClass[c]++
	}
	s.n[k] += n
}

// list returns the reasons of class c (every class when c is ""), in
// AllClasses order, the most frequent first within a class.
func (s *errorSet) list(c Class) []ErrorCount {
	var out []ErrorCount
	for k, n := range s.n {
		if c == "" || k.class == c {
			out = append(out, ErrorCount{Class: k.class, Err: k.err, N: n})
		}
	}
	order := AllClasses()
	slices.SortFunc(out, func(a, b ErrorCount) int {
		return cmp.Or(cmp.Compare(slices.Index(order, a.Class), slices.Index(order, b.Class)),
			cmp.Compare(b.N, a.N), cmp.Compare(a.Err, b.Err))
	})
	return out
}

// Errors returns the distinct reasons of the calls of class c that did
// not end ok (every class when c is ""), at most MaxErrorReasons per class,
// the most frequent first. Calls merged in from another Metrics count too.
func (m *Metrics) Errors(c Class) []ErrorCount {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.errs.list(c)
}
