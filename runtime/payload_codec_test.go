package boson_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

// doc is an input big enough for the gzip codec to compress.
type doc struct {
	Title string
	Body  string
}

var (
	summarize = boson.NewTask[doc, string]("summarize")
	noteStep  = boson.NewStep[string]("note")
)

func testKey(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func mustAES(t *testing.T, key []byte, previous ...[]byte) *boson.AESGCM {
	t.Helper()
	c, err := boson.NewAESGCM(key, previous...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// codecEnv is an env whose client and worker use the given codecs.
func codecEnv(t *testing.T, client, worker boson.PayloadCodec) (*env, *boson.Client, *boson.Worker) {
	t.Helper()
	e := newEnv(t)
	c, err := boson.NewClient(e.b, boson.ClientOptions{Clock: e.clock, Logger: quiet, PollInterval: 10 * time.Millisecond, Codec: client})
	if err != nil {
		t.Fatal(err)
	}
	w := e.worker(func(o *boson.WorkerOptions) { o.Codec = worker })
	return e, c, w
}

// registerSummarize registers a handler that takes a step and counts its
// calls.
func registerSummarize(t *testing.T, w *boson.Worker, seen *atomic.Value) {
	t.Helper()
	err := boson.Register(w, summarize, func(ctx context.Context, d doc) (string, error) {
		seen.Store(d)
		note, err := noteStep.Run(ctx, func(context.Context) (string, error) { return "secret note on " + d.Title, nil })
		if err != nil {
			return "", err
		}
		return d.Title + ": " + note, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPayloadCodecRoundTrip: with a codec on both sides the store holds
// encoded inputs, results and checkpoints, and the handler and the
// handle see decoded values.
func TestPayloadCodecRoundTrip(t *testing.T) {
	aead := mustAES(t, testKey(1))
	for name, cd := range map[string]boson.PayloadCodec{
		"gzip":        boson.GzipCodec{},
		"aes-gcm":     aead,
		"gzip+aesgcm": boson.ChainCodecs(boson.GzipCodec{}, aead),
	} {
		t.Run(name, func(t *testing.T) {
			e, c, w := codecEnv(t, cd, cd)
			var seen atomic.Value
			registerSummarize(t, w, &seen)
			e.start(w)
			ctx := ctxT(t)
			in := doc{Title: "plans", Body: strings.Repeat("the quarterly plans are confidential. ", 40)}
			h, err := boson.Spawn(ctx, c, summarize, in)
			if err != nil {
				t.Fatal(err)
			}
			out, err := h.Wait(ctx)
			if err != nil || out != "plans: secret note on plans" {
				t.Fatalf("%q %v", out, err)
			}
			if got := seen.Load().(doc); got != in {
				t.Fatalf("the handler saw %+v", got)
			}
			j := e.job(h.ID())
			cps, err := e.b.Checkpoints(ctx, h.ID())
			if err != nil || len(cps) != 1 {
				t.Fatalf("checkpoints %v %v", cps, err)
			}
			for what, stored := range map[string][]byte{"payload": j.Payload, "result": j.Result, "checkpoint": cps[0].Value} {
				if bytes.Contains(stored, []byte("plans")) && name != "gzip" || bytes.Contains(stored, []byte("confidential")) {
					t.Errorf("the stored %s shows its value: %q", what, stored)
				}
			}
			if name == "gzip" && len(j.Payload) >= len(in.Body) {
				t.Errorf("gzip stored %d bytes for a %d-byte body", len(j.Payload), len(in.Body))
			}
			// A client without the codec reads the stored bytes, which do
			// not decode as the task's result.
			if name != "gzip" {
				if raw, err := mustHandle(t, e.client, h.ID()).Result(ctx); err == nil {
					t.Errorf("a client without the codec decoded %q", raw)
				}
			}
		})
	}
}

func mustHandle(t *testing.T, c *boson.Client, id string) *boson.Handle[string] {
	t.Helper()
	h, err := boson.HandleFor(context.Background(), c, summarize, id)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestPayloadCodecWrongKey: a worker with another key fails the job
// permanently, on its first attempt, with an error that says so; a client
// with another key gets an error wrapping ErrCodec from the result.
func TestPayloadCodecWrongKey(t *testing.T) {
	e, c, w := codecEnv(t, mustAES(t, testKey(1)), mustAES(t, testKey(2)))
	var seen atomic.Value
	registerSummarize(t, w, &seen)
	e.start(w)
	ctx := ctxT(t)
	h, err := boson.Spawn(ctx, c, summarize, doc{Title: "x"}, boson.WithMaxAttempts(5))
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Wait(ctx)
	j := e.job(h.ID())
	if !errors.Is(err, boson.ErrTaskFailed) || j.Attempt != 1 || !contains(j.LastError, "a wrong key") || !contains(j.LastError, "decode input of task summarize") {
		t.Fatalf("err %v, attempt %d, last error %q", err, j.Attempt, j.LastError)
	}
	if seen.Load() != nil {
		t.Fatal("the handler ran on input it could not decode")
	}

	// The result: written under key 1, read with key 2.
	e2, c1, w1 := codecEnv(t, mustAES(t, testKey(1)), mustAES(t, testKey(1)))
	registerSummarize(t, w1, &seen)
	e2.start(w1)
	h1, err := boson.Spawn(ctx, c1, summarize, doc{Title: "y"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h1.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	c2, err := boson.NewClient(e2.b, boson.ClientOptions{Clock: e2.clock, Logger: quiet, Codec: mustAES(t, testKey(2))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mustHandle(t, c2, h1.ID()).Result(ctx); !errors.Is(err, boson.ErrCodec) || !contains(err.Error(), "result of task summarize") {
		t.Fatalf("result under another key: %v", err)
	}
	// A client holding the new key and the old one reads it (rotation).
	c3, err := boson.NewClient(e2.b, boson.ClientOptions{Clock: e2.clock, Logger: quiet, Codec: mustAES(t, testKey(3), testKey(1))})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := mustHandle(t, c3, h1.ID()).Result(ctx); err != nil || out != "y: secret note on y" {
		t.Fatalf("after rotation: %q %v", out, err)
	}
}

// TestPayloadCodecCorruptBytes: stored bytes changed, moved to another
// task, or stored without the codec fail the attempt permanently.
func TestPayloadCodecCorruptBytes(t *testing.T) {
	aead := mustAES(t, testKey(1))
	good, err := aead.Encode(boson.CodecScope{Part: boson.PartInput, Task: "summarize"}, []byte(`{"Title":"t"}`))
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(good)
	flipped[len(flipped)-1] ^= 1
	other, err := aead.Encode(boson.CodecScope{Part: boson.PartInput, Task: "another-task"}, []byte(`{"Title":"t"}`))
	if err != nil {
		t.Fatal(err)
	}
	zipped, err := boson.GzipCodec{MinSize: 1}.Encode(boson.CodecScope{}, []byte(strings.Repeat(`{"Title":"t"}`, 10)))
	if err != nil {
		t.Fatal(err)
	}
	zipped[len(zipped)-5] ^= 0xff // inside the gzip trailer's CRC
	for name, c := range map[string]struct {
		codec   boson.PayloadCodec
		payload []byte
		want    string
	}{
		"flipped bit":        {aead, flipped, "authentication failed"},
		"another task's":     {aead, other, "authentication failed"},
		"stored in plain":    {aead, []byte(`{"Title":"t"}`), "not written by this codec"},
		"truncated":          {aead, good[:10], "not written by this codec"},
		"gzip corrupt":       {boson.GzipCodec{}, zipped, "corrupt bytes"},
		"gzip foreign bytes": {boson.GzipCodec{}, []byte{0x7f, 1, 2}, "not written by this codec"},
	} {
		t.Run(name, func(t *testing.T) {
			e, _, w := codecEnv(t, nil, c.codec)
			var seen atomic.Value
			registerSummarize(t, w, &seen)
			e.start(w)
			ctx := ctxT(t)
			res, err := e.b.Enqueue(ctx, []core.EnqueueRequest{{Queue: "default", Task: "summarize", Payload: c.payload, MaxAttempts: 3}})
			if err != nil {
				t.Fatal(err)
			}
			j := e.waitState(res[0].Job.ID, core.StateFailed)
			if j.Attempt != 1 || !contains(j.LastError, "payload codec") || !contains(j.LastError, c.want) {
				t.Fatalf("attempt %d, last error %q, want it to say %q", j.Attempt, j.LastError, c.want)
			}
			if seen.Load() != nil {
				t.Fatal("the handler ran")
			}
		})
	}
}

// TestPayloadCodecCheckpointTampered: a checkpoint that does not decode
// fails the attempt permanently instead of running the step again.
func TestPayloadCodecCheckpointTampered(t *testing.T) {
	aead := mustAES(t, testKey(1))
	e, c, w := codecEnv(t, aead, aead)
	var bodies atomic.Int32
	err := boson.Register(w, summarize, func(ctx context.Context, d doc) (string, error) {
		return noteStep.Run(ctx, func(context.Context) (string, error) { bodies.Add(1); return "n", nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	h, err := boson.Spawn(ctx, c, summarize, doc{})
	if err != nil {
		t.Fatal(err)
	}
	// Plant a checkpoint written under another job's scope before the
	// first attempt runs.
	lease := claimOne(t, e)
	foreign, _ := aead.Encode(boson.CodecScope{Part: boson.PartCheckpoint, Task: "summarize", JobID: "another-job", Name: "step-note"}, []byte(`"n"`))
	if _, err := e.b.SaveCheckpoint(ctx, lease, "step-note", foreign); err != nil {
		t.Fatal(err)
	}
	if err := e.b.Sleep(ctx, lease, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	e.start(w)
	if _, err := h.Wait(ctx); !errors.Is(err, boson.ErrTaskFailed) {
		t.Fatalf("%v", err)
	}
	if j := e.job(h.ID()); !contains(j.LastError, "checkpoint step-note") || !contains(j.LastError, "authentication failed") || bodies.Load() != 0 {
		t.Fatalf("last error %q, step bodies %d", j.LastError, bodies.Load())
	}
}

// claimOne claims the env's only queued job by hand.
func claimOne(t *testing.T, e *env) core.Lease {
	t.Helper()
	js, err := e.b.Claim(context.Background(), core.ClaimRequest{Queue: "default", WorkerID: "hand", Limit: 1, LeaseTTL: time.Minute})
	if err != nil || len(js) != 1 {
		t.Fatalf("claim: %v %v", js, err)
	}
	return js[0].Lease
}

// TestPayloadCodecIdempotency: a retried spawn matches though its
// ciphertext differs, a different input under the key conflicts, and the
// stored fingerprint is sealed with the key.
func TestPayloadCodecIdempotency(t *testing.T) {
	_, c, _ := codecEnv(t, mustAES(t, testKey(1)), nil)
	ctx := ctxT(t)
	h1, err := boson.Spawn(ctx, c, summarize, doc{Title: "a"}, boson.WithIdempotencyKey("k"))
	if err != nil {
		t.Fatal(err)
	}
	h2, err := boson.Spawn(ctx, c, summarize, doc{Title: "a"}, boson.WithIdempotencyKey("k"))
	if err != nil || !h2.Reused() || h2.ID() != h1.ID() {
		t.Fatalf("retry: %v reused=%v", err, h2 != nil && h2.Reused())
	}
	if _, err := boson.Spawn(ctx, c, summarize, doc{Title: "b"}, boson.WithIdempotencyKey("k")); !errors.Is(err, core.ErrIdempotencyConflict) {
		t.Fatalf("conflict: %v", err)
	}
	j, err := c.GetJob(ctx, h1.ID())
	if err != nil {
		t.Fatal(err)
	}
	plain := core.Fingerprint(core.EnqueueRequest{Task: "summarize", Payload: []byte(`{"Title":"a","Body":""}`)})
	if j.Fingerprint == plain || len(j.Fingerprint) != 64 {
		t.Fatalf("fingerprint %q is not sealed", j.Fingerprint)
	}
}

// TestPayloadCodecOptions: bad keys and settings are refused up front.
func TestPayloadCodecOptions(t *testing.T) {
	e := newEnv(t)
	if _, err := boson.NewAESGCM(make([]byte, 10)); !errors.Is(err, core.ErrInvalidArgument) {
		t.Errorf("10-byte key: %v", err)
	}
	if _, err := boson.NewAESGCM(testKey(1), testKey(1)); !errors.Is(err, core.ErrInvalidArgument) {
		t.Errorf("a key twice: %v", err)
	}
	if _, err := boson.NewClient(e.b, boson.ClientOptions{Codec: boson.GzipCodec{Level: 12}}); !errors.Is(err, core.ErrInvalidArgument) {
		t.Errorf("gzip level 12: %v", err)
	}
	if _, err := boson.NewWorker(e.b, boson.WorkerOptions{Codec: boson.ChainCodecs(boson.GzipCodec{MinSize: -1})}); !errors.Is(err, core.ErrInvalidArgument) {
		t.Errorf("negative MinSize in a chain: %v", err)
	}
}

// TestGzipCodec: small or incompressible values are stored raw, JSON
// stored before compression passes through, and a value that expands
// past MaxSize is refused.
func TestGzipCodec(t *testing.T) {
	g := boson.GzipCodec{}
	s := boson.CodecScope{}
	for _, in := range [][]byte{nil, []byte(`{"a":1}`), bytes.Repeat([]byte("x"), 10_000)} {
		enc, err := g.Encode(s, in)
		if err != nil {
			t.Fatal(err)
		}
		if len(in) > 1000 && len(enc) > 200 {
			t.Errorf("%d bytes stored as %d", len(in), len(enc))
		}
		dec, err := g.Decode(s, enc)
		if err != nil || !bytes.Equal(dec, in) {
			t.Errorf("round trip of %d bytes: %d bytes, %v", len(in), len(dec), err)
		}
	}
	// A small JSON value is stored unchanged, readable without the codec.
	if enc, err := g.Encode(s, []byte(`{"a":1}`)); err != nil || string(enc) != `{"a":1}` {
		t.Errorf("small JSON stored as %q %v", enc, err)
	}
	if enc, err := g.Encode(s, []byte("\x01abc")); err != nil || string(enc) != "\x00\x01abc" {
		t.Errorf("small non-JSON stored as %q %v", enc, err)
	}
	if dec, err := g.Decode(s, []byte(` {"legacy":true}`)); err != nil || string(dec) != ` {"legacy":true}` {
		t.Errorf("legacy JSON: %q %v", dec, err)
	}
	big, _ := g.Encode(s, bytes.Repeat([]byte("x"), 1<<20))
	if _, err := (boson.GzipCodec{MaxSize: 1 << 10}).Decode(s, big); err == nil || !contains(err.Error(), "MaxSize") {
		t.Errorf("past MaxSize: %v", err)
	}
}

// FuzzPayloadCodecDecode: arbitrary stored bytes never panic a codec's
// Decode, and the AES-GCM codec accepts only what it sealed.
func FuzzPayloadCodecDecode(f *testing.F) {
	aead, err := boson.NewAESGCM(testKey(7))
	if err != nil {
		f.Fatal(err)
	}
	s := boson.CodecScope{Part: boson.PartInput, Task: "t"}
	sealed, _ := aead.Encode(s, []byte(`{"x":1}`))
	zipped, _ := boson.GzipCodec{MinSize: 1}.Encode(s, bytes.Repeat([]byte(`{"x":1}`), 20))
	for _, seed := range [][]byte{nil, {0}, {1}, sealed, zipped, []byte(`{"x":1}`), {1, 0x1f, 0x8b}} {
		f.Add(seed)
	}
	codecs := []boson.PayloadCodec{aead, boson.GzipCodec{MaxSize: 1 << 16}, boson.ChainCodecs(boson.GzipCodec{MaxSize: 1 << 16}, aead)}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, c := range codecs {
			_, _ = c.Decode(s, b)
		}
		if plain, err := aead.Decode(s, b); err == nil && string(plain) != `{"x":1}` {
			t.Fatalf("AES-GCM accepted bytes it did not seal: %x -> %q", b, plain)
		}
	})
}
