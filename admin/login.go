package admin

import (
	"net/http"
	"strings"
)

// The login form exists in [Tokens] mode only: a browser cannot attach a
// bearer header to page loads, so the form checks the token once and
// starts a server-side session. The browser keeps only the session's
// random id, in an HttpOnly, SameSite=Strict cookie that only dashboard
// routes accept; logging out ends the session, so a copied cookie is
// worth nothing afterwards.

func (h *Handler) renderLogin(w http.ResponseWriter, r *http.Request, status int, msg string) {
	v := h.newView(r, nil)
	v.Status, v.Message = status, msg
	h.render(w, r, status, "login", v)
}

func (h *Handler) uiLoginForm(w http.ResponseWriter, r *http.Request, _ params) {
	h.renderLogin(w, r, http.StatusOK, "")
}

// cookiePath is the handler's root as the browser sees it: the request's
// path with the handler-relative part removed.
func cookiePath(r *http.Request, inner string) string {
	full, _, _ := strings.Cut(r.RequestURI, "?")
	if strings.HasSuffix(full, inner) {
		if p := strings.TrimSuffix(full, inner); strings.HasPrefix(p, "/") {
			return p + "/"
		}
		return "/"
	}
	return "/"
}

func (h *Handler) uiLogin(w http.ResponseWriter, r *http.Request, _ params) {
	if err := h.checkForm(r); err != nil {
		h.renderError(w, r, err)
		return
	}
	tok := strings.TrimSpace(r.PostForm.Get("token"))
	perm := h.opts.Auth.tokenPermission(tok)
	if perm == PermNone {
		h.renderLogin(w, r, http.StatusUnauthorized, "That token is not valid.")
		return
	}
	if old, _, ok := h.sessionOf(r); ok {
		h.sessions.end(old)
	}
	id, err := h.sessions.create(perm)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: id, Path: cookiePath(r, "/login"),
		HttpOnly: true, Secure: h.secure(r), SameSite: http.SameSiteStrictMode,
	})
	seeOther(w, "./")
}

func (h *Handler) uiLogout(w http.ResponseWriter, r *http.Request, _ params) {
	if err := h.checkForm(r); err != nil {
		h.renderError(w, r, err)
		return
	}
	if id, _, ok := h.sessionOf(r); ok {
		h.sessions.end(id)
	}
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: "", Path: cookiePath(r, "/logout"), MaxAge: -1,
		HttpOnly: true, Secure: h.secure(r), SameSite: http.SameSiteStrictMode,
	})
	seeOther(w, "login")
}
