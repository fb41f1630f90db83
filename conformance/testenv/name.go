package testenv

import (
	"crypto/rand"
	"strings"
	"testing"
)

// maxPrefix bounds the caller's part of a unique name.
const maxPrefix = 20

// UniqueName returns a short name that no other call returns: prefix
// (lowercased, with characters outside [a-z0-9_] replaced by '_', and cut
// to 20 bytes) followed by '_' and 12 random characters. The result starts
// with a letter, is at most 33 bytes of [a-z0-9_], and so is valid for
// core.ValidateName and as an unquoted Postgres schema, a Redis key prefix
// and a NATS stream or subject token.
func UniqueName(t testing.TB, prefix string) string {
	t.Helper()
	var b strings.Builder
	for _, c := range strings.ToLower(prefix) {
		if b.Len() >= maxPrefix {
			break
		}
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	p := b.String()
	if p == "" || p[0] < 'a' || p[0] > 'z' {
		p = "t" + p
		if len(p) > maxPrefix {
			p = p[:maxPrefix]
		}
	}
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	var r [12]byte
	if _, err := rand.Read(r[:]); err != nil {
		t.Fatalf("testenv: random name: %v", err)
	}
	for i := range r {
		r[i] = alphabet[r[i]%32]
	}
	return p + "_" + string(r[:])
}
