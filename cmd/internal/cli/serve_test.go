package cli

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for one writer and one reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serve starts "boson serve" with args and returns its base URL and a
// function that interrupts it and returns its exit code.
func serve(t *testing.T, args ...string) (string, func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, append([]string{"serve"}, args...), Env{Stdout: &bytes.Buffer{}, Stderr: &stderr})
	}()
	re := regexp.MustCompile(`listening on (http://\S+)`)
	var base string
	for base == "" {
		select {
		case code := <-done:
			t.Fatalf("serve exited %d: %s", code, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			base = m[1]
		}
	}
	return base, func() int {
		cancel()
		code := <-done
		if code != ExitOK {
			t.Errorf("serve exited %d after interrupt: %s", code, stderr.String())
		}
		return code
	}
}

func TestServe(t *testing.T) {
	db := "sqlite:" + t.TempDir() + "/serve.db"
	must(t, ExitOK, "enqueue", "--url", db, "--task", "t", "--queue", "web")
	base, stop := serve(t, "--url", db, "--addr", "127.0.0.1:0", "--prefix", "/ops", "--admin-token", "s3cret")
	get := func(path, token string) int {
		req, _ := http.NewRequest("GET", base+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("api/v1/queues", ""); code != http.StatusUnauthorized {
		t.Errorf("without a token: %d, want 401", code)
	}
	if code := get("api/v1/queues", "s3cret"); code != http.StatusOK {
		t.Errorf("with the token: %d, want 200", code)
	}
	if !strings.HasSuffix(base, "/ops/") {
		t.Errorf("base %q does not end in the prefix", base)
	}
	stop()
}

// TestServeLoopbackRefusesRebinding: the read-only dashboard that a
// loopback address serves without login answers only requests for a
// loopback host, so a page of another site whose name was rebound to
// 127.0.0.1 cannot read it; --allowed-host adds a name.
func TestServeLoopbackRefusesRebinding(t *testing.T) {
	db := "sqlite:" + t.TempDir() + "/serve.db"
	must(t, ExitOK, "enqueue", "--url", db, "--task", "t", "--queue", "web")
	get := func(base, host string) int {
		req, _ := http.NewRequest("GET", base+"api/v1/queues", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	base, stop := serve(t, "--url", db, "--addr", "127.0.0.1:0")
	u, _ := url.Parse(base)
	if code := get(base, u.Host); code != http.StatusOK {
		t.Errorf("Host %s: %d, want 200", u.Host, code)
	}
	if code := get(base, "localhost:"+u.Port()); code != http.StatusOK {
		t.Errorf("Host localhost: %d, want 200", code)
	}
	if code := get(base, "attacker.example:"+u.Port()); code != http.StatusForbidden {
		t.Errorf("rebound Host attacker.example: %d, want 403", code)
	}
	stop()

	base, stop = serve(t, "--url", db, "--addr", "127.0.0.1:0", "--allowed-host", "jobs.internal")
	if code := get(base, "jobs.internal"); code != http.StatusOK {
		t.Errorf("--allowed-host jobs.internal: %d, want 200", code)
	}
	if code := get(base, "attacker.example"); code != http.StatusForbidden {
		t.Errorf("--allowed-host, Host attacker.example: %d, want 403", code)
	}
	stop()

	r := run(t, nil, "", "serve", "--url", db, "--addr", "127.0.0.1:0", "--trusted-proxy", "not-an-address")
	if r.code != ExitUsage {
		t.Errorf("--trusted-proxy not-an-address: exit %d, want %d: %s", r.code, ExitUsage, r.stderr)
	}
}

func TestServeRefusesOpenNonLoopback(t *testing.T) {
	db := "sqlite:" + t.TempDir() + "/serve.db"
	r := run(t, nil, "", "serve", "--url", db, "--addr", "0.0.0.0:0")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "--no-auth") {
		t.Fatalf("exit %d, stderr %s", r.code, r.stderr)
	}
}
