package core

import (
	"fmt"
	"sort"
	"sync"
)

// DefaultBackendName is the name under which a single-backend setup
// registers its backend, and the backend a [Router] resolves for queues
// that no route names.
const DefaultBackendName = "default"

// Router maps queues to named backends, so that one client can spread its
// queues across stores. It is safe for concurrent use. The zero value is an
// empty router; register at least the default backend before resolving.
type Router struct {
	mu       sync.RWMutex
	backends map[string]QueueBackend
	routes   map[string]string
}

// NewRouter returns a router with b registered as the default backend.
func NewRouter(b QueueBackend) *Router {
	r := &Router{}
	if b != nil {
		_ = r.Register(DefaultBackendName, b)
	}
	return r
}

// Register adds or replaces the backend called name.
func (r *Router) Register(name string, b QueueBackend) error {
	if err := ValidateName("backend name", name); err != nil {
		return err
	}
	if b == nil {
		return invalid("backend", "must not be nil")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.backends == nil {
		r.backends = map[string]QueueBackend{}
	}
	r.backends[name] = b
	return nil
}

// Route sends queue to the backend called name, which must be registered.
func (r *Router) Route(queue, name string) error {
	if err := ValidateName("queue", queue); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.backends[name]; !ok {
		return fmt.Errorf("%w: backend %q is not registered", ErrNotFound, name)
	}
	if r.routes == nil {
		r.routes = map[string]string{}
	}
	r.routes[queue] = name
	return nil
}

// Backend returns the backend registered as name, or [ErrNotFound].
func (r *Router) Backend(name string) (QueueBackend, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	b, ok := r.backends[name]
	if !ok {
		return nil, fmt.Errorf("%w: backend %q is not registered", ErrNotFound, name)
	}
	return b, nil
}

// Resolve returns the backend that serves queue: the one its route names,
// else the default. An empty queue means [DefaultQueue]. It returns
// [ErrNotFound] when neither exists.
func (r *Router) Resolve(queue string) (QueueBackend, error) {
	if queue == "" {
		queue = DefaultQueue
	}
	r.mu.RLock()
	name, ok := r.routes[queue]
	r.mu.RUnlock()
	if !ok {
		name = DefaultBackendName
	}
	return r.Backend(name)
}

// Names returns the registered backend names, sorted.
func (r *Router) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.backends))
	for n := range r.backends {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Backends returns the registered backends in name order; a backend
// registered under two names appears twice.
func (r *Router) Backends() []QueueBackend {
	names := r.Names()
	out := make([]QueueBackend, 0, len(names))
	for _, n := range names {
		if b, err := r.Backend(n); err == nil {
			out = append(out, b)
		}
	}
	return out
}
