package admin

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/boson-go/boson/core"
)

// Permission is what a caller may do. Each level includes the ones below it.
type Permission int

const (
	// PermNone means the caller is not authenticated.
	PermNone Permission = iota
	// PermRead lets a caller see queues, jobs, runs, checkpoints and tasks.
	PermRead
	// PermAdmin also lets a caller enqueue, cancel, retry, pause, resume
	// and change task configs.
	PermAdmin
)

// String returns "none", "read" or "admin".
func (p Permission) String() string {
	switch p {
	case PermRead:
		return "read"
	case PermAdmin:
		return "admin"
	}
	return "none"
}

type authMode int

const (
	authUnset authMode = iota
	authNone
	authTokens
	authVerifier
)

// Auth decides the [Permission] of each request. Build one with [NoAuth],
// [Tokens] or [Verifier]; the zero Auth is refused by [New].
type Auth struct {
	mode     authMode
	openPerm Permission
	read     [][sha256.Size]byte
	admin    [][sha256.Size]byte
	verify   func(*http.Request) (Permission, error)
	bad      error
}

// NoAuth turns authentication off: every caller has [PermAdmin]. Use it
// only behind a proxy or on a network that does its own access control.
func NoAuth() Auth { return Auth{mode: authNone, openPerm: PermAdmin} }

// NoAuthReadOnly turns authentication off for reading only: every caller has
// [PermRead] and no caller may change anything.
func NoAuthReadOnly() Auth { return Auth{mode: authNone, openPerm: PermRead} }

// Tokens authenticates callers by bearer token: a request whose
// "Authorization: Bearer <token>" header carries one of adminTokens gets
// [PermAdmin], one of readTokens gets [PermRead], and any other request is
// refused with 401. The dashboard also has a login form: it checks the
// token once and starts a session kept in the handler's memory, whose
// random id (never the token) is the browser's cookie. Tokens are compared in constant time. At least one
// token must be given and none may be empty (else [New] fails).
func Tokens(readTokens, adminTokens []string) Auth {
	a := Auth{mode: authTokens}
	for _, t := range readTokens {
		a.read = append(a.read, hashToken(t))
	}
	for _, t := range adminTokens {
		a.admin = append(a.admin, hashToken(t))
	}
	if hasEmpty(readTokens) || hasEmpty(adminTokens) || len(readTokens)+len(adminTokens) == 0 {
		a.read, a.admin = nil, nil
		a.bad = errBadTokens
	}
	return a
}

// Verifier authenticates callers with verify: it returns the caller's
// permission, or an error (or [PermNone]) to refuse the request with 401.
// It runs for every API and dashboard request except static assets, the
// OpenAPI document and the login page, and must be safe for concurrent use.
func Verifier(verify func(r *http.Request) (Permission, error)) Auth {
	if verify == nil {
		return Auth{mode: authVerifier, bad: errBadVerifier}
	}
	return Auth{mode: authVerifier, verify: verify}
}

var (
	errBadTokens   = errors.New("admin: Tokens needs at least one token and no empty token")
	errBadVerifier = errors.New("admin: Verifier needs a non-nil function")
)

func hasEmpty(ts []string) bool {
	for _, t := range ts {
		if t == "" {
			return true
		}
	}
	return false
}

func (a Auth) validate() error {
	if a.bad != nil {
		return fmt.Errorf("%w: %v", core.ErrInvalidArgument, a.bad)
	}
	return nil
}

func hashToken(t string) [sha256.Size]byte { return sha256.Sum256([]byte(t)) }

// tokenPermission returns the permission of a presented token. Every stored
// token is compared, in constant time over equal-length hashes, so the time
// taken says nothing about which token or how much of it matched.
func (a Auth) tokenPermission(tok string) Permission {
	if tok == "" {
		return PermNone
	}
	h := hashToken(tok)
	perm := PermNone
	for _, s := range a.read {
		if subtle.ConstantTimeCompare(h[:], s[:]) == 1 && perm < PermRead {
			perm = PermRead
		}
	}
	for _, s := range a.admin {
		if subtle.ConstantTimeCompare(h[:], s[:]) == 1 {
			perm = PermAdmin
		}
	}
	return perm
}

// permission decides the caller's permission from the request's headers
// (the dashboard's session cookie is the handler's to check).
func (a Auth) permission(r *http.Request) (Permission, error) {
	switch a.mode {
	case authNone:
		return a.openPerm, nil
	case authVerifier:
		p, err := a.verify(r)
		if err != nil {
			return PermNone, err
		}
		if p < PermNone || p > PermAdmin {
			return PermNone, fmt.Errorf("admin: verifier returned unknown permission %d", int(p))
		}
		return p, nil
	case authTokens:
		if tok, ok := bearerToken(r); ok {
			return a.tokenPermission(tok), nil
		}
		return PermNone, nil
	}
	return PermNone, nil
}

func bearerToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", false
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", true // present but not a bearer token: authenticates nobody
	}
	return strings.TrimSpace(tok), true
}
