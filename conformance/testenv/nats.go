package testenv

import (
	"bufio"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"
)

// NATSService returns the NATS rung set: BOSON_TEST_NATS_URL, then start
// (for example an in-process nats-server with JetStream, which this
// package does not depend on; nil skips the rung), then the nats:2 image
// with JetStream on.
func NATSService(start func() (url string, stop func(), err error)) Service {
	return Service{
		Name:   "nats",
		EnvVar: EnvNATS,
		Start:  start,
		Docker: &Container{
			Repository: "nats", Tag: "2-alpine", Port: "4222/tcp",
			Cmd:   []string{"-js"},
			URL:   func(hostPort string) string { return "nats://" + hostPort },
			Ready: natsPing,
		},
	}
}

// NATS returns the URL of a NATS server with JetStream, or skips t when
// there is none (fails it when BOSON_TEST_REQUIRE asks for nats). start
// is the caller's own starter, as for [NATSService].
func NATS(t testing.TB, start func() (url string, stop func(), err error)) string {
	t.Helper()
	return Lookup(t, NATSService(start))
}

// natsPing reads the INFO line a NATS server greets clients with.
func natsPing(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	conn, err := net.DialTimeout("tcp", u.Host, 2*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "INFO ") {
		return fmt.Errorf("nats greeted with %q", strings.TrimSpace(line))
	}
	return nil
}
