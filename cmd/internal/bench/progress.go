package bench

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/boson-go/boson/cmd/soak"
)

// progress draws a one-line progress bar on w; a nil w draws nothing.
type progress struct{ w io.Writer }

// track redraws label's bar from cur() every quarter second until stop is
// called.
func (p progress) track(label string, total int64, cur func() int64) (stop func()) {
	if p.w == nil || total <= 0 {
		return func() {}
	}
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	draw := func() {
		n := cur()
		frac := min(float64(n)/float64(total), 1)
		r := float64(n) / max(time.Since(start).Seconds(), 1e-9)
		fmt.Fprintf(p.w, "\r%-24s %s %3.0f%% %d/%d %s/s ", label, soak.FormatBar(frac, 30), frac*100, n, total, human(r))
	}
	go func() {
		defer wg.Done()
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				draw()
				fmt.Fprintln(p.w)
				return
			case <-t.C:
				draw()
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}

// human formats a rate with a k or M suffix.
func human(v float64) string { return soak.FormatRate(v) }
