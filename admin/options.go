package admin

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/boson-go/boson/core"
)

// Default and maximum page sizes of job listings, in the API and the dashboard.
const (
	// DefaultLimit is the page size when a request names none.
	DefaultLimit = 50
	// MaxLimit is the hard cap on a page; a larger limit is a 400 error.
	MaxLimit = 500
)

// DefaultMaxBodyBytes bounds a request body when [Options.MaxBodyBytes] is zero.
// It leaves room for a payload of [core.DefaultLimits] size in JSON.
const DefaultMaxBodyBytes = 4 << 20

// DefaultTaskScanLimit is how many of the newest jobs the task list scans
// for task names when [Options.TaskScanLimit] is zero.
const DefaultTaskScanLimit = 1000

// Options configures a [Handler]. Exactly one of Backend and Router must be
// set, and Auth must be set: the zero Auth is refused so that an admin
// surface never ends up open by accident.
type Options struct {
	// Backend is the single store the handler serves.
	Backend core.QueueBackend
	// Router serves several stores: queue-scoped calls go to the backend
	// the router resolves for the queue; job-scoped calls ask every
	// registered backend; listings merge them.
	Router *core.Router
	// Auth decides who may read and who may change. Required: use
	// [NoAuth] to turn authentication off explicitly, [Tokens] for bearer
	// tokens, or [Verifier] for a check of your own.
	Auth Auth
	// Logger receives a record of every mutation and of every internal
	// error. Nil means [slog.Default].
	Logger *slog.Logger
	// Tasks lists task names that the task pages always show, beside the
	// tasks found among the newest jobs (the contract has no task
	// enumeration, so pass your registered tasks here).
	Tasks []string
	// TaskScanLimit is how many of the newest jobs per backend are scanned
	// for task names; 0 means [DefaultTaskScanLimit], a negative value
	// turns the scan off.
	TaskScanLimit int
	// MaxBodyBytes bounds request bodies; 0 means [DefaultMaxBodyBytes].
	MaxBodyBytes int64
	// Limits are the payload and header limits that enqueue requests are
	// checked against before they reach the backend; zero fields take
	// [core.DefaultLimits]. Set them to the backend's limits.
	Limits core.Limits
	// Clock turns an enqueue's delay into a run-at time; nil means the
	// process clock. Give the backend's clock when it has one of its own.
	Clock core.Clock
	// Title is shown in the dashboard's header; empty means "boson".
	Title string
	// SessionTTL is how long a dashboard login ([Tokens] mode) lasts; 0
	// means [DefaultSessionTTL]. Sessions live in the handler's memory:
	// logging out ends one at once, and a restart ends them all.
	SessionTTL time.Duration
	// TrustedProxies lists the addresses (such as "10.0.0.5") or CIDR
	// prefixes (such as "10.0.0.0/8") of the reverse proxies in front of
	// the handler. A request whose direct peer is one of them and whose
	// X-Forwarded-Proto is "https" gets Secure cookies, as do requests
	// over the handler's own TLS; the header of any other peer is ignored.
	TrustedProxies []string
	// AllowedHosts lists the host names (or IP addresses, or "*.example.com"
	// for every name under a domain; no ports) that a request's Host header
	// may name; other requests are refused with 403. Empty means: a request
	// that arrived on a loopback address must name a loopback host
	// (localhost, *.localhost, 127.0.0.1, ::1), which defeats DNS
	// rebinding against a dashboard served on 127.0.0.1; other requests
	// are not checked. "*" turns the check off.
	AllowedHosts []string
}

func (o Options) validate() error {
	if (o.Backend == nil) == (o.Router == nil) {
		return fmt.Errorf("%w: admin: set exactly one of Options.Backend and Options.Router", core.ErrInvalidArgument)
	}
	if o.Auth.mode == authUnset {
		return fmt.Errorf("%w: admin: Options.Auth is required; use admin.NoAuth() to serve without authentication", core.ErrInvalidArgument)
	}
	if o.SessionTTL < 0 {
		return fmt.Errorf("%w: admin: Options.SessionTTL must not be negative", core.ErrInvalidArgument)
	}
	if o.MaxBodyBytes < 0 {
		return fmt.Errorf("%w: admin: Options.MaxBodyBytes must not be negative", core.ErrInvalidArgument)
	}
	for _, t := range o.Tasks {
		if err := core.ValidateName("Options.Tasks", t); err != nil {
			return err
		}
	}
	if o.Router != nil && len(o.Router.Names()) == 0 {
		return fmt.Errorf("%w: admin: Options.Router has no backend registered", core.ErrInvalidArgument)
	}
	return nil
}
