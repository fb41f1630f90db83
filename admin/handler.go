package admin

import (
	"crypto/rand"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"

	"github.com/boson-go/boson/core"
)

// Handler serves the JSON API under /api/v1/ and the dashboard under /.
// It is safe for concurrent use. Mount it under any prefix with
// [http.StripPrefix]: every link and redirect it produces is relative.
type Handler struct {
	opts     Options
	st       stores
	log      *slog.Logger
	routes   []route
	csrfKey  [32]byte
	sessions *sessions
	proxies  []netip.Prefix
	hosts    []string
	anyHost  bool
	maxBody  int64
	pages    *pages
	cop      *http.CrossOriginProtection
}

// New returns a handler for opts. It fails with an error wrapping
// [core.ErrInvalidArgument] when neither or both of Backend and Router are
// set, when Auth is the zero value, or when an option is out of range.
func New(opts Options) (*Handler, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if err := opts.Auth.validate(); err != nil {
		return nil, err
	}
	if err := opts.Limits.Validate(); err != nil {
		return nil, err
	}
	h := &Handler{
		opts:    opts,
		st:      stores{single: opts.Backend, router: opts.Router},
		log:     opts.Logger,
		maxBody: opts.MaxBodyBytes,
		cop:     http.NewCrossOriginProtection(),
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.maxBody == 0 {
		h.maxBody = DefaultMaxBodyBytes
	}
	if h.opts.TaskScanLimit == 0 {
		h.opts.TaskScanLimit = DefaultTaskScanLimit
	}
	if h.opts.Title == "" {
		h.opts.Title = "boson"
	}
	if _, err := rand.Read(h.csrfKey[:]); err != nil {
		return nil, err
	}
	ttl := h.opts.SessionTTL
	if ttl == 0 {
		ttl = DefaultSessionTTL
	}
	h.sessions = newSessions(core.ClockOrSystem(opts.Clock), ttl)
	var err error
	if h.proxies, err = parseProxies(opts.TrustedProxies); err != nil {
		return nil, err
	}
	if h.hosts, h.anyHost, err = parseHosts(opts.AllowedHosts); err != nil {
		return nil, err
	}
	p, err := loadPages()
	if err != nil {
		return nil, err
	}
	h.pages = p
	h.routes = append(h.apiRoutes(), h.uiRoutes()...)
	return h, nil
}

// ServeHTTP routes r. Unsafe cross-origin browser requests are refused
// with 403 before anything else runs (see the package documentation on
// CSRF); then the caller's permission is checked against the route's.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if path == "" {
		// Mounted as StripPrefix("/admin", h) and visited at "/admin":
		// relative links need the trailing slash.
		w.Header().Set("Location", lastSegment(r.RequestURI)+"/")
		w.WriteHeader(http.StatusMovedPermanently)
		return
	}
	api := strings.HasPrefix(path, "/api/")
	if !h.hostAllowed(r) {
		h.deny(w, r, api, hostRefused(r))
		return
	}
	if err := h.cop.Check(r); err != nil {
		h.deny(w, r, api, errorf(http.StatusForbidden, "cross_origin", "cross-origin request refused"))
		return
	}
	rt, p, allowed := findRoute(h.routes, r.Method, path)
	if rt == nil {
		if len(allowed) > 0 {
			w.Header().Set("Allow", strings.Join(allowed, ", "))
			h.deny(w, r, api, errorf(http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not allowed here"))
			return
		}
		h.deny(w, r, api, errorf(http.StatusNotFound, "not_found", "no such page or endpoint"))
		return
	}
	perm := PermNone
	if rt.perm > PermNone {
		var err error
		perm, err = h.permission(r, !rt.api)
		if err != nil {
			h.log.InfoContext(r.Context(), "admin: authentication failed", "path", path, "err", err)
		}
		if perm == PermNone {
			if !rt.api && h.opts.Auth.mode == authTokens && r.Method == http.MethodGet {
				h.renderLogin(w, r, http.StatusUnauthorized, "")
				return
			}
			h.deny(w, r, rt.api, errorf(http.StatusUnauthorized, "unauthorized", "authentication required"))
			return
		}
		if perm < rt.perm {
			h.deny(w, r, rt.api, errorf(http.StatusForbidden, "forbidden", "this needs the admin permission"))
			return
		}
	}
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, h.maxBody)
	}
	r = r.WithContext(withPerm(r.Context(), perm))
	rt.serve(w, r, p)
}

// permission decides the caller's permission. The dashboard admits the
// session cookie of a login in [Tokens] mode; the JSON API takes only the
// Authorization header.
func (h *Handler) permission(r *http.Request, dashboard bool) (Permission, error) {
	if dashboard && h.opts.Auth.mode == authTokens {
		if _, present := bearerToken(r); !present {
			_, s, ok := h.sessionOf(r)
			if !ok {
				return PermNone, nil
			}
			return s.perm, nil
		}
	}
	return h.opts.Auth.permission(r)
}

// deny answers an error as JSON on API paths and as an HTML page elsewhere.
func (h *Handler) deny(w http.ResponseWriter, r *http.Request, api bool, err error) {
	if api {
		h.writeError(w, r, err)
		return
	}
	h.renderError(w, r, err)
}

func lastSegment(requestURI string) string {
	p, _, _ := strings.Cut(requestURI, "?")
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		p = p[i+1:]
	}
	if p == "" {
		return "."
	}
	return p
}

// readBody reads the (size-limited) request body.
func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	return io.ReadAll(r.Body)
}

// requireJSON refuses a non-empty body that is not declared as JSON.
func requireJSON(r *http.Request, body []byte) error {
	if len(body) == 0 {
		return nil
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return nil
	}
	mt, _, _ := strings.Cut(ct, ";")
	if !strings.EqualFold(strings.TrimSpace(mt), "application/json") {
		return errorf(http.StatusUnsupportedMediaType, "unsupported_media_type", "the body must be application/json")
	}
	return nil
}

var _ http.Handler = (*Handler)(nil)
