package testenv

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// RedisService is the Redis rung set: BOSON_TEST_REDIS_URL, a redis-server
// from PATH, or the redis:7 image.
var RedisService = Service{
	Name:   "redis",
	EnvVar: EnvRedis,
	Start:  startRedis,
	Docker: &Container{
		Repository: "redis", Tag: "7-alpine", Port: "6379/tcp",
		Cmd:   []string{"redis-server", "--save", "", "--appendonly", "no"},
		URL:   func(hostPort string) string { return "redis://" + hostPort + "/0" },
		Ready: redisPing,
	},
}

// Redis returns the URL of a Redis server (redis://host:port/0), or skips
// t when there is none (fails it when BOSON_TEST_REQUIRE asks for redis).
func Redis(t testing.TB) string {
	t.Helper()
	return Lookup(t, RedisService)
}

// startRedis runs redis-server from PATH on a free loopback port, without
// persistence, in a temporary directory.
func startRedis() (string, func(), error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", nil, fmt.Errorf("%w: redis-server is not on PATH", ErrUnavailable)
	}
	dir, err := os.MkdirTemp("", "boson-redis-")
	if err != nil {
		return "", nil, err
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	cmd := exec.Command(bin, "--port", itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--daemonize", "no", "--protected-mode", "no")
	c, err := startChild(cmd)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	url := fmt.Sprintf("redis://127.0.0.1:%d/0", port)
	stop := func() {
		c.stop(syscall.SIGTERM)
		os.RemoveAll(dir)
	}
	if err := c.waitReady(func() error { return redisPing(url) }); err != nil {
		stop()
		return "", nil, err
	}
	return url, stop, nil
}

// redisPing sends PING to the server at url (redis://host:port/...).
func redisPing(url string) error {
	hostPort := strings.TrimPrefix(url, "redis://")
	if i := strings.IndexByte(hostPort, '/'); i >= 0 {
		hostPort = hostPort[:i]
	}
	if i := strings.LastIndexByte(hostPort, '@'); i >= 0 {
		hostPort = hostPort[i+1:]
	}
	conn, err := net.DialTimeout("tcp", hostPort, 2*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("redis answered %q to PING", strings.TrimSpace(line))
	}
	return nil
}
