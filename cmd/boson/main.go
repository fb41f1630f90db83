// Command boson inspects and steers boson job queues on any store, serves
// the admin API and dashboard, and benchmarks stores. Run "boson --help".
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/boson-go/boson/cmd/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.Env{
		Stdin:       os.Stdin,
		Stdout:      os.Stdout,
		Stderr:      os.Stderr,
		Getenv:      os.Getenv,
		Interactive: isTerminal(os.Stderr),
	})
	stop()
	os.Exit(code)
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
