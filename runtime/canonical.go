package boson

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/boson-go/boson/core"
)

// Canonical JSON, the form [WithUniqueArgs] derives its key from. It is
// defined here, not by encoding/json, so that it never changes with a Go or
// boson version:
//
//   - no white space outside strings;
//   - object members sorted by key, comparing the keys' UTF-8 bytes; a key
//     given twice keeps its last value (as encoding/json decodes it);
//   - numbers exactly as their literal in the input (1, 1.0 and 1e0 are
//     three different inputs; a Go type always writes one of them);
//   - strings in double quotes, with `"` and `\` escaped by a backslash,
//     \b \f \n \r \t for those control characters, \u00XX (lower-case hex)
//     for the other characters below U+0020, and every other character,
//     non-ASCII included, as its UTF-8 bytes;
//   - true, false and null as such.
//
// CanonicalJSON returns the canonical form of the JSON value in b, or an
// error wrapping [core.ErrInvalidArgument] when b is not one JSON value or
// holds invalid UTF-8.
func CanonicalJSON(b []byte) ([]byte, error) {
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("%w: canonical json: input is not valid UTF-8", core.ErrInvalidArgument)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: canonical json: %v", core.ErrInvalidArgument, err)
	}
	for _, c := range b[dec.InputOffset():] {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return nil, fmt.Errorf("%w: canonical json: more than one JSON value", core.ErrInvalidArgument)
		}
	}
	out := make([]byte, 0, len(b))
	return appendCanonical(out, v), nil
}

// appendCanonical appends the canonical form of v, a value decoded by
// encoding/json with UseNumber.
func appendCanonical(out []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(out, "null"...)
	case bool:
		return strconv.AppendBool(out, v)
	case json.Number:
		return append(out, v...)
	case string:
		return appendCanonicalString(out, v)
	case []any:
		out = append(out, '[')
		for i, e := range v {
			if i > 0 {
				out = append(out, ',')
			}
			out = appendCanonical(out, e)
		}
		return append(out, ']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys) // Go compares strings by their bytes
		out = append(out, '{')
		for i, k := range keys {
			if i > 0 {
				out = append(out, ',')
			}
			out = appendCanonicalString(out, k)
			out = append(out, ':')
			out = appendCanonical(out, v[k])
		}
		return append(out, '}')
	}
	// encoding/json decodes into no other type; should it ever, its own
	// encoding is the best form left.
	b, _ := json.Marshal(v)
	return append(out, b...)
}

func appendCanonicalString(out []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	out = append(out, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			out = append(out, '\\', c)
		case c == '\b':
			out = append(out, '\\', 'b')
		case c == '\f':
			out = append(out, '\\', 'f')
		case c == '\n':
			out = append(out, '\\', 'n')
		case c == '\r':
			out = append(out, '\\', 'r')
		case c == '\t':
			out = append(out, '\\', 't')
		case c < 0x20:
			out = append(out, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			out = append(out, c)
		}
	}
	return append(out, '"')
}

// UniqueArgsKeyPrefix starts every idempotency key that [WithUniqueArgs]
// derives.
const UniqueArgsKeyPrefix = "args:"

// UniqueArgsKey returns the idempotency key that [WithUniqueArgs] gives a
// spawn of task with the JSON input in: [UniqueArgsKeyPrefix] followed by
// the lower-case hex SHA-256 of "boson-unique-args-v1", a zero byte, the
// task name, a zero byte and the canonical JSON of the input (see
// [CanonicalJSON]). The derivation is fixed: the key of a given task and
// input is the same in every version of boson, so producers of different
// versions share it. The input is the JSON the task's In type encodes to,
// before any [PayloadCodec].
func UniqueArgsKey(task string, in []byte) (string, error) {
	canon, err := CanonicalJSON(in)
	if err != nil {
		return "", err
	}
	return uniqueArgsKey(task, canon), nil
}

func uniqueArgsKey(task string, canon []byte) string {
	h := sha256.New()
	h.Write([]byte("boson-unique-args-v1\x00"))
	h.Write([]byte(task))
	h.Write([]byte{0})
	h.Write(canon)
	return UniqueArgsKeyPrefix + hex.EncodeToString(h.Sum(nil))
}
