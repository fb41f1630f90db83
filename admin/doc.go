// Package admin serves boson's admin surface: a JSON API under /api/v1 and
// a server-rendered web dashboard, both from one [http.Handler] over a
// single [core.QueueBackend] or a [core.Router]. It depends on the standard
// library and package core only.
//
// # Mounting
//
// Mount the handler under any prefix with [http.StripPrefix]:
//
//	h, err := admin.New(admin.Options{Backend: backend, Auth: admin.Tokens(readTokens, adminTokens)})
//	mux.Handle("/admin/", http.StripPrefix("/admin", h))
//
// Every link, form action and redirect the dashboard produces is relative,
// so it works under any prefix without configuration.
//
// # API
//
// The OpenAPI 3 document at /api/v1/openapi.json (also [OpenAPI]) is the
// reference. In short:
//
//	GET  /api/v1/jobs                    list: queue, task, state (repeat or comma-separate),
//	                                     limit (default 50, at most 500), cursor, order=asc|desc
//	POST /api/v1/jobs                    enqueue one job (201; 200 when an idempotency key reused a job)
//	GET  /api/v1/jobs/{id}               one job
//	POST /api/v1/jobs/{id}/cancel        cancel, optional body {"reason": "..."}
//	POST /api/v1/jobs/{id}/retry         retry a failed or cancelled job
//	GET  /api/v1/jobs/{id}/runs          runs in claim order
//	GET  /api/v1/jobs/{id}/checkpoints   checkpoints by step
//	GET  /api/v1/jobs/{id}/wait          the latest fan-in wait (AwaitAll, AwaitAny)
//	GET  /api/v1/tasks                   known tasks with stats and config
//	GET  /api/v1/tasks/{task}            one task's stats and config
//	GET  /api/v1/tasks/{task}/config     stored task config (404 when none)
//	PUT  /api/v1/tasks/{task}/config     store a task config (flow limits included)
//	GET  /api/v1/tasks/{task}/flow       running jobs against the task's flow limits, busiest limit keys
//	GET  /api/v1/queues                  queues with counts by state and the paused flag
//	GET  /api/v1/queues/{queue}          one queue's counts and stored config
//	PUT  /api/v1/queues/{queue}          declare a queue with its config (201), check it (200, 409 queue_conflict)
//	POST /api/v1/queues/{queue}/pause    pause (other stored settings are kept)
//	POST /api/v1/queues/{queue}/resume   resume
//	GET  /api/v1/queues/{queue}/config   the queue's stored settings
//	PUT  /api/v1/queues/{queue}/config   store them (max_running included; paused kept unless given)
//	GET  /api/v1/queues/{queue}/flow     running jobs against the queue's max_running
//
// Flow control (limits at claim, sequences, limit keys) needs a backend
// that implements [core.FlowController]: the flow reads, a search by
// limit_key or sequence_key, a config that sets a flow limit and an
// enqueue with flow fields answer 501 on any other, rather than reading
// or storing what would not hold.
//
// Payloads, results and checkpoint values appear as JSON values when they
// hold valid JSON and as base64 in a sibling "*_base64" field otherwise;
// durations are Go duration strings such as "1m30s". Request bodies are
// limited in size ([DefaultMaxBodyBytes]) and unknown fields are refused.
// Errors carry {"error": {"code": "...", "message": "..."}}: core's sentinels
// map to 404 (not found), 400 (invalid argument), 409 (invalid state,
// idempotency conflict, lease lost), 429 (rate limited), 501 (unsupported)
// and 503 (closed); internal errors answer 500 without detail and are logged.
//
// # Authentication
//
// [Options.Auth] is required: [New] refuses the zero value, so an admin
// surface is never open by accident. Choose one of:
//
//   - [Tokens]: bearer tokens with separate read-only and admin lists,
//     compared in constant time. A missing or unknown token answers 401, a
//     read token on a mutating endpoint 403. The API takes only the
//     Authorization header; the dashboard also has a login form that
//     checks the token once and starts a session held in the handler's
//     memory. The browser keeps only the session's random id, in an
//     HttpOnly, SameSite=Strict cookie scoped to the mount path; logging
//     out ends the session (a copied cookie is then worthless), and so do
//     [Options.SessionTTL] and a restart.
//   - [Verifier]: your own function decides the [Permission] of each
//     request (for example from an SSO proxy's header or a session).
//   - [NoAuth] or [NoAuthReadOnly]: authentication off, by explicit choice.
//
// The OpenAPI document and the dashboard's stylesheet need no permission.
//
// Cookies are Secure when the handler's server terminated TLS, or when a
// reverse proxy listed in [Options.TrustedProxies] forwards the request
// with "X-Forwarded-Proto: https"; that header is ignored from any other
// peer.
//
// # Cross-site request forgery
//
// Two layers protect every state change. The whole handler is wrapped in
// [http.CrossOriginProtection], which refuses non-safe requests that a
// browser marks as cross-origin (Sec-Fetch-Site or Origin headers); clients
// that are not browsers are unaffected. In addition every dashboard form
// carries a token in a hidden field, bound to the caller's session (or,
// before login and without sessions, to a random per-browser cookie): an
// HMAC under a random per-handler secret, so that a token shown to one
// session, or on the login page, is refused for any other.
//
// # Host check
//
// [Options.AllowedHosts] lists the host names the handler answers for;
// others get 403. With no list, a request that arrived on a loopback
// address must name a loopback host (localhost, 127.0.0.1, ::1), which
// defeats DNS rebinding: a page of another site cannot have the
// browser read a dashboard served on 127.0.0.1 under the site's name.
//
// # Dashboard
//
// The dashboard is plain HTML from [html/template] with one embedded
// stylesheet and no script: a queues overview with counts by state and
// pause/resume buttons, a job list with filters and pagination, a job page
// with its runs, checkpoints, payload and result or error, and the task
// configs. Cancel, retry, pause and resume appear only to callers with the
// admin permission. Every value is escaped by the template engine, and the
// pages are sent with a strict Content-Security-Policy.
//
// # Contract gaps
//
// The backend contract has no task enumeration, so the task list shows
// [Options.Tasks] plus the tasks among the newest jobs of each backend
// ([Options.TaskScanLimit]). With a router, job-scoped calls ask each
// distinct backend in turn, listings merge pages by id, and a task config
// is stored on every backend so its limits hold wherever the task's jobs go.
package admin
