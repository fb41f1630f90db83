// Command executor_bridge shows a subprocess per attempt that keeps the
// durable primitives of an in-process handler through the executor bridge
// (boson.CommandExecutor with Bridge, and package runtime/bridge on the
// child's side): the child checkpoints two steps; the first attempt is
// killed with SIGKILL after the first step, and the next attempt resumes
// without running that step again.
//
// It runs on the in-memory backend and needs no server:
//
//	go run ./examples/executor_bridge
//
// Here the program re-executes itself as the child; in production it is
// any binary that speaks the bridge's JSON lines (its socket is named in
// BOSON_BRIDGE_SOCKET), or a Go program whose main is bridge.Main. The
// worker applies every request with the attempt's own lease, so a child
// whose lease was lost (rescued, cancelled) is refused: fencing holds.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
	"github.com/boson-go/boson/runtime/bridge"
)

// Video is the input of a transcode.
type Video struct {
	Name string `json:"name"`
	// Ledger is a file where the child writes what it does, so that this
	// program can show it (and find the child's pid).
	Ledger string `json:"ledger"`
}

// Encoded is what the child returns.
type Encoded struct {
	Source string `json:"source"`
	Output string `json:"output"`
}

// Transcode runs each attempt in a child process.
var Transcode = boson.NewTask[Video, Encoded]("transcode-video")

// roleEnv tells a re-executed copy of this program to act as the child of
// one attempt.
const roleEnv = "BOSON_EXAMPLE_ROLE"

func main() {
	if os.Getenv(roleEnv) == "transcode" {
		bridge.Main(transcode) // reads stdin, connects, runs, writes stdout, exits
	}
	if err := run(context.Background(), os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "executor_bridge:", err)
		os.Exit(1)
	}
}

// transcode is the child: two checkpointed steps. On its first attempt
// the second step is slow, and the parent kills the process during it.
func transcode(ctx context.Context, c *bridge.Conn, v Video) (Encoded, error) {
	info := c.Info()
	note := func(format string, args ...any) {
		f, err := os.OpenFile(v.Ledger, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return
		}
		defer f.Close()
		fmt.Fprintf(f, "attempt %d (pid %d): %s\n", info.Attempt, os.Getpid(), fmt.Sprintf(format, args...))
	}
	ran := false
	source, err := bridge.Step(ctx, c, "download", func(context.Context) (string, error) {
		ran = true
		note("ran step download")
		return "/scratch/" + v.Name, nil
	})
	if err != nil {
		return Encoded{}, err
	}
	if !ran {
		note("step download replayed from its checkpoint: %s", source)
	}
	output, err := bridge.Step(ctx, c, "encode", func(ctx context.Context) (string, error) {
		note("started step encode")
		if info.Attempt == 1 {
			select { // a long encode, during which the machine kills us
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(20 * time.Second):
			}
		}
		note("finished step encode")
		return strings.TrimSuffix(source, ".mov") + ".mp4", nil
	})
	if err != nil {
		return Encoded{}, err
	}
	return Encoded{Source: source, Output: output}, nil
}

func run(ctx context.Context, stdout io.Writer, args []string) error {
	fs := flag.NewFlagSet("executor_bridge", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "executor-bridge-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ledger := dir + "/ledger"

	backend := mem.New(mem.Options{Logger: quiet})
	defer backend.Close()
	client, err := boson.NewClient(backend, boson.ClientOptions{Logger: quiet})
	if err != nil {
		return err
	}
	worker, err := boson.NewWorker(backend, boson.WorkerOptions{Logger: quiet, PollInterval: 50 * time.Millisecond})
	if err != nil {
		return err
	}
	err = worker.RegisterExecutor(Transcode.Name(), boson.CommandExecutor{
		Path:   self,
		Env:    []string{roleEnv + "=transcode"},
		Bridge: true, // steps, sleeps, awaits and heartbeats for the child
	})
	if err != nil {
		return err
	}
	if err := worker.Start(ctx); err != nil {
		return err
	}
	defer worker.Shutdown(context.Background())

	h, err := boson.Spawn(ctx, client, Transcode, Video{Name: "launch.mov", Ledger: ledger},
		boson.WithRetry(core.RetryPolicy{Initial: 100 * time.Millisecond, Jitter: core.NoJitter}))
	if err != nil {
		return err
	}
	// Once step download is checkpointed and step encode has begun, kill
	// the child as an out-of-memory killer would: SIGKILL, no cleanup.
	pid, err := waitForLine(ctx, ledger, "started step encode")
	if err != nil {
		return err
	}
	if cps, err := client.Checkpoints(ctx, h.ID()); err != nil || len(cps) != 1 || cps[0].Step != "step-download" {
		return fmt.Errorf("checkpoints before the kill: %v %v", cps, err)
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	if err := p.Kill(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "killed pid %d with SIGKILL during step encode; step download was checkpointed\n", pid)

	out, err := h.Wait(ctx)
	if err != nil {
		return err
	}
	lines, err := os.ReadFile(ledger)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "what the child processes did:\n%s", lines)
	fmt.Fprintf(stdout, "result: %s -> %s\n", out.Source, out.Output)
	runs, err := client.ListRuns(ctx, h.ID())
	if err != nil {
		return err
	}
	for _, r := range runs {
		detail := ""
		if r.Error != "" {
			_, why, _ := strings.Cut(r.Error, ": signal: ")
			detail = ": signal: " + strings.TrimRight(why, ": ")
		}
		fmt.Fprintf(stdout, "run %d (attempt %d) %s%s\n", r.Token, r.Attempt, r.Status, detail)
	}
	return nil
}

// waitForLine waits until the ledger holds a line ending in suffix and
// returns the pid named on it.
func waitForLine(ctx context.Context, ledger, suffix string) (int, error) {
	for {
		if f, err := os.Open(ledger); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				line := sc.Text()
				if !strings.HasSuffix(line, suffix) {
					continue
				}
				_, rest, _ := strings.Cut(line, "(pid ")
				pid, err := strconv.Atoi(strings.SplitN(rest, ")", 2)[0])
				f.Close()
				if err != nil {
					return 0, fmt.Errorf("ledger line %q: %v", line, err)
				}
				return pid, nil
			}
			f.Close()
		} else if !errors.Is(err, os.ErrNotExist) {
			return 0, err
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("waiting for %q in the ledger: %w", suffix, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
