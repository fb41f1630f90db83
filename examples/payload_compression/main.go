// Command payload_compression shows the payload codec hook compressing
// what boson stores: the client and the worker share boson.GzipCodec, so
// inputs, results and checkpoints are stored gzip-compressed while the
// handler and the handle see plain values. A job queued before the codec
// was turned on still runs, and stored bytes that do not decompress fail
// their job at once with a clear error instead of being retried.
//
// It runs on the in-memory backend and needs no server:
//
//	go run ./examples/payload_compression
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
	"strings"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

// Report is a large, repetitive input: the kind compression pays for.
type Report struct {
	Title string   `json:"title"`
	Lines []string `json:"lines"`
}

// Summary is the handler's result.
type Summary struct {
	Title string `json:"title"`
	Lines int    `json:"lines"`
	Words int    `json:"words"`
}

// Summarize counts a report's words.
var Summarize = boson.NewTask[Report, Summary]("summarize-report")

// countWords is a checkpointed step of the handler.
var countWords = boson.NewStep[int]("count-words")

func main() {
	if err := run(context.Background(), os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "payload_compression:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, stdout io.Writer, args []string) error {
	fs := flag.NewFlagSet("payload_compression", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	codec := boson.GzipCodec{} // level 6, values from 256 bytes, at most 64 MiB decompressed

	backend := mem.New(mem.Options{Logger: quiet})
	defer backend.Close()
	// A client from before the codec was turned on, and the current one.
	before, err := boson.NewClient(backend, boson.ClientOptions{Logger: quiet})
	if err != nil {
		return err
	}
	client, err := boson.NewClient(backend, boson.ClientOptions{Logger: quiet, Codec: codec})
	if err != nil {
		return err
	}
	worker, err := boson.NewWorker(backend, boson.WorkerOptions{Logger: quiet, PollInterval: 20 * time.Millisecond, Codec: codec})
	if err != nil {
		return err
	}
	err = boson.Register(worker, Summarize, func(ctx context.Context, r Report) (Summary, error) {
		words, err := countWords.Run(ctx, func(context.Context) (int, error) {
			n := 0
			for _, l := range r.Lines {
				n += len(strings.Fields(l))
			}
			return n, nil
		})
		if err != nil {
			return Summary{}, err
		}
		return Summary{Title: r.Title, Lines: len(r.Lines), Words: words}, nil
	})
	if err != nil {
		return err
	}

	report := Report{Title: "uptime, March"}
	for day := 1; day <= 31; day++ {
		report.Lines = append(report.Lines, fmt.Sprintf("2026-03-%02d all services up, no incidents, p99 latency within target", day))
	}
	legacy, err := boson.Spawn(ctx, before, Summarize, Report{Title: "queued before compression", Lines: []string{"one two three"}})
	if err != nil {
		return err
	}
	if err := worker.Start(ctx); err != nil {
		return err
	}
	defer worker.Shutdown(context.Background())

	h, err := boson.Spawn(ctx, client, Summarize, report)
	if err != nil {
		return err
	}
	sum, err := h.Wait(ctx)
	if err != nil {
		return err
	}
	j, err := client.GetJob(ctx, h.ID())
	if err != nil {
		return err
	}
	plain, err := json.Marshal(report) // what the store would hold without the codec
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "input: %d bytes of JSON, stored as %d bytes (gzip: %v)\n", len(plain), len(j.Payload), j.Payload[0] == 0x01)
	fmt.Fprintf(stdout, "result as the handle decodes it: %+v\n", sum)
	fmt.Fprintf(stdout, "result as stored: %d bytes, below the codec's 256-byte threshold, stored unchanged: %s\n", len(j.Result), j.Result)

	old, err := legacy.Wait(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "a job queued before the codec was on still runs: %+v\n", old)

	// Stored bytes that claim to be gzip but are not: the job fails on its
	// first attempt, without retries, saying why.
	res, err := backend.Enqueue(ctx, []core.EnqueueRequest{{Queue: core.DefaultQueue, Task: Summarize.Name(), Payload: []byte("\x01not gzip at all"), MaxAttempts: 5}})
	if err != nil {
		return err
	}
	bad, err := boson.HandleFor(ctx, client, Summarize, res[0].Job.ID)
	if err != nil {
		return err
	}
	if _, err := bad.Wait(ctx); !errors.Is(err, boson.ErrTaskFailed) {
		return fmt.Errorf("the corrupt job: %v", err)
	}
	bj, err := client.GetJob(ctx, bad.ID())
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "corrupt stored bytes: %s after %d attempt(s) of %d: %s\n", bj.State, bj.Attempt, bj.MaxAttempts, bj.LastError)
	return nil
}
