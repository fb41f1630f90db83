// Package cli is the boson command: it parses arguments, opens the store
// named by a URL and runs one subcommand. Main is the whole program, so
// tests run it in-process.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/boson-go/boson/cmd/internal/store"
	"github.com/boson-go/boson/core"
)

// Exit codes of the boson command.
const (
	// ExitOK: the command did what was asked.
	ExitOK = 0
	// ExitError: an operational error (store unreachable, I/O, timeout).
	ExitError = 1
	// ExitUsage: bad flags or arguments, or input the store refused as invalid.
	ExitUsage = 2
	// ExitNotFound: a job (or other named object) does not exist.
	ExitNotFound = 3
	// ExitRefused: the job's state does not allow the operation, an
	// idempotency key conflict or a task limit refused an enqueue, or a
	// migrate down would undo a version that has no safe down step.
	ExitRefused = 4
	// ExitCheckFailed: bench found jobs lost, run twice or miscounted.
	ExitCheckFailed = 5
	// ExitUnsupported: the store does not offer the operation (its backend
	// lacks the optional capability, core.ErrUnsupported).
	ExitUnsupported = 6
)

// Env is the outside world of one invocation.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Getenv reads environment variables; nil reads none.
	Getenv func(string) string
	// Interactive reports that Stderr is a terminal (progress bars).
	Interactive bool

	// wrapBackend, when set, wraps every backend bench opens: the tests
	// of the self-check hand it stores that break a promise.
	wrapBackend func(core.QueueBackend) core.QueueBackend
	// openStore, when set, replaces opening the store URL: the tests hand
	// every invocation the same in-memory store.
	openStore func(ctx context.Context) (*store.Store, error)
}

func (e Env) getenv(k string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(k)
}

// command is one subcommand.
type command struct {
	name    string
	args    string
	summary string
	help    string
	run     func(ctx context.Context, c *call) error
	// flags adds the subcommand's own flags.
	flags func(fs *flag.FlagSet, c *call)
}

var commands []*command

func register(c *command) { commands = append(commands, c) }

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// usageError is a mistake in the command line (exit 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

const globalHelp = `boson — inspect and steer boson job queues, serve the admin UI, benchmark a store.

Usage:
  boson [global flags] <command> [flags] [arguments]

Commands:
%s
Global flags (accepted before or after the command):
  --url URL        the store (default: $BOSON_URL, else %s)
  --json           print JSON for scripts instead of tables
  --no-migrate     do not create or upgrade the SQL schema on open
  --timeout D      give up after D (default 30s; bench, serve, bulk, delete-queue: none)

Store URLs:
  mem:                                      in-process memory (gone at exit)
  sqlite:path/to/jobs.db[?synchronous=NORMAL]  a SQLite file; sqlite::memory: is a temporary file
  postgres://user@host:5432/db?schema=boson  PostgreSQL (other query options go to pgx)
  redis://host:6379/0?prefix=boson           Redis
  nats://host:4222?namespace=boson           NATS JetStream

Schema: every command creates or upgrades the SQL schema (SQLite, Postgres)
when it opens the store; it is idempotent and cheap. Pass --no-migrate to
skip that (then run "boson migrate" once, e.g. from a deploy step).

Exit codes:
  0  ok
  1  operational error (store unreachable, I/O, timeout)
  2  usage error: bad flags or arguments, or input the store refused as invalid
  3  not found (job id unknown)
  4  refused: the job's state does not allow it, idempotency conflict, task limit,
     migrate down past a version that cannot be undone safely
  5  bench: the self-check failed (a job lost, run twice or miscounted)
  6  unsupported: the store does not offer this operation

Run "boson <command> --help" for a command's flags.
`

func writeGlobalHelp(w io.Writer) {
	var b strings.Builder
	cs := append([]*command(nil), commands...)
	sort.SliceStable(cs, func(i, j int) bool { return order(cs[i].name) < order(cs[j].name) })
	for _, c := range cs {
		fmt.Fprintf(&b, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, globalHelp, b.String(), defaultURL)
}

func order(name string) int {
	for i, n := range []string{"migrate", "enqueue", "jobs", "runs", "tasks", "cancel", "retry", "create-queue", "delete", "delete-queue", "bulk", "stats", "config", "pause", "resume", "serve", "bench", "help"} {
		if n == name {
			return i
		}
	}
	return 100
}

// Main runs the boson command with args (without the program name) and
// returns its exit code.
func Main(ctx context.Context, args []string, env Env) int {
	if env.Stdout == nil {
		env.Stdout = io.Discard
	}
	if env.Stderr == nil {
		env.Stderr = io.Discard
	}
	c := &call{env: env}
	global := flag.NewFlagSet("boson", flag.ContinueOnError)
	global.SetOutput(io.Discard)
	c.common(global)
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			writeGlobalHelp(env.Stdout)
			return ExitOK
		}
		fmt.Fprintf(env.Stderr, "boson: %v\nRun \"boson --help\" for usage.\n", err)
		return ExitUsage
	}
	rest := global.Args()
	if len(rest) == 0 {
		writeGlobalHelp(env.Stderr)
		return ExitUsage
	}
	name := rest[0]
	if name == "help" {
		if len(rest) > 1 {
			if cmd := lookup(rest[1]); cmd != nil {
				writeCommandHelp(env.Stdout, cmd, c)
				return ExitOK
			}
		}
		writeGlobalHelp(env.Stdout)
		return ExitOK
	}
	cmd := lookup(name)
	if cmd == nil {
		fmt.Fprintf(env.Stderr, "boson: unknown command %q\nRun \"boson --help\" for usage.\n", name)
		return ExitUsage
	}
	fs := flag.NewFlagSet("boson "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.common(fs)
	if cmd.flags != nil {
		cmd.flags(fs, c)
	}
	pos, err := parseInterleaved(fs, rest[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			writeCommandHelp(env.Stdout, cmd, c)
			return ExitOK
		}
		fmt.Fprintf(env.Stderr, "boson %s: %v\nRun \"boson %s --help\" for usage.\n", cmd.name, err, cmd.name)
		return ExitUsage
	}
	c.args = pos
	c.fs = fs
	err = cmd.run(ctx, c)
	c.closeStore()
	if err == nil {
		return ExitOK
	}
	code := exitCode(err)
	var ce *checkError
	var qe quietError
	if !errors.As(err, &ce) && !errors.As(err, &qe) {
		fmt.Fprintf(env.Stderr, "boson %s: %v\n", cmd.name, err)
	}
	if code == ExitUsage {
		var ue *usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(env.Stderr, "Run \"boson %s --help\" for usage.\n", cmd.name)
		}
	}
	return code
}

// parseInterleaved parses flags that may come before, between or after the
// positional arguments; everything after "--" is positional.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var tail []string
	for i, a := range args {
		if a == "--" {
			args, tail = args[:i], args[i+1:]
			break
		}
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return append(pos, tail...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func writeCommandHelp(w io.Writer, cmd *command, c *call) {
	fmt.Fprintf(w, "Usage: boson %s [flags] %s\n\n%s\n\nFlags:\n", cmd.name, cmd.args, strings.TrimSpace(cmd.help))
	fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	c2 := &call{env: c.env}
	c2.common(fs)
	if cmd.flags != nil {
		cmd.flags(fs, c2)
	}
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// exitCode maps an error to the command's exit status.
func exitCode(err error) int {
	var ue *usageError
	var ce *checkError
	switch {
	case errors.As(err, &ue), errors.Is(err, core.ErrInvalidArgument):
		return ExitUsage
	case errors.As(err, &ce):
		return ExitCheckFailed
	case errors.Is(err, core.ErrUnsupported):
		return ExitUnsupported
	case errors.Is(err, core.ErrNotFound):
		return ExitNotFound
	case errors.Is(err, core.ErrInvalidState), errors.Is(err, core.ErrIdempotencyConflict), errors.Is(err, core.ErrRateLimited):
		return ExitRefused
	}
	return ExitError
}

// checkError reports a failed bench self-check (exit 5); its details were
// already printed.
type checkError struct{ msg string }

func (e *checkError) Error() string { return e.msg }
