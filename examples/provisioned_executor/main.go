// Command provisioned_executor shows a fresh subprocess for each attempt:
// the worker claims, renews the lease, retries and records the outcome,
// while every attempt computes in a new process (boson.CommandExecutor)
// that reads the job's input on stdin and writes its result on stdout.
// Here the program re-executes itself as that subprocess; in production
// it would be any binary, or a container started by a small wrapper.
//
// It runs on the in-memory backend and needs no server:
//
//	go run ./examples/provisioned_executor
//
// The subprocess sees the attempt in its environment (BOSON_JOB_ID,
// BOSON_ATTEMPT, BOSON_TOKEN, ...). Exit status 0 completes the attempt,
// 65 (boson.PermanentExitCode) fails the job for good, and anything else
// fails the attempt, which is retried in a new process.
package main

import (
	"context"
	"encoding/json"
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
)

// Image is the input of a render.
type Image struct {
	Name  string `json:"name"`
	Width int    `json:"width"`
}

// Rendered is what the subprocess prints.
type Rendered struct {
	Thumbnail string `json:"thumbnail"`
	PID       int    `json:"pid"`
}

// Render makes a thumbnail, each attempt in its own process.
var Render = boson.NewTask[Image, Rendered]("render-thumbnail")

// roleEnv tells a re-executed copy of this program to act as the
// subprocess of one attempt.
const roleEnv = "BOSON_EXAMPLE_ROLE"

func main() {
	if os.Getenv(roleEnv) == "render" {
		os.Exit(renderAttempt(os.Stdin, os.Stdout, os.Stderr))
	}
	if err := run(context.Background(), os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "provisioned_executor:", err)
		os.Exit(1)
	}
}

// renderAttempt is the subprocess: it decodes the input from stdin, does
// the work and prints the result, and returns the exit status.
func renderAttempt(stdin io.Reader, stdout, stderr io.Writer) int {
	var img Image
	if err := json.NewDecoder(stdin).Decode(&img); err != nil {
		fmt.Fprintln(stderr, "bad input:", err)
		return boson.PermanentExitCode
	}
	attempt, _ := strconv.Atoi(os.Getenv("BOSON_ATTEMPT"))
	pid := os.Getpid()
	switch {
	case img.Width <= 0:
		fmt.Fprintf(stderr, "pid %d: width %d is not renderable\n", pid, img.Width)
		return boson.PermanentExitCode
	case strings.HasPrefix(img.Name, "huge") && attempt == 1:
		fmt.Fprintf(stderr, "pid %d: out of memory\n", pid)
		return 1
	}
	_ = json.NewEncoder(stdout).Encode(Rendered{
		Thumbnail: fmt.Sprintf("%s@%dpx.png", strings.TrimSuffix(img.Name, ".jpg"), img.Width),
		PID:       pid,
	})
	return 0
}

func run(ctx context.Context, stdout io.Writer, args []string) error {
	fs := flag.NewFlagSet("provisioned_executor", flag.ContinueOnError)
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
	err = worker.RegisterExecutor(Render.Name(), boson.CommandExecutor{
		Path: self,
		Env:  []string{roleEnv + "=render"},
	}, boson.AttemptTimeout(20*time.Second))
	if err != nil {
		return err
	}
	if err := worker.Start(ctx); err != nil {
		return err
	}
	defer worker.Shutdown(context.Background())

	fmt.Fprintf(stdout, "worker runs in pid %d\n", os.Getpid())
	images := []Image{{Name: "cat.jpg", Width: 128}, {Name: "huge-panorama.jpg", Width: 256}, {Name: "broken.jpg", Width: 0}}
	for _, img := range images {
		h, err := boson.Spawn(ctx, client, Render, img, boson.WithRetry(core.RetryPolicy{Initial: 100 * time.Millisecond}))
		if err != nil {
			return err
		}
		out, err := h.Wait(ctx)
		if err != nil && !errors.Is(err, boson.ErrTaskFailed) {
			return err
		}
		runs, rerr := client.ListRuns(ctx, h.ID())
		if rerr != nil {
			return rerr
		}
		fmt.Fprintf(stdout, "%s:\n", img.Name)
		for _, r := range runs {
			detail := ""
			if r.Error != "" {
				_, stderr, _ := strings.Cut(r.Error, ": exit status ")
				detail = ": exit status " + stderr
			}
			fmt.Fprintf(stdout, "  attempt %d %s%s\n", r.Attempt, r.Status, detail)
		}
		if err != nil {
			fmt.Fprintln(stdout, "  => failed for good")
			continue
		}
		fmt.Fprintf(stdout, "  => %s, rendered by pid %d (a fresh process: %v)\n", out.Thumbnail, out.PID, out.PID != os.Getpid())
	}
	return nil
}
