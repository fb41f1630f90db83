package admin

import (
	"net/http"
	"strings"
)

// route is one method and path pattern of the handler. Segments written
// {name} match one non-empty path segment, available through param.
type route struct {
	method  string
	pattern string
	perm    Permission
	// api routes answer JSON and take only the Authorization header;
	// dashboard routes also accept the session cookie.
	api   bool
	serve func(w http.ResponseWriter, r *http.Request, p params)
}

// params holds the path parameters of a matched route.
type params map[string]string

func (p params) get(name string) string { return p[name] }

// match reports whether path fits pattern and returns its parameters.
func match(pattern, path string) (params, bool) {
	ps := strings.Split(strings.Trim(pattern, "/"), "/")
	xs := strings.Split(strings.Trim(path, "/"), "/")
	if pattern == "/" {
		return params{}, path == "/"
	}
	if strings.HasSuffix(path, "/") || len(ps) != len(xs) {
		return nil, false
	}
	var out params
	for i, seg := range ps {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			if xs[i] == "" {
				return nil, false
			}
			if out == nil {
				out = params{}
			}
			out[seg[1:len(seg)-1]] = xs[i]
			continue
		}
		if seg != xs[i] {
			return nil, false
		}
	}
	if out == nil {
		out = params{}
	}
	return out, true
}

// findRoute returns the route for method and path, or the allowed
// methods when only the method did not match.
func findRoute(routes []route, method, path string) (*route, params, []string) {
	var allowed []string
	for i := range routes {
		rt := &routes[i]
		p, ok := match(rt.pattern, path)
		if !ok {
			continue
		}
		if rt.method == method || method == http.MethodHead && rt.method == http.MethodGet {
			return rt, p, nil
		}
		allowed = append(allowed, rt.method)
	}
	return nil, nil, allowed
}
