package e2e_test

import (
	"bytes"
	"context"
	"os"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
	"github.com/boson-go/boson/runtime/bridge"
)

// bridgeChildEnv makes the test binary act as the subprocess of an
// executor-bridge attempt (see TestMain).
const bridgeChildEnv = "BOSON_E2E_BRIDGE_CHILD"

type bridgedIn struct{ Child string }

type bridgedOut struct{ Step, Child int }

// bridgeChild is the subprocess: a step, a durable sleep and an await.
func bridgeChild() int {
	return bridge.Run(context.Background(), os.Stdin, os.Stdout, os.Stderr, func(ctx context.Context, c *bridge.Conn, in bridgedIn) (bridgedOut, error) {
		n, err := bridge.Step(ctx, c, "one", func(context.Context) (int, error) { return c.Info().Attempt * 100, nil })
		if err != nil {
			return bridgedOut{}, err
		}
		if err := c.Sleep(ctx, "nap", time.Minute); err != nil {
			return bridgedOut{}, err
		}
		child, err := bridge.Await[int](ctx, c, in.Child)
		return bridgedOut{Step: n, Child: child}, err
	})
}

var (
	secretTask = boson.NewTask[string, string]("secret")
	secretStep = boson.NewStep[string]("seal")
	bridgeTask = boson.NewTask[bridgedIn, bridgedOut]("bridged")
)

var codecBridgeScenarios = []scenario{
	// Binary stored bytes (gzip, then AES-GCM) round-trip through every
	// store: the input, a step's checkpoint and the result.
	{"payload_codec_round_trip", func(e *env) {
		aead, err := boson.NewAESGCM(bytes.Repeat([]byte{7}, 32))
		e.must(err)
		codec := boson.ChainCodecs(boson.GzipCodec{MinSize: 1}, aead)
		c, err := boson.NewClient(e.b, boson.ClientOptions{Clock: e.clock, Logger: quiet, PollInterval: 20 * time.Millisecond, Codec: codec})
		e.must(err)
		w := e.worker(func(o *boson.WorkerOptions) { o.Codec = codec })
		e.must(boson.Register(w, secretTask, func(ctx context.Context, in string) (string, error) {
			return secretStep.Run(ctx, func(context.Context) (string, error) { return "sealed " + in, nil })
		}))
		e.start(w)
		h, err := boson.Spawn(e.ctx, c, secretTask, "the launch code is 0000")
		e.must(err)
		out, err := h.Wait(e.ctx)
		if err != nil || out != "sealed the launch code is 0000" {
			e.Fatalf("%q %v", out, err)
		}
		j := e.job(h.ID())
		if bytes.Contains(j.Payload, []byte("launch")) || bytes.Contains(j.Result, []byte("launch")) {
			e.Fatalf("stored in plain: %q / %q", j.Payload, j.Result)
		}
		cps, err := e.b.Checkpoints(e.ctx, h.ID())
		e.must(err)
		if len(cps) != 1 {
			e.Fatalf("checkpoints %v", cps)
		}
		plain, err := codec.Decode(boson.CodecScope{Part: boson.PartCheckpoint, Task: "secret", JobID: h.ID(), Name: cps[0].Step}, cps[0].Value)
		if err != nil || string(plain) != `"sealed the launch code is 0000"` {
			e.Fatalf("the stored checkpoint does not decode: %q %v", plain, err)
		}
	}},
	// A subprocess's step, sleep and await through the executor bridge.
	{"executor_bridge", func(e *env) {
		w := e.worker(func(o *boson.WorkerOptions) { o.Queues = []string{"default", "children"} })
		e.must(w.RegisterExecutor(bridgeTask.Name(), boson.CommandExecutor{Path: os.Args[0], Env: []string{bridgeChildEnv + "=1"}, Bridge: true}))
		e.must(boson.Register(w, childTask, func(_ context.Context, n int) (int, error) { return n + 1, nil }))
		e.start(w)
		ch, err := boson.Spawn(e.ctx, e.client, childTask, 41, boson.WithQueue("children"))
		e.must(err)
		h, err := boson.Spawn(e.ctx, e.client, bridgeTask, bridgedIn{Child: ch.ID()})
		e.must(err)
		j := e.waitState(h.ID(), core.StateSleeping)
		e.clock.Set(j.RunAt)
		out, err := h.Wait(e.ctx)
		if err != nil || out.Step != 100 || out.Child != 42 {
			e.Fatalf("%+v %v", out, err)
		}
		cps, err := e.b.Checkpoints(e.ctx, h.ID())
		e.must(err)
		names := map[string]string{}
		for _, c := range cps {
			names[c.Step] = string(c.Value)
		}
		if names["step-one"] != "100" || names["await-"+ch.ID()] != "42" || names["sleep-nap"] == "" {
			e.Fatalf("checkpoints %v", names)
		}
	}},
}
