package cli

import (
	"context"
	"fmt"

	"github.com/boson-go/boson/cmd/internal/store"
	"github.com/boson-go/boson/core"
)

// capability returns the store's backend as the optional interface T, or an
// error wrapping core.ErrUnsupported (exit 6) that names the store and what
// it lacks.
func capability[T any](st *store.Store, what string) (T, error) {
	v, ok := st.Backend.(T)
	if !ok {
		var zero T
		return zero, fmt.Errorf("%w: the %s store does not offer %s", core.ErrUnsupported, st.Kind, what)
	}
	return v, nil
}

// openCapability opens the store and returns its backend as T, as
// capability does.
func openCapability[T any](ctx context.Context, c *call, what string) (T, *store.Store, error) {
	st, err := c.open(ctx)
	if err != nil {
		var zero T
		return zero, nil, err
	}
	v, err := capability[T](st, what)
	return v, st, err
}
