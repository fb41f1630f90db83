package boson

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/boson-go/boson/runtime/bridge"
)

// maxBridgeConns bounds the connections one subprocess may hold open to
// its bridge at once.
const maxBridgeConns = 8

// bridgeServer is the worker's end of the executor bridge of one attempt:
// a Unix socket in a private directory that the attempt's subprocess
// connects to. Every request is applied with the attempt's own lease, as
// the in-process steps, sleeps and awaits are, so fencing holds.
type bridgeServer struct {
	a    *attempt
	dir  string
	path string
	ln   net.Listener
	ctx  context.Context
	stop context.CancelFunc
	log  *slog.Logger
	wg   sync.WaitGroup

	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	closed  bool
	suspend *SuspendError // a sleep the bridge granted
}

// startBridge listens for the subprocess of attempt a in a new private
// directory under dir (empty means the system's temporary directory).
// Requests are served under ctx until close.
func startBridge(ctx context.Context, a *attempt, dir string) (*bridgeServer, error) {
	d, err := os.MkdirTemp(dir, "boson-bridge-")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(d, "s")
	ln, err := net.Listen("unix", path)
	if err != nil {
		_ = os.RemoveAll(d)
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	s := &bridgeServer{a: a, dir: d, path: path, ln: ln, conns: map[net.Conn]struct{}{}}
	s.log = a.w.attemptLog(&a.job)
	s.ctx, s.stop = context.WithCancel(ctx)
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// close stops serving, closes every connection, waits for the requests in
// flight and removes the socket's directory. It may be called twice.
func (s *bridgeServer) close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.stop()
	_ = s.ln.Close()
	s.wg.Wait()
	_ = os.RemoveAll(s.dir)
}

// suspended returns the sleep the bridge granted, if any.
func (s *bridgeServer) suspended() *SuspendError {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.suspend
}

func (s *bridgeServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed || len(s.conns) >= maxBridgeConns {
			s.mu.Unlock()
			s.refuse(c)
			continue
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

// refuse answers a connection over the bound with an error and closes it.
func (s *bridgeServer) refuse(c net.Conn) {
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_ = writeResponse(c, bridge.Response{Error: &bridge.Error{Code: bridge.CodeFailed, Message: fmt.Sprintf("at most %d connections per attempt", maxBridgeConns)}})
	_ = c.Close()
}

// serve answers one connection's requests in order until it closes.
func (s *bridgeServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		_ = c.Close()
	}()
	r := bufio.NewReaderSize(c, 64<<10)
	for n := 1; ; n++ {
		line, tooLong, err := readBridgeLine(r)
		if err != nil {
			return
		}
		var resp bridge.Response
		if tooLong {
			resp.Error = &bridge.Error{Code: bridge.CodeInvalid, Message: fmt.Sprintf("line %d is longer than %d bytes", n, bridge.MaxLine)}
		} else {
			resp = s.respond(line)
		}
		if resp.Error != nil && resp.Error.Code == bridge.CodeInvalid {
			s.log.Warn("boson: bridge request refused", "line", n, "error", resp.Error.Message)
		}
		if err := writeResponse(c, resp); err != nil {
			return
		}
	}
}

// readBridgeLine reads one line; a line over bridge.MaxLine is skipped to
// its end and reported as too long.
func readBridgeLine(r *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		part, err := r.ReadSlice('\n')
		if !tooLong {
			line = append(line, part...)
			if len(line) > bridge.MaxLine {
				tooLong, line = true, nil
			}
		}
		switch {
		case err == nil:
			return line, tooLong, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, false, err
		}
	}
}

func writeResponse(c net.Conn, resp bridge.Response) error {
	b, err := json.Marshal(resp)
	if err != nil {
		b, _ = json.Marshal(bridge.Response{ID: resp.ID, Error: &bridge.Error{Code: bridge.CodeFailed, Message: "unencodable response"}})
	}
	_, err = c.Write(append(b, '\n'))
	return err
}

// respond parses and applies one line. A panic while applying it is
// answered as a failure: nothing a child sends can crash the worker.
func (s *bridgeServer) respond(line []byte) (resp bridge.Response) {
	req, err := bridge.ParseRequest(line)
	resp.ID = req.ID
	if err != nil {
		resp.Error = &bridge.Error{Code: bridge.CodeInvalid, Message: err.Error(), Permanent: true}
		return resp
	}
	defer func() {
		if v := recover(); v != nil {
			s.log.Error("boson: bridge request panicked", "op", req.Op, "panic", v)
			resp = bridge.Response{ID: req.ID, Error: &bridge.Error{Code: bridge.CodeFailed, Message: fmt.Sprintf("internal error: %v", v)}}
		}
	}()
	if err := s.apply(req, &resp); err != nil {
		resp.OK, resp.Error = false, bridgeError(err)
		return resp
	}
	resp.OK = true
	return resp
}

// apply runs one valid request with the attempt's lease.
func (s *bridgeServer) apply(req bridge.Request, resp *bridge.Response) error {
	a, ctx := s.a, s.ctx
	if susp := s.suspended(); susp != nil {
		return fmt.Errorf("%w: the task is sleeping in %q; exit now", errBridgeSuspended, susp.Sleep)
	}
	if a.lost.Load() && req.Op != bridge.OpStepGet {
		return errLeaseLostCause
	}
	switch req.Op {
	case bridge.OpStepGet:
		v, ok, err := a.checkpoint(ctx, stepPrefix+req.Name)
		switch {
		case err != nil:
			return err
		case ok:
			resp.Found, resp.Value = true, jsonValue(v)
		case a.lost.Load():
			// A miss would run the step's body: not once another
			// attempt may be running it.
			return errLeaseLostCause
		case ctx.Err() != nil:
			return context.Cause(ctx)
		}
	case bridge.OpStepSave:
		// Read first, as Step.Run does: a committed value is answered
		// without a write (and the read loads the attempt's checkpoints).
		key := stepPrefix + req.Name
		v, ok, err := a.checkpoint(ctx, key)
		if err != nil {
			return err
		}
		if !ok {
			if v, err = a.save(ctx, key, req.Value); err != nil {
				return err
			}
		}
		resp.Value = jsonValue(v)
	case bridge.OpSleep:
		wake := a.w.clock.Now().Add(time.Duration(req.DelayMS) * time.Millisecond)
		if req.Until != "" {
			wake, _ = time.Parse(time.RFC3339Nano, req.Until)
		}
		err := sleepUntil(ctx, a, req.Name, wake)
		var susp *SuspendError
		switch {
		case errors.As(err, &susp):
			s.mu.Lock()
			s.suspend = susp
			s.mu.Unlock()
			resp.Suspend, resp.Until = true, susp.Until.UTC().Format(time.RFC3339Nano)
		case err != nil:
			return err
		default:
			resp.Done = true
		}
	case bridge.OpAwait:
		b, j, err := s.findJob(ctx, req.Job)
		if err != nil {
			return err
		}
		v, err := a.await(ctx, b, j.ID, j.Queue)
		if err != nil {
			return err
		}
		resp.Value = jsonValue(v)
	case bridge.OpHeartbeat:
		nl, err := a.b.Heartbeat(ctx, a.currentLease(), a.w.opts.LeaseTTL)
		if err != nil {
			return a.fenced(err)
		}
		a.mu.Lock()
		if nl.Token == a.lease.Token && nl.ExpiresAt.After(a.lease.ExpiresAt) {
			a.lease = nl
		}
		a.mu.Unlock()
		resp.ExpiresAt = nl.ExpiresAt.UTC().Format(time.RFC3339Nano)
	}
	return nil
}

// errBridgeSuspended refuses requests after a sleep suspended the task.
var errBridgeSuspended = errors.New("boson: bridge: suspended")

// findJob finds an awaited job on the worker's backends.
func (s *bridgeServer) findJob(ctx context.Context, id string) (core.QueueBackend, core.Job, error) {
	bs := []core.QueueBackend{s.a.b}
	if r := s.a.w.router; r != nil {
		bs = r.Backends()
	}
	for _, b := range bs {
		j, err := b.GetJob(ctx, id)
		if err == nil {
			return b, j, nil
		}
		if !errors.Is(err, core.ErrNotFound) {
			return nil, core.Job{}, err
		}
	}
	return nil, core.Job{}, fmt.Errorf("%w: job %s", core.ErrNotFound, id)
}

// jsonValue passes a stored value on as JSON: an empty value is null.
func jsonValue(v []byte) json.RawMessage {
	if len(v) == 0 || !json.Valid(v) {
		return json.RawMessage("null")
	}
	return v
}

// bridgeError turns the error of a request into its wire form.
func bridgeError(err error) *bridge.Error {
	e := &bridge.Error{Message: err.Error(), Permanent: IsPermanent(err)}
	var te *TaskError
	switch {
	case errors.Is(err, core.ErrLeaseLost):
		e.Code = bridge.CodeLeaseLost
	case errors.Is(err, errBridgeSuspended):
		e.Code = bridge.CodeSuspended
	case errors.As(err, &te):
		e.Code, e.Permanent = bridge.CodeTaskFailed, false
		if te.State == core.StateCancelled {
			e.Code = bridge.CodeTaskCancelled
		}
	case errors.Is(err, core.ErrNotFound):
		e.Code = bridge.CodeNotFound
	case errors.Is(err, core.ErrInvalidArgument):
		e.Code = bridge.CodeInvalid
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, errShutdown):
		e.Code = bridge.CodeCancelled
	default:
		e.Code = bridge.CodeFailed
	}
	return e
}
