package admin

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"sync"
	"time"

	"github.com/boson-go/boson/core"
)

// Dashboard cookies. Neither holds a credential: the session cookie holds
// the id of a session that lives only in the handler's memory, the CSRF
// cookie a random value that binds the forms of a browser without a
// session.
const (
	sessionCookie = "boson_admin_session"
	csrfCookie    = "boson_admin_csrf"
)

// DefaultSessionTTL is how long a dashboard login lasts when
// [Options.SessionTTL] is zero.
const DefaultSessionTTL = 12 * time.Hour

// maxSessions bounds the sessions kept; beyond it the oldest is dropped.
const maxSessions = 10_000

// session is one dashboard login.
type session struct {
	perm    Permission
	expires time.Time
}

// sessions are the dashboard logins of one handler, by the SHA-256 of
// their id (so that a lookup's timing says nothing about stored ids).
type sessions struct {
	clock core.Clock
	ttl   time.Duration
	mu    sync.Mutex
	m     map[[sha256.Size]byte]session
}

func newSessions(clock core.Clock, ttl time.Duration) *sessions {
	return &sessions{clock: clock, ttl: ttl, m: map[[sha256.Size]byte]session{}}
}

// randomID returns 32 random bytes in hex.
func randomID() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// create starts a session with perm and returns its id.
func (s *sessions) create(perm Permission) (string, error) {
	id, err := randomID()
	if err != nil {
		return "", err
	}
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) >= maxSessions {
		var oldest [sha256.Size]byte
		var at time.Time
		for k, v := range s.m {
			if !v.expires.After(now) {
				delete(s.m, k)
				continue
			}
			if at.IsZero() || v.expires.Before(at) {
				oldest, at = k, v.expires
			}
		}
		if len(s.m) >= maxSessions {
			delete(s.m, oldest)
		}
	}
	s.m[sha256.Sum256([]byte(id))] = session{perm: perm, expires: now.Add(s.ttl)}
	return id, nil
}

// lookup returns the live session of id.
func (s *sessions) lookup(id string) (session, bool) {
	if id == "" {
		return session{}, false
	}
	k := sha256.Sum256([]byte(id))
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[k]
	if ok && !v.expires.After(s.clock.Now()) {
		delete(s.m, k)
		return session{}, false
	}
	return v, ok
}

// end forgets the session of id.
func (s *sessions) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, sha256.Sum256([]byte(id)))
}

// sessionOf returns the request's session id and session, when its
// session cookie names a live one.
func (h *Handler) sessionOf(r *http.Request) (string, session, bool) {
	if h.opts.Auth.mode != authTokens {
		return "", session{}, false
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return "", session{}, false
	}
	s, ok := h.sessions.lookup(c.Value)
	return c.Value, s, ok
}

// csrfBinding returns what the request's CSRF token is bound to: its live
// session, else its CSRF cookie; false when it has neither.
func (h *Handler) csrfBinding(r *http.Request) (string, bool) {
	if id, _, ok := h.sessionOf(r); ok {
		return "session:" + id, true
	}
	if c, err := r.Cookie(csrfCookie); err == nil && c.Value != "" {
		return "browser:" + c.Value, true
	}
	return "", false
}

// csrfToken is the form token of a binding: an HMAC under the handler's
// secret, so that it is worth nothing for another session or browser.
func (h *Handler) csrfToken(binding string) string {
	m := hmac.New(sha256.New, h.csrfKey[:])
	m.Write([]byte(binding))
	return hex.EncodeToString(m.Sum(nil))
}

// checkCSRF reports whether tok is the form token of the request's binding.
func (h *Handler) checkCSRF(r *http.Request, tok string) bool {
	b, ok := h.csrfBinding(r)
	return ok && tok != "" && hmac.Equal([]byte(tok), []byte(h.csrfToken(b)))
}

// pageCSRF returns the form token of a page for r, and the CSRF cookie to
// set when the request has no binding yet.
func (h *Handler) pageCSRF(r *http.Request) (string, *http.Cookie) {
	if b, ok := h.csrfBinding(r); ok {
		return h.csrfToken(b), nil
	}
	v, err := randomID()
	if err != nil {
		return "", nil // the form then fails its check: nothing is changed
	}
	c := &http.Cookie{
		Name: csrfCookie, Value: v, Path: cookiePath(r, r.URL.Path),
		HttpOnly: true, Secure: h.secure(r), SameSite: http.SameSiteStrictMode,
	}
	return h.csrfToken("browser:" + v), c
}
