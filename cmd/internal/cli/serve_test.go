package cli

import (
	"bytes"
	"context"
	"net/http"
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

func TestServe(t *testing.T) {
	db := "sqlite:" + t.TempDir() + "/serve.db"
	must(t, ExitOK, "enqueue", "--url", db, "--task", "t", "--queue", "web")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"serve", "--url", db, "--addr", "127.0.0.1:0", "--prefix", "/ops", "--admin-token", "s3cret"},
			Env{Stdout: &bytes.Buffer{}, Stderr: &stderr})
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
	cancel()
	if code := <-done; code != ExitOK {
		t.Fatalf("serve exited %d after interrupt: %s", code, stderr.String())
	}
}

func TestServeRefusesOpenNonLoopback(t *testing.T) {
	db := "sqlite:" + t.TempDir() + "/serve.db"
	r := run(t, nil, "", "serve", "--url", db, "--addr", "0.0.0.0:0")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "--no-auth") {
		t.Fatalf("exit %d, stderr %s", r.code, r.stderr)
	}
}
