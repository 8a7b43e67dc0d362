package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

// Sessions of the console's pages: signing in with an API key makes a
// session whose id travels in an HttpOnly, SameSite=Strict cookie; every
// form carries the session's CSRF token. Sessions live in memory: a console
// restart signs everyone out.

// Cookie names of the pages.
const (
	sessionCookie = "scaleproof_session"
	signinCookie  = "scaleproof_signin" // the sign-in form's CSRF token, before there is a session
	csrfField     = "csrf"
)

// Session defaults.
const (
	DefaultSessionTTL = 8 * time.Hour
	// DefaultMaxSessions bounds the sessions kept; signing in beyond it
	// drops the oldest.
	DefaultMaxSessions = 10000
)

// session is one signed-in browser. p is the key's principal at sign-in.
type session struct {
	id, csrf string
	p        Principal
	expires  time.Time
	flash    string // shown once on the next page
}

// sessions is the in-memory session table.
type sessions struct {
	now func() time.Time
	ttl time.Duration
	max int

	mu sync.Mutex
	m  map[string]*session
}

func newSessions(now func() time.Time, ttl time.Duration, maxN int) *sessions {
	return &sessions{now: now, ttl: ttl, max: maxN, m: map[string]*session{}}
}

// token is 32 random bytes, base64url.
func token() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// create starts a session for p and returns a copy of it.
func (ss *sessions) create(p Principal) session {
	now := ss.now()
	s := &session{id: token(), csrf: token(), p: p, expires: now.Add(ss.ttl)}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for id, o := range ss.m {
		if !now.Before(o.expires) {
			delete(ss.m, id)
		}
	}
	for len(ss.m) >= ss.max {
		var oldest string
		for id, o := range ss.m {
			if oldest == "" || o.expires.Before(ss.m[oldest].expires) {
				oldest = id
			}
		}
		delete(ss.m, oldest)
	}
	ss.m[s.id] = s
	return *s
}

// get returns the live session of r's cookie; a page load (not a page's own
// refresh) takes its flash.
func (ss *sessions) get(r *http.Request) (session, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return session{}, false
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, ok := ss.m[c.Value]
	if !ok {
		return session{}, false
	}
	if !ss.now().Before(s.expires) {
		delete(ss.m, c.Value)
		return session{}, false
	}
	out := *s
	if r.Header.Get(liveHeader) == "" {
		s.flash = ""
	} else {
		out.flash = ""
	}
	return out, true
}

// setFlash keeps msg for the session's next page.
func (ss *sessions) setFlash(id, msg string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if s, ok := ss.m[id]; ok {
		s.flash = msg
	}
}

// remove ends a session.
func (ss *sessions) remove(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.m, id)
}

// sameToken compares a form's token with the expected one in constant time;
// an empty expected token never matches.
func sameToken(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// setCookie writes an HttpOnly, SameSite=Strict cookie scoped to the pages
// (Secure when the request came over TLS); maxAge < 0 deletes it.
func setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: pagesPrefix, MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}
