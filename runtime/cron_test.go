package boson_test

import (
	"errors"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

func TestCronNext(t *testing.T) {
	base := time.Date(2026, 3, 14, 10, 7, 30, 0, time.UTC) // a Saturday
	cases := []struct {
		expr string
		from time.Time
		want []string
	}{
		{"* * * * *", base, []string{"2026-03-14T10:08:00Z", "2026-03-14T10:09:00Z"}},
		{"*/15 * * * *", base, []string{"2026-03-14T10:15:00Z", "2026-03-14T10:30:00Z", "2026-03-14T10:45:00Z", "2026-03-14T11:00:00Z"}},
		{"5,10-12 9 * * *", base, []string{"2026-03-15T09:05:00Z", "2026-03-15T09:10:00Z", "2026-03-15T09:11:00Z", "2026-03-15T09:12:00Z", "2026-03-16T09:05:00Z"}},
		{"0 0 1 jan,JUL *", base, []string{"2026-07-01T00:00:00Z", "2027-01-01T00:00:00Z"}},
		{"30 8 * * mon-fri", base, []string{"2026-03-16T08:30:00Z", "2026-03-17T08:30:00Z"}},
		{"0 12 * * 7", base, []string{"2026-03-15T12:00:00Z", "2026-03-22T12:00:00Z"}},
		{"0 12 * * sun", base, []string{"2026-03-15T12:00:00Z"}},
		// Both day fields restricted: either matches (the 20th, or Mondays).
		{"0 0 20 * 1", base, []string{"2026-03-16T00:00:00Z", "2026-03-20T00:00:00Z", "2026-03-23T00:00:00Z"}},
		// A stepped day-of-month is not "*": still either-or.
		{"0 0 */10 * mon", base, []string{"2026-03-16T00:00:00Z", "2026-03-21T00:00:00Z", "2026-03-23T00:00:00Z"}},
		{"0 0 29 2 *", base, []string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"0 0 31 * *", base, []string{"2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z"}},
		{"10/20 1 * * *", base, []string{"2026-03-15T01:10:00Z", "2026-03-15T01:30:00Z", "2026-03-15T01:50:00Z", "2026-03-16T01:10:00Z"}},
		{"0 22-2/2 * * *", base, nil}, // backwards ranges are rejected below
		{"@hourly", base, []string{"2026-03-14T11:00:00Z"}},
		{"@daily", base, []string{"2026-03-15T00:00:00Z"}},
		{"@weekly", base, []string{"2026-03-15T00:00:00Z", "2026-03-22T00:00:00Z"}},
		{"@monthly", base, []string{"2026-04-01T00:00:00Z"}},
		{"@YEARLY", base, []string{"2027-01-01T00:00:00Z"}},
		{"? ? ? ? ?", base, []string{"2026-03-14T10:08:00Z"}},
		{"7 10 14 3 *", base, []string{"2027-03-14T10:07:00Z"}},
	}
	for _, tc := range cases {
		c, err := boson.ParseCron(tc.expr)
		if tc.want == nil {
			if err == nil {
				t.Errorf("%q: parsed, want an error", tc.expr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.expr, err)
			continue
		}
		at := tc.from
		for _, w := range tc.want {
			at = c.Next(at)
			if got := at.Format(time.RFC3339); got != w {
				t.Errorf("%q: got %s, want %s", tc.expr, got, w)
				break
			}
		}
	}
}

func TestCronInvalid(t *testing.T) {
	for _, expr := range []string{
		"", "* * * *", "* * * * * *", "60 * * * *", "* 24 * * *", "* * 0 * *", "* * 32 * *",
		"* * * 13 *", "* * * * 8", "*/0 * * * *", "*/61 * * * *", "5-1 * * * *", "a * * * *",
		"* * * foo *", "-1 * * * *", "+1 * * * *", "1,,2 * * * *", "@every 5m", "@nope",
		"0 0 30 2 *", "0 0 31 4,6,9,11 *", "1-2-3 * * * *", "1/2/3 * * * *",
	} {
		_, err := boson.ParseCron(expr)
		if !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("%q: err = %v, want ErrInvalidArgument", expr, err)
		}
	}
}

func TestCronLocation(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no time zone data:", err)
	}
	c := boson.MustParseCron("30 2 * * *").In(ny)
	// 2026-03-08 is the spring-forward day: 02:30 does not exist there.
	got := c.Next(time.Date(2026, 3, 7, 12, 0, 0, 0, ny))
	if want := time.Date(2026, 3, 9, 2, 30, 0, 0, ny); !got.Equal(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	got = boson.MustParseCron("0 9 * * *").In(ny).Next(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	if want := time.Date(2026, 6, 1, 13, 0, 0, 0, time.UTC); !got.Equal(want) || got.Location() != time.UTC {
		t.Fatalf("got %v, want %v in UTC", got, want)
	}
}

func TestInterval(t *testing.T) {
	iv := boson.Every(time.Hour)
	at := time.Date(2026, 1, 1, 10, 20, 0, 0, time.UTC)
	if got, want := iv.Next(at), time.Date(2026, 1, 1, 11, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got, want := iv.Next(time.Date(2026, 1, 1, 11, 0, 0, 0, time.UTC)), time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("strictly after: got %v, want %v", got, want)
	}
	iv.Offset = 15 * time.Minute
	if got, want := iv.Next(at), time.Date(2026, 1, 1, 10, 15, 0, 0, time.UTC).Add(time.Hour); !got.Equal(want) {
		t.Fatalf("offset: got %v, want %v", got, want)
	}
	if got := boson.Every(1500 * time.Millisecond).Next(at); !got.IsZero() {
		t.Fatalf("fractional period ticks at %v", got)
	}
	before := time.Unix(-25, 0)
	if got := boson.Every(10 * time.Second).Next(before); got.Unix() != -20 {
		t.Fatalf("before the epoch: got %d, want -20", got.Unix())
	}
}

// FuzzParseCron checks that no input panics and that every accepted
// expression yields increasing, minute-aligned ticks.
func FuzzParseCron(f *testing.F) {
	for _, s := range []string{"* * * * *", "*/5 1-3 1,15 jan-mar mon-fri", "0 0 29 2 *", "@weekly", "5/7 */3 ? * 7", "0 0 31 * sat"} {
		f.Add(s)
	}
	from := time.Date(2026, 5, 17, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, expr string) {
		c, err := boson.ParseCron(expr)
		if err != nil {
			if !errors.Is(err, core.ErrInvalidArgument) {
				t.Fatalf("%q: error %v does not wrap ErrInvalidArgument", expr, err)
			}
			return
		}
		at := from
		for range 3 {
			next := c.Next(at)
			if next.IsZero() {
				t.Fatalf("%q: no tick after %v", expr, at)
			}
			if !next.After(at) || next.Second() != 0 || next.Nanosecond() != 0 || !c.Matches(next) {
				t.Fatalf("%q: Next(%v) = %v", expr, at, next)
			}
			// No tick was skipped: check every minute in between when the
			// gap is small enough to scan.
			first := at.Truncate(time.Minute).Add(time.Minute)
			if next.Sub(first) <= 3*24*time.Hour {
				for m := first; m.Before(next); m = m.Add(time.Minute) {
					if c.Matches(m) {
						t.Fatalf("%q: Next(%v) = %v skips %v", expr, at, next, m)
					}
				}
			}
			at = next
		}
	})
}

// TestCronMatchesBruteForce compares Next with a minute-by-minute scan
// over two months for a few expressions.
func TestCronMatchesBruteForce(t *testing.T) {
	for _, expr := range []string{"*/7 */5 * * *", "0 0 13 * fri", "15 3 1-7 * mon", "59 23 L * *", "0 12 * feb-apr sat,sun", "*/30 9-17 * * 1-5"} {
		c, err := boson.ParseCron(expr)
		if err != nil {
			if expr == "59 23 L * *" {
				continue // "L" is not standard and is rejected
			}
			t.Fatal(err)
		}
		start := time.Date(2026, 1, 30, 22, 0, 0, 0, time.UTC)
		next := c.Next(start.Add(-time.Minute))
		for m := start; m.Before(start.AddDate(0, 2, 0)); m = m.Add(time.Minute) {
			if !c.Matches(m) {
				continue
			}
			if !m.Equal(next) {
				t.Fatalf("%q: scan found %v, Next gave %v", expr, m, next)
			}
			next = c.Next(m)
		}
	}
}
