package admin

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/boson-go/boson/core"
)

//go:embed templates/*.html templates/*.svg
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pages holds one parsed template set per dashboard page.
type pages struct {
	byName map[string]*template.Template
	// chart is the standalone SVG of a queue's activity.
	chart *template.Template
}

var pageNames = []string{"queues", "queue", "jobs", "job", "tasks", "task", "runs", "failed", "confirm", "bulk", "enqueue", "error", "login"}

// maxShownBytes bounds how much of a payload, result or error a page shows.
const maxShownBytes = 64 << 10

var funcs = template.FuncMap{
	"ts": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05.000Z")
	},
	// rfc3339 writes t as the filter form's time fields take it back
	// (see parseRange), empty for the zero time.
	"rfc3339": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339Nano)
	},
	// idList writes ids as the filter form's ids field takes them back.
	"idList": func(ids []string) string { return strings.Join(ids, ", ") },
	// maxIDs is the most ids the filter form's ids field takes.
	"maxIDs":    func() int { return core.MaxPageSize },
	"bytesText": bytesText,
	"short":     func(s string, n int) string { return shorten(s, n) },
	"count": func(m map[core.JobState]int64, s core.JobState) int64 {
		return m[s]
	},
	"runCount": func(m map[core.RunStatus]int64, s core.RunStatus) int64 {
		return m[s]
	},
	"states":      func() []core.JobState { return core.AllStates },
	"runStatuses": func() []core.RunStatus { return core.AllRunStatuses },
	"dur": func(d time.Duration) string {
		if d == 0 {
			return "—"
		}
		return d.String()
	},
	"canCancel":   func(s core.JobState) bool { return s.Active() },
	"bulkActions": func() []string { return []string{"retry", "cancel", "delete"} },
	"canRetry":    func(s core.JobState) bool { return s == core.StateFailed || s == core.StateCancelled },
	// atLimit reports whether n running jobs reached limit (0: none).
	"atLimit": func(n int64, limit int) bool { return atLimit(n, limit) },
}

func loadPages() (*pages, error) {
	p := &pages{byName: map[string]*template.Template{}}
	for _, n := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+n+".html")
		if err != nil {
			return nil, fmt.Errorf("admin: parse template %s: %w", n, err)
		}
		p.byName[n] = t
	}
	t, err := template.New("chart.svg").Funcs(funcs).ParseFS(templateFS, "templates/chart.svg")
	if err != nil {
		return nil, fmt.Errorf("admin: parse template chart.svg: %w", err)
	}
	p.chart = t
	return p, nil
}

// shorten cuts s to at most n bytes on a rune boundary, marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// bytesText renders stored bytes for a page: indented JSON when they hold
// JSON, the text when it is valid UTF-8, otherwise a note. Long values are
// cut at [maxShownBytes]. The template escapes the result.
func bytesText(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if json.Valid(b) {
		var buf bytes.Buffer
		if json.Indent(&buf, b, "", "  ") == nil {
			return shorten(buf.String(), maxShownBytes)
		}
	}
	if utf8.Valid(b) {
		return shorten(string(b), maxShownBytes)
	}
	return fmt.Sprintf("(%d bytes of binary data)", len(b))
}

// view is what every page template receives.
type view struct {
	Title    string
	Root     string
	Perm     Permission
	CanAdmin bool
	CSRF     string
	Session  bool
	Status   int
	Message  string
	Data     any

	// csrfCookie, when set, is sent with the page: the binding of CSRF.
	csrfCookie *http.Cookie
}

// rootOf returns the relative reference from the page at path (inside the
// handler) to the handler's root, such as "./" or "../".
func rootOf(path string) string {
	n := strings.Count(strings.TrimPrefix(path, "/"), "/")
	if n == 0 {
		return "./"
	}
	return strings.Repeat("../", n)
}

func (h *Handler) newView(r *http.Request, data any) view {
	perm := permFrom(r.Context())
	_, _, session := h.sessionOf(r)
	csrf, cookie := h.pageCSRF(r)
	return view{
		Title: h.opts.Title, Root: rootOf(r.URL.Path), Perm: perm, CanAdmin: perm >= PermAdmin,
		CSRF: csrf, Session: session, Data: data, csrfCookie: cookie,
	}
}

// render writes page name with status.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, name string, v view) {
	var buf bytes.Buffer
	if err := h.pages.byName[name].Execute(&buf, v); err != nil {
		h.log.ErrorContext(r.Context(), "admin: render page", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	if v.csrfCookie != nil {
		http.SetCookie(w, v.csrfCookie)
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// renderError shows err as an HTML page with its status.
func (h *Handler) renderError(w http.ResponseWriter, r *http.Request, err error) {
	status, _, public := classify(err)
	msg := err.Error()
	if !public {
		h.log.ErrorContext(r.Context(), "admin: page failed", "method", r.Method, "path", r.URL.Path, "err", err)
		msg = "internal error"
	}
	v := h.newView(r, nil)
	v.Status, v.Message = status, msg
	h.render(w, r, status, "error", v)
}

func (h *Handler) serveStatic(w http.ResponseWriter, r *http.Request, p params) {
	name := p.get("file")
	data, err := fs.ReadFile(staticFS, "static/"+name)
	if err != nil || strings.Contains(name, "..") {
		h.renderError(w, r, errorf(http.StatusNotFound, "not_found", "no such file"))
		return
	}
	switch {
	case strings.HasSuffix(name, ".css"):
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	case strings.HasSuffix(name, ".js"):
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	}
	w.Header().Set("Cache-Control", "public, max-age=3600")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(data)
}
