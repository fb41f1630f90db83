package faults_test

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// proxy is a loopback TCP proxy between worker processes and a store. It
// can drop every connection, stall traffic (both ways, new connections
// included) for a while, and delay every chunk it forwards.
type proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	conns map[net.Conn]struct{}

	accepted atomic.Int64 // connections accepted so far
	live     atomic.Int64 // connections open now
	peak     atomic.Int64 // most connections open at once

	latency    atomic.Int64 // nanoseconds added to each forwarded chunk
	stallUntil atomic.Int64 // unix nanoseconds; traffic waits until then
	wg         sync.WaitGroup
}

// startProxy listens on a free loopback port and forwards to target until
// the test ends.
func startProxy(t testing.TB, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is the address workers dial instead of the store's.
func (p *proxy) Addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wait()
		s, err := net.DialTimeout("tcp", p.target, 2*time.Second)
		if err != nil {
			c.Close()
			continue
		}
		p.track(c, s)
		p.accepted.Add(1)
		if n := p.live.Add(1); n > p.peak.Load() {
			p.peak.Store(n)
		}
		var once sync.Once
		gone := func() { once.Do(func() { p.live.Add(-1) }) }
		p.wg.Add(2)
		go func() { p.pipe(c, s); gone() }()
		go func() { p.pipe(s, c); gone() }()
	}
}

func (p *proxy) track(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
}

func (p *proxy) forget(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

// wait blocks while traffic is stalled.
func (p *proxy) wait() {
	for {
		until := p.stallUntil.Load()
		now := time.Now().UnixNano()
		if now >= until {
			return
		}
		time.Sleep(min(time.Duration(until-now), 20*time.Millisecond))
	}
}

func (p *proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	defer func() {
		dst.Close()
		src.Close()
		p.forget(dst)
		p.forget(src)
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.wait()
			if d := time.Duration(p.latency.Load()); d > 0 {
				time.Sleep(d)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// DropAll closes every connection through the proxy, as a network cut
// or a load balancer's reset does; new connections are accepted.
func (p *proxy) DropAll() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.conns) / 2
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
	return n
}

// Stall holds all traffic for d: connections stay open, bytes wait.
func (p *proxy) Stall(d time.Duration) { p.stallUntil.Store(time.Now().Add(d).UnixNano()) }

// SetLatency delays every forwarded chunk by d.
func (p *proxy) SetLatency(d time.Duration) { p.latency.Store(int64(d)) }

func (p *proxy) close() {
	p.ln.Close()
	p.stallUntil.Store(0)
	p.DropAll()
	p.wg.Wait()
}
