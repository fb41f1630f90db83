// Package bridge is the executor bridge: the protocol between a worker and
// the subprocess that a boson.CommandExecutor with Bridge set starts for an
// attempt, and the subprocess's side of it in Go. Through it a subprocess
// keeps the durable primitives of an in-process handler: checkpointed
// steps, durable sleeps, awaits of other jobs and lease heartbeats. The
// worker applies every request with the attempt's own lease, so fencing
// holds: once the lease is lost (the job rescued, cancelled or past its
// deadline) every write is refused with CodeLeaseLost, which errors.Is
// maps to core.ErrLeaseLost.
//
// The child's side is one call:
//
//	func main() {
//		bridge.Main(func(ctx context.Context, c *bridge.Conn, in Input) (Output, error) {
//			rows, err := bridge.Step(ctx, c, "fetch", func(ctx context.Context) ([]Row, error) { ... })
//			if err != nil {
//				return Output{}, err
//			}
//			...
//		})
//	}
//
// Main reads the input (JSON) from standard input, connects, runs the
// function and writes its output (JSON) to standard output, and exits with
// the status the worker reads: 0 done (or suspended by a sleep),
// PermanentExitCode for an error marked Permanent, 1 to retry.
//
// # Protocol
//
// The worker listens on a Unix socket in a private directory and names it
// in the child's environment (EnvSocket). The child sends one JSON object
// per line (Request) and reads one per line back (Response), in order; a
// child may hold a few connections at once. Lines are at most MaxLine
// bytes. Requests:
//
//	{"id":1,"op":"step.get","name":"fetch"}                      -> {"id":1,"ok":true,"found":true,"value":[...]}
//	{"id":2,"op":"step.save","name":"fetch","value":[...]}       -> {"id":2,"ok":true,"value":[...]}  (the committed value)
//	{"id":3,"op":"sleep","name":"cool-off","delay_ms":60000}     -> {"id":3,"ok":true,"suspend":true,"until":"..."}
//	{"id":4,"op":"sleep","name":"cool-off","until":"2026-05-01T10:00:00Z"} -> {"id":4,"ok":true,"done":true}
//	{"id":5,"op":"await","job":"<job id>"}                       -> {"id":5,"ok":true,"value":<its result>}
//	{"id":6,"op":"heartbeat"}                                    -> {"id":6,"ok":true,"expires_at":"..."}
//
// A refusal is {"id":N,"ok":false,"error":{"code":"lease_lost","message":"...","permanent":false}}
// with one of the Code constants; a line that is not a request is refused
// with CodeInvalid (and id 0 when no id could be read) and the connection
// keeps serving. A step is stored as the checkpoint "step-<name>", the one
// an in-process boson.NewStep of the same name reads, with the value as
// JSON. After a sleep suspended the task the child must exit; the task
// runs again from the start at the wake time and replays its steps.
package bridge
