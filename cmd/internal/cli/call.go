package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"time"

	"github.com/boson-go/boson/cmd/internal/store"
)

const defaultURL = store.DefaultURL

// defaultTimeout bounds a command without --timeout (but bench, serve,
// bulk and delete-queue).
const defaultTimeout = 30 * time.Second

// call is the state of one invocation: common flags, arguments, the store.
type call struct {
	env       Env
	fs        *flag.FlagSet
	args      []string
	url       string
	jsonOut   bool
	noMigrate bool
	timeout   time.Duration
	st        *store.Store
	// opts holds the command's own flag values, set by its flags function.
	opts any
}

// common registers the flags every command accepts. Values parsed by the
// global flag set become the defaults of the command's.
func (c *call) common(fs *flag.FlagSet) {
	fs.StringVar(&c.url, "url", c.url, "store `URL` (default $BOSON_URL, else "+defaultURL+")")
	fs.BoolVar(&c.jsonOut, "json", c.jsonOut, "print JSON instead of tables")
	fs.BoolVar(&c.noMigrate, "no-migrate", c.noMigrate, "do not create or upgrade the SQL schema on open")
	def := c.timeout
	if def == 0 {
		def = defaultTimeout
	}
	fs.DurationVar(&c.timeout, "timeout", def, "give up after this `duration` (default for bench, serve, bulk and delete-queue: none)")
}

// storeURL is the URL flag, else BOSON_URL, else the default.
func (c *call) storeURL() string {
	if c.url != "" {
		return c.url
	}
	if u := c.env.getenv("BOSON_URL"); u != "" {
		return u
	}
	return defaultURL
}

// open opens the store (once) and migrates it unless --no-migrate.
func (c *call) open(ctx context.Context) (*store.Store, error) {
	if c.st != nil {
		return c.st, nil
	}
	open := func(ctx context.Context) (*store.Store, error) { return store.Open(ctx, c.storeURL(), store.Options{}) }
	if c.env.openStore != nil {
		open = c.env.openStore
	}
	st, err := open(ctx)
	if err != nil {
		return nil, err
	}
	if !c.noMigrate {
		if err := st.Migrate(ctx); err != nil {
			_ = st.Close()
			return nil, err
		}
	}
	c.st = st
	return st, nil
}

func (c *call) closeStore() {
	if c.st != nil {
		_ = c.st.Close()
		c.st = nil
	}
}

// withTimeout bounds ctx by --timeout.
func (c *call) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, c.timeout)
}

// withExplicitTimeout bounds ctx by --timeout only when it was given:
// long operations (bulk, delete-queue) run to the end by default, and an
// interrupt stops them where they can resume.
func (c *call) withExplicitTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	set := c.timeout != defaultTimeout
	c.fs.Visit(func(f *flag.Flag) { set = set || f.Name == "timeout" })
	if !set {
		return context.WithCancel(ctx)
	}
	return c.withTimeout(ctx)
}

// printJSON writes v as indented JSON to stdout.
func (c *call) printJSON(v any) error {
	enc := json.NewEncoder(c.env.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (c *call) printf(format string, args ...any) {
	fmt.Fprintf(c.env.Stdout, format, args...)
}

// needArgs checks the number of positional arguments.
func (c *call) needArgs(min int, what string) error {
	if len(c.args) < min {
		return usagef("missing %s", what)
	}
	return nil
}

func (c *call) noArgs() error {
	if len(c.args) > 0 {
		return usagef("unexpected argument %q", c.args[0])
	}
	return nil
}
