package redisq

import (
	"bytes"
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/redis/go-redis/v9"
)

// slowProxy forwards loopback connections to a Redis server, delays the
// replies on a connection by delay once a script was sent on it, and counts
// the script calls that clients send.
type slowProxy struct {
	ln       net.Listener
	target   string
	delay    time.Duration
	evalshas atomic.Int64
	wg       sync.WaitGroup
}

func newSlowProxy(t *testing.T, target string, delay time.Duration) *slowProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &slowProxy{ln: ln, target: target, delay: delay}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *slowProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		var armed atomic.Bool // replies are late once a script was sent
		p.wg.Add(2)
		go func() { // client -> server, counting script calls
			defer p.wg.Done()
			defer s.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					low := bytes.ToLower(buf[:n])
					if k := bytes.Count(low, []byte("evalsha")) + bytes.Count(low, []byte("fcall")); k > 0 {
						p.evalshas.Add(int64(k))
						armed.Store(true)
					}
					if _, werr := s.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
		go func() { // server -> client, late
			defer p.wg.Done()
			defer c.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := s.Read(buf)
				if n > 0 {
					if armed.Load() {
						time.Sleep(p.delay)
					}
					if _, werr := c.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err == io.EOF || err != nil {
					return
				}
			}
		}()
	}
}

// TestScriptCallsAreNotResent: when a script's reply times out, the client
// does not send the script again (go-redis would by default), so a claim
// runs once: the caller gets an error and the job it claimed stays claimed
// once, to be rescued when its lease expires.
func TestScriptCallsAreNotResent(t *testing.T) {
	ctx := context.Background()
	direct := standaloneClient(t)
	clock := core.NewManualClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	setup := newBackend(t, direct, Options{Clock: clock})
	setup.mustEnqueue(t, core.EnqueueRequest{Queue: "q", Task: "t"})
	setup.mustEnqueue(t, core.EnqueueRequest{Queue: "q", Task: "t"})
	// Load the library so that the slow path below is a single FCALL.
	if _, err := setup.Claim(ctx, core.ClaimRequest{Queue: "none", WorkerID: "w", Limit: 1, LeaseTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}

	proxy := newSlowProxy(t, direct.Options().Addr, 300*time.Millisecond)
	slow := redis.NewClient(&redis.Options{Addr: proxy.ln.Addr().String(), DB: direct.Options().DB, ReadTimeout: 100 * time.Millisecond, MaxRetries: 3})
	t.Cleanup(func() { slow.Close() })
	b, err := New(slow, Options{Prefix: setup.opts.Prefix, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	_, err = b.Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: "slow", Limit: 1, LeaseTTL: time.Minute})
	if err == nil {
		t.Fatal("claim through the slow proxy succeeded; the test needs a timeout")
	}
	if n := proxy.evalshas.Load(); n != 1 {
		t.Fatalf("the claim script was sent %d times, want 1", n)
	}
	counts, err := setup.CountJobs(ctx, core.JobFilter{Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if counts[core.StateRunning] != 1 || counts[core.StateQueued] != 1 {
		t.Fatalf("counts %v: want exactly one job claimed", counts)
	}
	clock.Advance(2 * time.Minute)
	rr, err := setup.Rescue(ctx, core.RescueRequest{Limit: 10})
	if err != nil || rr.Requeued != 1 {
		t.Fatalf("rescue %+v %v", rr, err)
	}
}
