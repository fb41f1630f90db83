package redisq

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// server is a redis-server process the tests started themselves.
type server struct {
	port int
	dir  string
	args []string
	cmd  *exec.Cmd
}

func portFree(p int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// freePort finds a loopback port that is free together with port+10000,
// which a cluster node uses for its bus.
func freePort() (int, error) {
	for range 200 {
		p := 20000 + rand.IntN(20000)
		if portFree(p) && portFree(p+10000) {
			return p, nil
		}
	}
	return 0, errors.New("no free port pair found")
}

// startServer runs redis-server on a free port in dir with extra config
// arguments, and waits until it answers PING.
func startServer(dir string, extra ...string) (*server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server not on PATH: %w", err)
	}
	_ = bin
	p, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &server{port: p, dir: dir}
	s.args = append([]string{"--port", strconv.Itoa(p), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--logfile", filepath.Join(dir, "redis.log")}, extra...)
	return s, s.start()
}

func (s *server) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// start (re)starts the process with the same arguments and directory.
func (s *server) start() error {
	s.cmd = exec.Command("redis-server", s.args...)
	s.cmd.Dir = s.dir
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	c := redis.NewClient(&redis.Options{Addr: s.addr(), MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := c.Ping(context.Background()).Err()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			s.stop()
			log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			return fmt.Errorf("redis-server on %s did not answer: %v\n%s", s.addr(), err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop sends SIGTERM (a clean shutdown that flushes the AOF) and waits.
func (s *server) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
	s.cmd = nil
}
