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
)

type serveFlags struct {
	addr, prefix, title   string
	readTokens, adminToks stringList
	tasks                 stringList
	hosts, proxies        stringList
	noAuth                bool
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
--trusted-proxy that sends "X-Forwarded-Proto: https".`,
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
	mux := http.NewServeMux()
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
