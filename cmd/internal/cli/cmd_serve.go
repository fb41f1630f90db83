package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/boson-go/boson/admin"
	"github.com/boson-go/boson/core"
	"github.com/boson-go/boson/observability/bosonprom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

type serveFlags struct {
	addr, prefix, title   string
	readTokens, adminToks stringList
	tasks                 stringList
	hosts, proxies        stringList
	noAuth                bool
	metricsPublic         bool
}

func init() {
	register(&command{
		name:    "serve",
		args:    "",
		summary: "serve the admin HTTP API and the web dashboard",
		help: `Serves the admin JSON API (under PREFIX/api/v1/) and the dashboard (under
PREFIX/) for the store until interrupted.

Authentication: bearer tokens from --admin-token and --read-token (each
repeatable or comma-separated; also $BOSON_ADMIN_TOKENS and
$BOSON_READ_TOKENS). Without tokens, a loopback --addr serves read-only with
no login; any other address is refused unless --no-auth turns authentication
off explicitly (every caller may then cancel, retry, pause and enqueue).

On a loopback --addr only requests for localhost or a loopback address are
answered (a page of another site cannot read the dashboard through DNS
rebinding); --allowed-host lists the names to answer for instead (behind a
local proxy that forwards its own Host, name it). Cookies are Secure over a
--trusted-proxy that sends "X-Forwarded-Proto: https".

PREFIX/metrics serves Prometheus metrics in the text format: the store's job
counts by queue and state and each queue's paused gauge (boson_queue_jobs,
boson_queue_paused, boson_queue_stats_up; read at most every 5s). It needs a
read or admin token in "Authorization: Bearer" (the dashboard's login cookie
is not accepted), unless --metrics-public serves it to every caller; without
tokens it is as open as the rest of the server.`,
		flags: func(fs *flag.FlagSet, c *call) {
			sf := &serveFlags{}
			c.opts = sf
			fs.StringVar(&sf.addr, "addr", "127.0.0.1:8080", "listen `address`")
			fs.StringVar(&sf.prefix, "prefix", "/", "URL `path` to mount the API and dashboard under")
			fs.StringVar(&sf.title, "title", "", "dashboard `title`")
			fs.Var(&sf.adminToks, "admin-token", "bearer `token` with admin permission (repeatable)")
			fs.Var(&sf.readTokens, "read-token", "bearer `token` with read permission (repeatable)")
			fs.Var(&sf.tasks, "task", "task `name` the task pages always list (repeatable)")
			fs.Var(&sf.hosts, "allowed-host", "host `name` to answer for (repeatable; *.domain for a domain, * for any)")
			fs.Var(&sf.proxies, "trusted-proxy", "`address` or CIDR of a reverse proxy whose X-Forwarded-Proto is trusted (repeatable)")
			fs.BoolVar(&sf.noAuth, "no-auth", false, "turn authentication off: every caller is admin")
			fs.BoolVar(&sf.metricsPublic, "metrics-public", false, "serve PREFIX/metrics without a token")
		},
		run: runServe,
	})
}

func runServe(ctx context.Context, c *call) error {
	if err := c.noArgs(); err != nil {
		return err
	}
	f := c.opts.(*serveFlags)
	_ = f.adminToks.Set(c.env.getenv("BOSON_ADMIN_TOKENS"))
	_ = f.readTokens.Set(c.env.getenv("BOSON_READ_TOKENS"))
	var auth admin.Auth
	mode := ""
	switch {
	case len(f.adminToks)+len(f.readTokens) > 0:
		if f.noAuth {
			return usagef("--no-auth and tokens exclude each other")
		}
		auth, mode = admin.Tokens(f.readTokens, f.adminToks), "bearer tokens"
	case f.noAuth:
		auth, mode = admin.NoAuth(), "authentication OFF: every caller is admin"
	case isLoopback(f.addr):
		auth, mode = admin.NoAuthReadOnly(), "read-only without login (loopback; give --admin-token to allow changes)"
	default:
		return usagef("serving on %s needs --admin-token/--read-token (or $BOSON_ADMIN_TOKENS), or --no-auth", f.addr)
	}
	prefix := "/" + strings.Trim(f.prefix, "/")
	openCtx, cancel := c.withTimeout(ctx)
	st, err := c.open(openCtx)
	cancel()
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(c.env.Stderr, nil))
	h, err := admin.New(admin.Options{
		Backend: st.Backend, Auth: auth, Logger: logger, Tasks: f.tasks, Title: f.title,
		AllowedHosts: f.hosts, TrustedProxies: f.proxies,
	})
	if err != nil {
		return err
	}
	metrics, err := metricsHandler(st.Backend, logger)
	if err != nil {
		return err
	}
	metricsPerm := admin.PermRead
	if f.metricsPublic {
		metricsPerm = admin.PermNone
	}
	mux := http.NewServeMux()
	mux.Handle(strings.TrimSuffix(prefix, "/")+"/metrics", h.Protect(metricsPerm, metrics))
	if prefix == "/" {
		mux.Handle("/", h)
	} else {
		mux.Handle(prefix+"/", http.StripPrefix(prefix, h))
		mux.Handle(prefix, http.RedirectHandler(prefix+"/", http.StatusFound))
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	path := strings.TrimSuffix(prefix, "/") + "/"
	fmt.Fprintf(c.env.Stderr, "boson serve: %s store at %s; listening on http://%s%s (%s)\n", st.Kind, st.Location, ln.Addr(), path, mode)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// metricsHandler serves the store's queue depths and paused gauges in the
// Prometheus text format, from a registry of their own (no process or Go
// runtime metrics of the admin server).
func metricsHandler(b core.QueueBackend, logger *slog.Logger) (http.Handler, error) {
	c, err := bosonprom.New(bosonprom.Options{Backend: b, Logger: logger})
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(c); err != nil {
		return nil, err
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelError)}), nil
}

// isLoopback reports whether addr listens on a loopback interface only.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
