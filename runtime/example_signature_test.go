package boson_test

import (
	"context"
	"errors"
	"fmt"

	mem "github.com/boson-go/boson/backend-mem"
	boson "github.com/boson-go/boson/runtime"
)

// A producer of an older build spawns "charge" with amounts in cents; the
// worker of the new build takes euros under the same JSON field. The job's
// signature tells them apart, so the worker refuses it before decoding.
func ExampleTask_Signature() {
	type chargeV1 struct {
		Cents int `json:"amount"`
	}
	type chargeV2 struct {
		Euros float64 `json:"amount"`
	}
	oldCharge := boson.NewTask[chargeV1, bool]("charge")
	newCharge := boson.NewTask[chargeV2, bool]("charge")
	pinned := boson.NewTask[chargeV2, bool]("charge", boson.Version("2"))
	fmt.Println(oldCharge.Signature() != newCharge.Signature(), pinned.Signature())

	ctx := context.Background()
	backend := mem.New(mem.Options{Logger: quiet})
	defer backend.Close()
	client, _ := boson.NewClient(backend, boson.ClientOptions{})
	worker, _ := boson.NewWorker(backend, boson.WorkerOptions{Logger: quiet, SignatureMismatch: boson.SignatureFail})
	_ = boson.Register(worker, newCharge, func(ctx context.Context, in chargeV2) (bool, error) { return true, nil })
	_ = worker.Start(ctx)
	defer worker.Shutdown(ctx)

	h, _ := boson.Spawn(ctx, client, oldCharge, chargeV1{Cents: 1250})
	_, err := h.Wait(ctx)
	fmt.Println(errors.Is(err, boson.ErrTaskFailed))
	// Output:
	// true version:2
	// true
}
