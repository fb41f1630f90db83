package admin

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/boson-go/boson/core"
)

// errorBody is the JSON shape of every API error:
// {"error": {"code": "...", "message": "..."}}.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// apiError is an error with the HTTP status and code the API answers with.
type apiError struct {
	status int
	code   string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func errorf(status int, code, msg string) error {
	return &apiError{status: status, code: code, msg: msg}
}

// classify maps an error to its HTTP status, its code and whether its text
// may be shown to the caller (internal errors are logged, not shown).
func classify(err error) (status int, code string, public bool) {
	var ae *apiError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &ae):
		return ae.status, ae.code, true
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, "body_too_large", true
	case errors.Is(err, core.ErrNotFound):
		return http.StatusNotFound, "not_found", true
	case errors.Is(err, core.ErrInvalidArgument):
		return http.StatusBadRequest, "invalid_argument", true
	case errors.Is(err, core.ErrInvalidState):
		return http.StatusConflict, "invalid_state", true
	case errors.Is(err, core.ErrQueueConflict):
		return http.StatusConflict, "queue_conflict", true
	case errors.Is(err, core.ErrIdempotencyConflict):
		return http.StatusConflict, "idempotency_conflict", true
	case errors.Is(err, core.ErrLeaseLost):
		return http.StatusConflict, "lease_lost", true
	case errors.Is(err, core.ErrRateLimited):
		return http.StatusTooManyRequests, "rate_limited", true
	case errors.Is(err, core.ErrUnsupported):
		return http.StatusNotImplemented, "unsupported", true
	case errors.Is(err, core.ErrClosed):
		return http.StatusServiceUnavailable, "closed", true
	}
	return http.StatusInternalServerError, "internal", false
}

// writeError answers with the JSON error body for err.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, code, public := classify(err)
	msg := err.Error()
	if !public {
		h.log.ErrorContext(r.Context(), "admin: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		msg = "internal error"
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="boson"`)
	}
	writeJSON(w, status, errorBody{Error: errorDetail{Code: code, Message: msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	_ = enc.Encode(v)
}
