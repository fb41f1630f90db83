package boson

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/boson-go/boson/core"
)

// maxCronLength bounds the text ParseCron accepts.
const maxCronLength = 512

// Cron is a parsed standard five-field cron expression: minute, hour, day
// of month, month, day of week. Build one with [ParseCron]. It is
// immutable and safe for concurrent use.
//
// Each field accepts "*", a value, a range "a-b", a step "*/n", "a-b/n" or
// "a/n" (from a to the field's maximum), and comma-separated lists of
// those. Months take JAN..DEC and days of week SUN..SAT (any case); day of
// week 7 is Sunday like 0. "?" is "*". As in Vixie cron, when both the day
// of month and the day of week are restricted (neither is "*"), a day
// matches if either matches. The descriptors @yearly (@annually),
// @monthly, @weekly, @daily (@midnight) and @hourly are accepted too.
//
// Times are evaluated in the location given to [Cron.In] (UTC by default);
// across a daylight-saving change, wall times that do not exist are
// skipped and a repeated wall time fires at each occurrence (tick times are
// absolute, so the idempotency keys still differ).
type Cron struct {
	expr                          string
	minute, hour, dom, month, dow uint64
	domStar, dowStar              bool
	loc                           *time.Location
}

type cronField struct {
	name     string
	min, max int
	names    map[string]int
}

var (
	cronMinute = cronField{name: "minute", min: 0, max: 59}
	cronHour   = cronField{name: "hour", min: 0, max: 23}
	cronDom    = cronField{name: "day of month", min: 1, max: 31}
	cronMonth  = cronField{name: "month", min: 1, max: 12, names: map[string]int{
		"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
		"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
	}}
	// Day of week parses 0..7; 7 is folded onto 0 (Sunday) afterwards.
	cronDow = cronField{name: "day of week", min: 0, max: 7, names: map[string]int{
		"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6,
	}}
)

var cronDescriptors = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

// ParseCron parses a standard five-field cron expression (see [Cron]). An
// invalid expression gives an error wrapping [core.ErrInvalidArgument]
// that names the offending field.
func ParseCron(expr string) (*Cron, error) {
	if len(expr) > maxCronLength {
		return nil, fmt.Errorf("%w: cron expression is %d bytes, the limit is %d", core.ErrInvalidArgument, len(expr), maxCronLength)
	}
	text := strings.TrimSpace(expr)
	if strings.HasPrefix(text, "@") {
		d, ok := cronDescriptors[strings.ToLower(text)]
		if !ok {
			return nil, fmt.Errorf("%w: cron expression %q: unknown descriptor", core.ErrInvalidArgument, expr)
		}
		text = d
	}
	fields := strings.Fields(text)
	if len(fields) != 5 {
		return nil, fmt.Errorf("%w: cron expression %q has %d fields, want 5 (minute hour day-of-month month day-of-week)", core.ErrInvalidArgument, expr, len(fields))
	}
	c := &Cron{expr: expr, loc: time.UTC}
	var err error
	parse := func(f cronField, s string) (uint64, bool) {
		if err != nil {
			return 0, false
		}
		var bits uint64
		var star bool
		bits, star, err = f.parse(s)
		if err != nil {
			err = fmt.Errorf("%w: cron expression %q: %v", core.ErrInvalidArgument, expr, err)
		}
		return bits, star
	}
	c.minute, _ = parse(cronMinute, fields[0])
	c.hour, _ = parse(cronHour, fields[1])
	c.dom, c.domStar = parse(cronDom, fields[2])
	c.month, _ = parse(cronMonth, fields[3])
	c.dow, c.dowStar = parse(cronDow, fields[4])
	if err != nil {
		return nil, err
	}
	if c.dow&(1<<7) != 0 {
		c.dow = c.dow&^(1<<7) | 1
	}
	if !c.possible() {
		return nil, fmt.Errorf("%w: cron expression %q never matches", core.ErrInvalidArgument, expr)
	}
	return c, nil
}

// MustParseCron is [ParseCron] for expressions fixed in the source; it
// panics on an invalid expression, so never pass it user data.
func MustParseCron(expr string) *Cron {
	c, err := ParseCron(expr)
	if err != nil {
		panic(err)
	}
	return c
}

// possible reports whether some day of some month can match: a
// day-of-month-only schedule such as "0 0 30 2 *" never fires.
func (c *Cron) possible() bool {
	if !c.domStar && c.dowStar {
		days := [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}
		for m := 1; m <= 12; m++ {
			if c.month&(1<<m) == 0 {
				continue
			}
			for d := 1; d <= days[m]; d++ {
				if c.dom&(1<<d) != 0 {
					return true
				}
			}
		}
		return false
	}
	return true
}

// parse reads one field: a comma-separated list of items.
func (f cronField) parse(s string) (bits uint64, star bool, err error) {
	if s == "*" || s == "?" {
		return f.span(f.min, f.max, 1), true, nil
	}
	for _, item := range strings.Split(s, ",") {
		b, err := f.item(item)
		if err != nil {
			return 0, false, err
		}
		bits |= b
	}
	return bits, false, nil
}

// item reads "*", "a", "a-b", each optionally followed by "/step".
func (f cronField) item(s string) (uint64, error) {
	rng, stepText, hasStep := strings.Cut(s, "/")
	step := 1
	if hasStep {
		n, err := strconv.Atoi(stepText)
		if err != nil || n < 1 || n > f.max-f.min+1 {
			return 0, fmt.Errorf("%s: bad step %q", f.name, stepText)
		}
		step = n
	}
	lo, hi := f.min, f.max
	switch {
	case rng == "*" || rng == "?":
	case strings.Contains(rng, "-"):
		a, b, _ := strings.Cut(rng, "-")
		var err error
		if lo, err = f.value(a); err != nil {
			return 0, err
		}
		if hi, err = f.value(b); err != nil {
			return 0, err
		}
		if lo > hi {
			return 0, fmt.Errorf("%s: range %q runs backwards", f.name, rng)
		}
	default:
		v, err := f.value(rng)
		if err != nil {
			return 0, err
		}
		lo = v
		if !hasStep {
			hi = v
		}
	}
	return f.span(lo, hi, step), nil
}

// value reads a number or a name within the field's bounds.
func (f cronField) value(s string) (int, error) {
	if v, ok := f.names[strings.ToLower(s)]; ok {
		return v, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || strings.HasPrefix(s, "+") || strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("%s: %q is not a number or a name", f.name, s)
	}
	if n < f.min || n > f.max {
		return 0, fmt.Errorf("%s: %d is outside %d-%d", f.name, n, f.min, f.max)
	}
	return n, nil
}

func (f cronField) span(lo, hi, step int) uint64 {
	var b uint64
	for v := lo; v <= hi; v += step {
		b |= 1 << v
	}
	return b
}

// In returns a copy of c that evaluates wall times in loc (nil means UTC).
func (c *Cron) In(loc *time.Location) *Cron {
	if loc == nil {
		loc = time.UTC
	}
	cp := *c
	cp.loc = loc
	return &cp
}

// String returns the expression as given to ParseCron.
func (c *Cron) String() string { return c.expr }

// Next returns the first matching minute strictly after t, in t's
// location converted to the schedule's, or the zero time when none exists
// within the next five years.
func (c *Cron) Next(t time.Time) time.Time {
	t = t.In(c.loc).Truncate(time.Minute).Add(time.Minute)
	limit := t.AddDate(5, 0, 0)
	for t.Before(limit) {
		y, mo, d := t.Date()
		switch {
		case c.month&(1<<uint(mo)) == 0:
			t = time.Date(y, mo+1, 1, 0, 0, 0, 0, c.loc)
		case !c.dayMatches(t):
			t = time.Date(y, mo, d+1, 0, 0, 0, 0, c.loc)
		case c.hour&(1<<uint(t.Hour())) == 0:
			next := time.Date(y, mo, d, t.Hour()+1, 0, 0, 0, c.loc)
			if !next.After(t) { // a repeated wall hour
				next = t.Truncate(time.Hour).Add(time.Hour)
			}
			t = next
		case c.minute&(1<<uint(t.Minute())) == 0:
			t = t.Add(time.Minute)
		default:
			return t.UTC()
		}
	}
	return time.Time{}
}

// Matches reports whether t, in the schedule's location and truncated to
// the minute, is a tick.
func (c *Cron) Matches(t time.Time) bool {
	t = t.In(c.loc)
	return c.month&(1<<uint(t.Month())) != 0 && c.dayMatches(t) &&
		c.hour&(1<<uint(t.Hour())) != 0 && c.minute&(1<<uint(t.Minute())) != 0
}

func (c *Cron) dayMatches(t time.Time) bool {
	dom := c.dom&(1<<uint(t.Day())) != 0
	dow := c.dow&(1<<uint(t.Weekday())) != 0
	if c.domStar || c.dowStar {
		return dom && dow
	}
	return dom || dow
}
