package engine

import (
	"strconv"
	"strings"
)

// render expands a statement template: {s} becomes the schema prefix,
// {now} the dialect's "current time in microseconds" expression (which
// takes one argument), and each ? the dialect's placeholder.
func (e *Engine) render(tmpl string) string {
	if v, ok := e.sqlCache.Load(tmpl); ok {
		return v.(string)
	}
	s := strings.ReplaceAll(tmpl, "{s}", e.prefix)
	s = strings.ReplaceAll(s, "{now}", e.d.NowExpr())
	if e.d.NumberedPlaceholders() {
		var b strings.Builder
		n := 0
		inStr := false
		for i := 0; i < len(s); i++ {
			c := s[i]
			if c == '\'' {
				inStr = !inStr
			}
			if c == '?' && !inStr {
				n++
				b.WriteByte('$')
				b.WriteString(strconv.Itoa(n))
				continue
			}
			b.WriteByte(c)
		}
		s = b.String()
	}
	if len(tmpl) < 4096 {
		e.sqlCache.Store(tmpl, s)
	}
	return s
}

// placeholders returns "?, ?, ?" with n marks.
func placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?, ", n-1) + "?"
}
