package core

// Limits bounds what a backend accepts. A backend takes Limits in its options;
// the zero value of a field means the default listed on [DefaultLimits].
type Limits struct {
	// MaxPayloadBytes bounds a job's payload, a result and a checkpoint value.
	MaxPayloadBytes int
	// MaxHeaderBytes bounds the summed length of a job's header keys and values.
	MaxHeaderBytes int
	// MaxBatch bounds the items of one Enqueue or Complete call and the
	// Limit of Claim, Rescue and Cleanup.
	MaxBatch int
}

// DefaultLimits are the limits that apply where a field of [Limits] is zero:
// 1 MiB payloads, 64 KiB of headers, batches of 10,000.
var DefaultLimits = Limits{
	MaxPayloadBytes: 1 << 20,
	MaxHeaderBytes:  64 << 10,
	MaxBatch:        10_000,
}

// WithDefaults returns l with every zero field set from [DefaultLimits].
func (l Limits) WithDefaults() Limits {
	if l.MaxPayloadBytes == 0 {
		l.MaxPayloadBytes = DefaultLimits.MaxPayloadBytes
	}
	if l.MaxHeaderBytes == 0 {
		l.MaxHeaderBytes = DefaultLimits.MaxHeaderBytes
	}
	if l.MaxBatch == 0 {
		l.MaxBatch = DefaultLimits.MaxBatch
	}
	return l
}

// Validate reports an error wrapping [ErrInvalidArgument] when a field is negative.
func (l Limits) Validate() error {
	if l.MaxPayloadBytes < 0 || l.MaxHeaderBytes < 0 || l.MaxBatch < 0 {
		return invalid("limits", "must not be negative: %+v", l)
	}
	return nil
}

// MaxNameLength is the longest queue, task, step or worker name accepted.
const MaxNameLength = 128

// ValidateName checks a queue, task, step or worker name. A name is 1 to
// [MaxNameLength] bytes of ASCII letters, digits, '_' and '-', starting with
// a letter or digit. That set is safe, unquoted and unescaped, inside SQL
// identifiers and literals, Redis keys (it has no hash-tag braces), and NATS
// subjects and stream names (it has no '.', '*', '>' or white space).
// field names the input in the error.
func ValidateName(field, name string) error {
	if name == "" {
		return invalid(field, "must not be empty")
	}
	if len(name) > MaxNameLength {
		return invalid(field, "is %d bytes long, the limit is %d", len(name), MaxNameLength)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if alnum || i > 0 && (c == '_' || c == '-') {
			continue
		}
		if i == 0 {
			return invalid(field, "%q must start with an ASCII letter or digit", name)
		}
		return invalid(field, "%q has %q at byte %d; only ASCII letters, digits, '_' and '-' are allowed", name, c, i)
	}
	return nil
}

// ValidatePriority checks that p lies in [MinPriority, MaxPriority].
func ValidatePriority(field string, p int) error {
	if p < MinPriority || p > MaxPriority {
		return invalid(field, "%d is outside [%d, %d]", p, MinPriority, MaxPriority)
	}
	return nil
}

// ValidateBatch checks a batch size n against the limits (1 to MaxBatch).
func (l Limits) ValidateBatch(field string, n int) error {
	l = l.WithDefaults()
	if n < 1 || n > l.MaxBatch {
		return invalid(field, "%d is outside [1, %d]", n, l.MaxBatch)
	}
	return nil
}

// ValidatePayload checks a payload, result or checkpoint value against MaxPayloadBytes.
func (l Limits) ValidatePayload(field string, b []byte) error {
	l = l.WithDefaults()
	if len(b) > l.MaxPayloadBytes {
		return invalid(field, "is %d bytes, the limit is %d", len(b), l.MaxPayloadBytes)
	}
	return nil
}
