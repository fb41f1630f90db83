package boson

import "context"

type actorKey struct{}

// WithActorContext returns a context that records actor as the identity on
// whose behalf spawns made with it run. Inside a handler the context already
// carries the actor recorded on the running job, so child tasks inherit it.
func WithActorContext(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey{}, actor)
}

// ActorFromContext returns the actor recorded by [WithActorContext], if any.
func ActorFromContext(ctx context.Context) (string, bool) {
	a, ok := ctx.Value(actorKey{}).(string)
	return a, ok
}

// ActorPolicy decides whether actor may spawn task. A non-nil error rejects
// the spawn; the client wraps it with [ErrActorRejected].
type ActorPolicy func(ctx context.Context, actor, task string) error

// RunContextFunc builds the context a handler runs with from the actor
// recorded on the job (for example loading the user's permissions). The
// returned context must derive from ctx, which carries the attempt that
// steps, sleeps and awaits need. An error fails the attempt, which is
// retried like any handler error.
type RunContextFunc func(ctx context.Context, actor string) (context.Context, error)
