package admin

import (
	"net/http"
	"strings"
)

// The login form exists in [Tokens] mode only: a browser cannot attach a
// bearer header to page loads, so the form stores the token in an
// HttpOnly, SameSite=Strict cookie that only dashboard routes accept.

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
	if h.opts.Auth.tokenPermission(tok) == PermNone {
		h.renderLogin(w, r, http.StatusUnauthorized, "That token is not valid.")
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: tok, Path: cookiePath(r, "/login"),
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode,
	})
	seeOther(w, "./")
}

func (h *Handler) uiLogout(w http.ResponseWriter, r *http.Request, _ params) {
	if err := h.checkForm(r); err != nil {
		h.renderError(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: "", Path: cookiePath(r, "/logout"), MaxAge: -1,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode,
	})
	seeOther(w, "login")
}
