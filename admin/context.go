package admin

import "context"

type permKey struct{}

func withPerm(ctx context.Context, p Permission) context.Context {
	return context.WithValue(ctx, permKey{}, p)
}

// permFrom returns the permission ServeHTTP established for the request.
func permFrom(ctx context.Context) Permission {
	p, _ := ctx.Value(permKey{}).(Permission)
	return p
}
