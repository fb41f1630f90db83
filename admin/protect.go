package admin

import (
	"net/http"
)

// Protect returns a handler that serves next under the handler's own
// checks, for endpoints mounted beside it (a metrics endpoint, say): the
// request's Host must pass the allowed hosts (see [Options.AllowedHosts]),
// and the caller must hold perm by its Authorization header, or by
// [NoAuth], [NoAuthReadOnly] or the [Verifier]. The dashboard's session
// cookie is not accepted, so a page of another site cannot ride a
// logged-in browser. PermNone serves every caller whose Host passes.
// A refused request gets the API's JSON error: 403 for a host not
// allowed, 401 without a permission, 403 with too low a permission.
func (h *Handler) Protect(perm Permission, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.hostAllowed(r) {
			h.writeError(w, r, hostRefused(r))
			return
		}
		if perm > PermNone {
			got, err := h.opts.Auth.permission(r)
			if err != nil {
				h.log.InfoContext(r.Context(), "admin: authentication failed", "path", r.URL.Path, "err", err)
			}
			switch {
			case got == PermNone:
				w.Header().Set("WWW-Authenticate", `Bearer realm="boson"`)
				h.writeError(w, r, errorf(http.StatusUnauthorized, "unauthorized", "authentication required"))
				return
			case got < perm:
				h.writeError(w, r, errorf(http.StatusForbidden, "forbidden", "this needs the "+perm.String()+" permission"))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// hostRefused is the error of a request whose Host is not allowed.
func hostRefused(r *http.Request) error {
	return errorf(http.StatusForbidden, "host_not_allowed", "this server does not answer for host "+requestHost(r)+"; list it in the handler's allowed hosts")
}
