package testenv

import (
	"bytes"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// startWait bounds how long a started server may take to answer.
const startWait = 60 * time.Second

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// child is a server process the ladder started.
type child struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error
}

// syncBuffer collects a child's output for error messages.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() < 64<<10 {
		s.b.Write(p)
	}
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startChild starts cmd in the foreground of this process; it is killed if
// the test process dies.
func startChild(cmd *exec.Cmd) (*child, error) {
	c := &child{cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = c.out, c.out
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// waitReady polls ready until it succeeds, the child exits or startWait
// passes. Polling waits for an event (the server coming up), not for time.
func (c *child) waitReady(ready func() error) error {
	deadline := time.Now().Add(startWait)
	for {
		err := ready()
		if err == nil {
			return nil
		}
		select {
		case <-c.done:
			return fmt.Errorf("%s exited: %v: %s", c.cmd.Path, c.err, lastLine(c.out.String()))
		default:
		}
		if time.Now().After(deadline) {
			c.stop(syscall.SIGKILL)
			return fmt.Errorf("%s did not answer within %v: %v", c.cmd.Path, startWait, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop signals the child and waits for it, killing it if it lingers.
func (c *child) stop(sig syscall.Signal) {
	_ = c.cmd.Process.Signal(sig)
	select {
	case <-c.done:
	case <-time.After(15 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

func lastLine(s string) string {
	s = string(bytes.TrimSpace([]byte(s)))
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			return s[i+1:]
		}
	}
	return s
}

func itoa(i int) string { return strconv.Itoa(i) }
