// Command payload_encryption shows the payload codec hook encrypting what
// boson stores with a key you supply: the client and the worker share
// boson.NewAESGCM(key), so inputs, results and checkpoints are stored as
// AES-GCM ciphertext, bound to their task and job, while the handler and
// the handle see plain values. A worker holding another key fails the job
// at once saying so, stored bytes moved to another task are refused, and a
// rotated key still reads what the old one wrote.
//
// It runs on the in-memory backend and needs no server:
//
//	go run ./examples/payload_encryption
//	go run ./examples/payload_encryption -key "$(openssl rand -hex 32)"
//
// The key is 16, 24 or 32 bytes, given in hex; without -key (or
// $BOSON_EXAMPLE_KEY) the program makes a random one.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

// Payout is sensitive input: it must not be readable in the store.
type Payout struct {
	Account string `json:"account"`
	Cents   int    `json:"cents"`
}

// Receipt is the result.
type Receipt struct {
	Reference string `json:"reference"`
}

var (
	// SendPayout pays an account.
	SendPayout = boson.NewTask[Payout, Receipt]("send-payout")
	// AuditPayout is another task, to show that stored bytes are bound
	// to theirs.
	AuditPayout = boson.NewTask[Payout, Receipt]("audit-payout")
	// transfer is the handler's checkpointed step (its value is stored
	// encrypted too).
	transfer = boson.NewStep[string]("transfer")
)

func main() {
	if err := run(context.Background(), os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "payload_encryption:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, stdout io.Writer, args []string) error {
	fs := flag.NewFlagSet("payload_encryption", flag.ContinueOnError)
	keyHex := fs.String("key", os.Getenv("BOSON_EXAMPLE_KEY"), "AES key in hex: 16, 24 or 32 bytes")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)

	key, err := hex.DecodeString(*keyHex)
	if err != nil {
		return fmt.Errorf("-key: %v", err)
	}
	if len(key) == 0 {
		key = randomKey()
		fmt.Fprintln(stdout, "no -key given: using a random 32-byte key")
	}
	codec, err := boson.NewAESGCM(key)
	if err != nil {
		return err
	}

	backend := mem.New(mem.Options{Logger: quiet})
	defer backend.Close()
	client, err := boson.NewClient(backend, boson.ClientOptions{Logger: quiet, Codec: codec})
	if err != nil {
		return err
	}
	handler := func(ctx context.Context, p Payout) (Receipt, error) {
		ref, err := transfer.Run(ctx, func(context.Context) (string, error) {
			return fmt.Sprintf("TR-%s-%d", p.Account[len(p.Account)-4:], p.Cents), nil
		})
		return Receipt{Reference: ref}, err
	}
	worker, err := boson.NewWorker(backend, boson.WorkerOptions{Logger: quiet, PollInterval: 20 * time.Millisecond, Codec: codec})
	if err != nil {
		return err
	}
	if err := boson.Register(worker, SendPayout, handler); err != nil {
		return err
	}
	if err := boson.Register(worker, AuditPayout, handler); err != nil {
		return err
	}
	if err := worker.Start(ctx); err != nil {
		return err
	}
	defer worker.Shutdown(context.Background())

	// 1. Stored encrypted, seen in plain.
	in := Payout{Account: "DE89370400440532013000", Cents: 125000}
	h, err := boson.Spawn(ctx, client, SendPayout, in)
	if err != nil {
		return err
	}
	receipt, err := h.Wait(ctx)
	if err != nil {
		return err
	}
	j, err := client.GetJob(ctx, h.ID())
	if err != nil {
		return err
	}
	cps, err := client.Checkpoints(ctx, h.ID())
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "stored input: %d bytes, starts %x..., holds the account number: %v\n",
		len(j.Payload), j.Payload[:8], bytes.Contains(j.Payload, []byte(in.Account)))
	fmt.Fprintf(stdout, "stored result and checkpoint hold the reference: %v\n",
		bytes.Contains(j.Result, []byte(receipt.Reference)) || bytes.Contains(cps[0].Value, []byte(receipt.Reference)))
	fmt.Fprintf(stdout, "the handle decodes the result: %s\n", receipt.Reference)

	// 2. A worker fleet with another key: the job fails at once, saying why.
	wrong, err := boson.NewAESGCM(randomKey())
	if err != nil {
		return err
	}
	other, err := startWorker(ctx, backend, wrong, handler, "payouts-eu")
	if err != nil {
		return err
	}
	defer other.Shutdown(context.Background())
	hw, err := boson.Spawn(ctx, client, SendPayout, in, boson.WithQueue("payouts-eu"), boson.WithMaxAttempts(5))
	if err != nil {
		return err
	}
	if _, err := hw.Wait(ctx); !errors.Is(err, boson.ErrTaskFailed) {
		return fmt.Errorf("the job under another key: %v", err)
	}
	jw, err := client.GetJob(ctx, hw.ID())
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "a worker with another key: %s after %d attempt(s) of %d: %s\n", jw.State, jw.Attempt, jw.MaxAttempts, jw.LastError)

	// 3. The stored input moved to another task is refused: it is bound
	// to its task.
	res, err := backend.Enqueue(ctx, []core.EnqueueRequest{{Queue: core.DefaultQueue, Task: AuditPayout.Name(), Payload: j.Payload}})
	if err != nil {
		return err
	}
	moved, err := boson.HandleFor(ctx, client, AuditPayout, res[0].Job.ID)
	if err != nil {
		return err
	}
	_, err = moved.Wait(ctx)
	jm, gerr := client.GetJob(ctx, moved.ID())
	if gerr != nil {
		return gerr
	}
	fmt.Fprintf(stdout, "the ciphertext moved to task %s: %v: %s\n", AuditPayout.Name(), errors.Is(err, boson.ErrTaskFailed), jm.LastError)

	// 4. Key rotation: the new key encrypts, the old one still decrypts.
	rotated, err := boson.NewAESGCM(randomKey(), key)
	if err != nil {
		return err
	}
	reader, err := boson.NewClient(backend, boson.ClientOptions{Logger: quiet, Codec: rotated})
	if err != nil {
		return err
	}
	old, err := boson.HandleFor(ctx, reader, SendPayout, h.ID())
	if err != nil {
		return err
	}
	again, err := old.Result(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "after rotating the key, the old result still reads: %s\n", again.Reference)
	withoutOld, err := boson.NewAESGCM(randomKey())
	if err != nil {
		return err
	}
	stranger, err := boson.NewClient(backend, boson.ClientOptions{Logger: quiet, Codec: withoutOld})
	if err != nil {
		return err
	}
	hs, err := boson.HandleFor(ctx, stranger, SendPayout, h.ID())
	if err != nil {
		return err
	}
	_, err = hs.Result(ctx)
	fmt.Fprintf(stdout, "a client without the old key: ErrCodec %v: %v\n", errors.Is(err, boson.ErrCodec), err)
	return nil
}

// startWorker starts a worker of queue with codec that runs handler.
func startWorker(ctx context.Context, b core.QueueBackend, codec boson.PayloadCodec, handler func(context.Context, Payout) (Receipt, error), queue string) (*boson.Worker, error) {
	w, err := boson.NewWorker(b, boson.WorkerOptions{Queues: []string{queue}, Logger: slog.New(slog.DiscardHandler), PollInterval: 20 * time.Millisecond, Codec: codec})
	if err != nil {
		return nil, err
	}
	if err := boson.Register(w, SendPayout, handler); err != nil {
		return nil, err
	}
	return w, w.Start(ctx)
}

func randomKey() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}
