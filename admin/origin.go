package admin

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/boson-go/boson/core"
)

// parseProxies parses Options.TrustedProxies: addresses or CIDR prefixes.
func parseProxies(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		s = strings.TrimSpace(s)
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%w: admin: Options.TrustedProxies: %q is neither an IP address nor a CIDR prefix", core.ErrInvalidArgument, s)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// parseHosts parses Options.AllowedHosts into lower-case names; any is
// true when "*" allows every host.
func parseHosts(list []string) (hosts []string, anyHost bool, err error) {
	for _, s := range list {
		s = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(s), "."))
		switch {
		case s == "*":
			anyHost = true
			continue
		case s == "" || strings.ContainsAny(s, "/ ") || strings.Count(s, "*") > 1 || strings.Contains(s, "*") && !strings.HasPrefix(s, "*."):
			return nil, false, fmt.Errorf("%w: admin: Options.AllowedHosts: %q must be a host name, an IP address, \"*.\" and a domain, or \"*\"", core.ErrInvalidArgument, s)
		}
		if _, _, err := net.SplitHostPort(s); err == nil {
			return nil, false, fmt.Errorf("%w: admin: Options.AllowedHosts: %q must not name a port", core.ErrInvalidArgument, s)
		}
		hosts = append(hosts, strings.Trim(s, "[]"))
	}
	return hosts, anyHost, nil
}

// peerAddr returns the address of the request's direct peer.
func peerAddr(r *http.Request) (netip.Addr, bool) {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}, false
	}
	return ap.Addr().Unmap(), true
}

// secure reports whether the browser reached the handler over HTTPS: the
// handler's own server terminated TLS, or a trusted proxy (its direct
// peer is one of Options.TrustedProxies) says so in X-Forwarded-Proto.
// The header of any other peer is ignored, since anyone can send it.
func (h *Handler) secure(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	if len(h.proxies) == 0 {
		return false
	}
	a, ok := peerAddr(r)
	if !ok {
		return false
	}
	trusted := false
	for _, p := range h.proxies {
		if p.Contains(a) {
			trusted = true
			break
		}
	}
	if !trusted {
		return false
	}
	// Each proxy appends what it received: the last value is the one the
	// trusted proxy set.
	vals := strings.Split(strings.Join(r.Header.Values("X-Forwarded-Proto"), ","), ",")
	return strings.EqualFold(strings.TrimSpace(vals[len(vals)-1]), "https")
}

// requestHost returns the request's Host without port, lower case.
func requestHost(r *http.Request) string {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
}

// isLoopbackHost reports whether host names this machine's loopback
// interface: localhost, a name under .localhost, or a loopback address.
func isLoopbackHost(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// servedOnLoopback reports whether the request arrived on a loopback
// address of the server.
func servedOnLoopback(r *http.Request) bool {
	la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	ap, err := netip.ParseAddrPort(la.String())
	return err == nil && ap.Addr().Unmap().IsLoopback()
}

// hostAllowed applies Options.AllowedHosts: a listed name (or one under a
// "*." domain) passes; with no list, a request that arrived on a loopback
// address must name a loopback host. That defeats DNS rebinding, where a
// page of another site makes the victim's browser send its requests, under
// the attacker's host name, to a dashboard listening on 127.0.0.1.
func (h *Handler) hostAllowed(r *http.Request) bool {
	if h.anyHost {
		return true
	}
	host := requestHost(r)
	if len(h.hosts) == 0 {
		return !servedOnLoopback(r) || isLoopbackHost(host)
	}
	for _, allowed := range h.hosts {
		if host == allowed || strings.HasPrefix(allowed, "*.") && strings.HasSuffix(host, allowed[1:]) {
			return true
		}
	}
	return false
}
