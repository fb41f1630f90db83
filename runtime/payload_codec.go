package boson

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/boson-go/boson/core"
)

// ErrCodec: stored bytes that the payload codec cannot decode (a wrong
// key, corrupt bytes, or bytes stored without the codec), or a value it
// cannot encode. An attempt whose input or checkpoint does not decode
// fails permanently with an error wrapping it. It wraps
// [core.ErrInvalidArgument].
var ErrCodec = fmt.Errorf("%w: payload codec", core.ErrInvalidArgument)

// PayloadCodec transforms the bytes boson stores for a task: the encoded
// input of every spawn, the result of every attempt and the value of every
// checkpoint (steps, sleeps, awaited results). Give the same codec to
// [ClientOptions.Codec] and [WorkerOptions.Codec]: the client encodes
// inputs and decodes results, the worker decodes inputs and checkpoints
// and encodes results and checkpoints. Handlers, executors (a
// [CommandExecutor]'s process included) and steps see decoded values;
// middleware sees the [Execution] as stored, its payload encoded.
//
// Encode and Decode must be safe for concurrent use. Decode must refuse
// bytes it did not write (with an error), and should bind what it writes
// to scope so that stored bytes moved to another task, job or checkpoint
// are refused too; [AESGCM] does. See [GzipCodec], [NewAESGCM] and
// [ChainCodecs].
type PayloadCodec interface {
	Encode(scope CodecScope, plain []byte) ([]byte, error)
	Decode(scope CodecScope, stored []byte) ([]byte, error)
}

// CodecPart is what a codec call encodes.
type CodecPart uint8

// The parts of a job that a [PayloadCodec] encodes.
const (
	// PartInput is a spawn's input (the job's payload).
	PartInput CodecPart = iota + 1
	// PartResult is a succeeded attempt's result.
	PartResult
	// PartCheckpoint is a checkpoint's value.
	PartCheckpoint
)

// String returns "input", "result" or "checkpoint".
func (p CodecPart) String() string {
	switch p {
	case PartInput:
		return "input"
	case PartResult:
		return "result"
	case PartCheckpoint:
		return "checkpoint"
	}
	return fmt.Sprintf("part(%d)", uint8(p))
}

// CodecScope names the bytes of one codec call: the part, the task, and
// for results and checkpoints the job (an input's job id is not known
// before it is stored) and for checkpoints the checkpoint's stored name
// ("step-charge", "sleep-nap", "await-<job id>").
type CodecScope struct {
	Part  CodecPart
	Task  string
	JobID string
	Name  string
}

// FingerprintSealer is implemented by a [PayloadCodec] that hides what it
// encodes, such as [AESGCM]. A spawn's idempotency fingerprint is a
// SHA-256 of the request before encoding (so that a retried spawn matches
// though its ciphertext differs); a store reader could confirm a guessed
// input against it. The client passes the fingerprint through
// SealFingerprint, which must be deterministic and at most 128 bytes of
// UTF-8 (a keyed MAC, say).
type FingerprintSealer interface {
	SealFingerprint(fingerprint string) string
}

// codecValidator is implemented by the built-in codecs whose fields a
// user sets: NewClient and NewWorker refuse an invalid one.
type codecValidator interface{ validate() error }

// validateCodec checks a codec handed to NewClient or NewWorker.
func validateCodec(c PayloadCodec) error {
	if v, ok := c.(codecValidator); ok {
		return v.validate()
	}
	return nil
}

// codecFailure is the error of a failed codec call on scope.
func codecFailure(op string, s CodecScope, err error) error {
	where := s.Part.String() + " of task " + s.Task
	if s.JobID != "" {
		where += " (job " + s.JobID + ")"
	}
	if s.Name != "" {
		where += " checkpoint " + s.Name
	}
	return fmt.Errorf("%w: %s %s: %v", ErrCodec, op, where, err)
}

// encodeInput encodes a built spawn's payload with the client's codec and
// seals its fingerprint.
func (c *Client) encodeInput(req *core.EnqueueRequest) error {
	cd := c.opts.Codec
	if cd == nil {
		return nil
	}
	if fs, ok := cd.(FingerprintSealer); ok {
		req.Fingerprint = fs.SealFingerprint(req.Fingerprint)
	}
	s := CodecScope{Part: PartInput, Task: req.Task}
	b, err := cd.Encode(s, req.Payload)
	if err != nil {
		return codecFailure("encode", s, err)
	}
	req.Payload = b
	return nil
}

// resultVia is resultOf with a succeeded job's result decoded by cd.
func resultVia[Out any](cd PayloadCodec, j core.Job) (Out, error) {
	if cd != nil && j.State == core.StateSucceeded {
		s := CodecScope{Part: PartResult, Task: j.Task, JobID: j.ID}
		b, err := cd.Decode(s, j.Result)
		if err != nil {
			var zero Out
			return zero, codecFailure("decode", s, err)
		}
		j.Result = b
	}
	return resultOf[Out](j)
}

// codecExecutor runs an executor on decoded inputs and encodes its
// results: the worker wraps every registered executor in one when
// WorkerOptions.Codec is set.
type codecExecutor struct {
	codec PayloadCodec
	next  Executor
}

// Execute implements [Executor].
func (c codecExecutor) Execute(ctx context.Context, ex *Execution) ([]byte, error) {
	j := &ex.Job
	in := CodecScope{Part: PartInput, Task: j.Task}
	plain, err := c.codec.Decode(in, j.Payload)
	if err != nil {
		return nil, Permanent(codecFailure("decode", in, err))
	}
	dx := *ex
	dx.Job.Payload = plain
	out, err := c.next.Execute(ctx, &dx)
	if err != nil {
		return nil, err
	}
	res := CodecScope{Part: PartResult, Task: j.Task, JobID: j.ID}
	b, err := c.codec.Encode(res, out)
	if err != nil {
		return nil, Permanent(codecFailure("encode", res, err))
	}
	return b, nil
}

// checkpointScope names checkpoint name of the attempt's job.
func (a *attempt) checkpointScope(name string) CodecScope {
	return CodecScope{Part: PartCheckpoint, Task: a.job.Task, JobID: a.job.ID, Name: name}
}

// encodeCheckpoint encodes a checkpoint value with the worker's codec.
func (a *attempt) encodeCheckpoint(name string, v []byte) ([]byte, error) {
	cd := a.w.opts.Codec
	if cd == nil {
		return v, nil
	}
	s := a.checkpointScope(name)
	b, err := cd.Encode(s, v)
	if err != nil {
		return nil, Permanent(codecFailure("encode", s, err))
	}
	return b, nil
}

// decodeCheckpoint decodes a stored checkpoint value with the worker's
// codec; bytes it cannot decode fail the attempt permanently.
func (a *attempt) decodeCheckpoint(name string, v []byte) ([]byte, error) {
	cd := a.w.opts.Codec
	if cd == nil {
		return v, nil
	}
	s := a.checkpointScope(name)
	b, err := cd.Decode(s, v)
	if err != nil {
		return nil, Permanent(codecFailure("decode", s, err))
	}
	return b, nil
}

// decodeAwaited decodes the stored result of an awaited job with the
// worker's codec.
func (a *attempt) decodeAwaited(j core.Job) ([]byte, error) {
	cd := a.w.opts.Codec
	if cd == nil {
		return j.Result, nil
	}
	s := CodecScope{Part: PartResult, Task: j.Task, JobID: j.ID}
	b, err := cd.Decode(s, j.Result)
	if err != nil {
		return nil, Permanent(codecFailure("decode", s, err))
	}
	return b, nil
}

// ChainCodecs returns a codec that encodes with each codec in order and
// decodes in the reverse order: ChainCodecs(GzipCodec{}, aead) compresses,
// then encrypts. Its fingerprint is sealed by every member that seals.
// Nil members are skipped.
func ChainCodecs(codecs ...PayloadCodec) PayloadCodec {
	var cs chain
	for _, c := range codecs {
		if c != nil {
			cs = append(cs, c)
		}
	}
	return cs
}

type chain []PayloadCodec

func (cs chain) Encode(s CodecScope, b []byte) ([]byte, error) {
	for _, c := range cs {
		var err error
		if b, err = c.Encode(s, b); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func (cs chain) Decode(s CodecScope, b []byte) ([]byte, error) {
	for i := len(cs) - 1; i >= 0; i-- {
		var err error
		if b, err = cs[i].Decode(s, b); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func (cs chain) SealFingerprint(fp string) string {
	for _, c := range cs {
		if fs, ok := c.(FingerprintSealer); ok {
			fp = fs.SealFingerprint(fp)
		}
	}
	return fp
}

func (cs chain) validate() error {
	for _, c := range cs {
		if err := validateCodec(c); err != nil {
			return err
		}
	}
	return nil
}

// GzipCodec compresses stored bytes with gzip (compress/gzip, whose CRC
// catches corrupt bytes) behind a marker byte. The zero value is useful.
// Values shorter than MinSize, and values that would not shrink, are
// stored unchanged when they begin like JSON (and behind a marker byte
// otherwise), and Decode takes bytes that begin like JSON as they are: a
// job queued before compression was turned on keeps working, and a small
// result stays readable by a client without the codec while a fleet turns
// it on. Decode refuses anything else it did not write.
type GzipCodec struct {
	// Level is the gzip level, 1 (fastest) to 9 (smallest); 0 means
	// gzip.DefaultCompression.
	Level int
	// MinSize is the smallest value that is compressed; 0 means 256 bytes.
	MinSize int
	// MaxSize bounds a decompressed value, so that hostile stored bytes
	// cannot expand without bound; 0 means 64 MiB.
	MaxSize int
}

// Marker bytes of GzipCodec's stored form.
const (
	gzipRaw  = 0x00
	gzipData = 0x01
)

var gzipWriters sync.Map // level -> *sync.Pool of *gzip.Writer

func (g GzipCodec) level() int {
	if g.Level == 0 {
		return gzip.DefaultCompression
	}
	return g.Level
}

func (g GzipCodec) validate() error {
	if g.Level < 0 || g.Level > gzip.BestCompression {
		return fmt.Errorf("%w: gzip level %d must be 1 to 9 (0 for the default)", core.ErrInvalidArgument, g.Level)
	}
	if g.MinSize < 0 || g.MaxSize < 0 {
		return fmt.Errorf("%w: gzip MinSize and MaxSize must not be negative", core.ErrInvalidArgument)
	}
	return nil
}

// Encode implements [PayloadCodec].
func (g GzipCodec) Encode(_ CodecScope, plain []byte) ([]byte, error) {
	if err := g.validate(); err != nil {
		return nil, err
	}
	minSize := g.MinSize
	if minSize == 0 {
		minSize = 256
	}
	if len(plain) >= minSize {
		lvl := g.level()
		pv, _ := gzipWriters.LoadOrStore(lvl, &sync.Pool{})
		pool := pv.(*sync.Pool)
		var buf bytes.Buffer
		buf.Grow(len(plain)/2 + 32)
		buf.WriteByte(gzipData)
		zw, _ := pool.Get().(*gzip.Writer)
		if zw == nil {
			var err error
			if zw, err = gzip.NewWriterLevel(&buf, lvl); err != nil {
				return nil, err
			}
		} else {
			zw.Reset(&buf)
		}
		_, werr := zw.Write(plain)
		cerr := zw.Close()
		pool.Put(zw)
		if err := errors.Join(werr, cerr); err != nil {
			return nil, err
		}
		if buf.Len() < len(plain)+1 {
			return buf.Bytes(), nil
		}
	}
	if startsLikeJSON(plain) {
		return plain, nil
	}
	out := make([]byte, 1+len(plain))
	out[0] = gzipRaw
	copy(out[1:], plain)
	return out, nil
}

// Decode implements [PayloadCodec].
func (g GzipCodec) Decode(_ CodecScope, stored []byte) ([]byte, error) {
	if len(stored) == 0 {
		return nil, errors.New("gzip codec: empty stored value")
	}
	switch stored[0] {
	case gzipRaw:
		return stored[1:], nil
	case gzipData:
		maxSize := g.MaxSize
		if maxSize == 0 {
			maxSize = 64 << 20
		}
		zr, err := gzip.NewReader(bytes.NewReader(stored[1:]))
		if err != nil {
			return nil, fmt.Errorf("gzip codec: corrupt bytes: %v", err)
		}
		out, err := io.ReadAll(io.LimitReader(zr, int64(maxSize)+1))
		if err != nil {
			return nil, fmt.Errorf("gzip codec: corrupt bytes: %v", err)
		}
		if len(out) > maxSize {
			return nil, fmt.Errorf("gzip codec: value decompresses past MaxSize (%d bytes)", maxSize)
		}
		return out, nil
	}
	if startsLikeJSON(stored) {
		return stored, nil
	}
	return nil, fmt.Errorf("gzip codec: stored bytes were not written by this codec (first byte 0x%02x)", stored[0])
}

// startsLikeJSON reports whether b begins like a JSON value.
func startsLikeJSON(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{', '[', '"', '-', 't', 'f', 'n', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			return true
		}
		return false
	}
	return false
}

// AESGCM encrypts stored bytes with AES-GCM (crypto/aes, crypto/cipher)
// under a key the user supplies, and authenticates them with their
// [CodecScope] as additional data: bytes moved to another task, job or
// checkpoint, or changed at all, are refused. Each value gets a fresh
// random nonce. Make one with [NewAESGCM].
//
// Stored form: a version byte (1), the 4-byte id of the key (derived from
// the key, so a wrong key is named as such), the 12-byte nonce, then the
// ciphertext and its 16-byte tag: 33 bytes more than the value.
type AESGCM struct {
	primary keyAEAD
	keys    map[[4]byte]cipher.AEAD
	fpKey   []byte
}

type keyAEAD struct {
	id   [4]byte
	aead cipher.AEAD
}

const aesgcmVersion = 1

// NewAESGCM returns a codec that encrypts with key and decrypts with key
// or any of previous (keys being rotated out). Each key must be 16, 24 or
// 32 bytes (AES-128, -192, -256). The idempotency fingerprint is sealed
// with a MAC keyed from key: after a rotation, a retried spawn of a
// request first sent under the old key conflicts instead of matching.
func NewAESGCM(key []byte, previous ...[]byte) (*AESGCM, error) {
	c := &AESGCM{keys: map[[4]byte]cipher.AEAD{}}
	for i, k := range append([][]byte{key}, previous...) {
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, fmt.Errorf("%w: AES-GCM key %d: %v (want 16, 24 or 32 bytes)", core.ErrInvalidArgument, i, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("%w: AES-GCM key %d: %v", core.ErrInvalidArgument, i, err)
		}
		id := keyID(k)
		if _, dup := c.keys[id]; dup {
			return nil, fmt.Errorf("%w: AES-GCM key %d is given twice", core.ErrInvalidArgument, i)
		}
		c.keys[id] = aead
		if i == 0 {
			c.primary = keyAEAD{id: id, aead: aead}
			m := hmac.New(sha256.New, k)
			m.Write([]byte("boson payload codec: idempotency fingerprint key"))
			c.fpKey = m.Sum(nil)
		}
	}
	return c, nil
}

// keyID names a key without revealing it.
func keyID(k []byte) [4]byte {
	m := hmac.New(sha256.New, k)
	m.Write([]byte("boson payload codec: key id"))
	var id [4]byte
	copy(id[:], m.Sum(nil))
	return id
}

// additionalData binds a ciphertext to its scope.
func additionalData(s CodecScope) []byte {
	b := make([]byte, 0, 16+len(s.Task)+len(s.JobID)+len(s.Name))
	b = append(b, "boson/1"...)
	b = append(b, byte(s.Part))
	for _, f := range []string{s.Task, s.JobID, s.Name} {
		b = binary.BigEndian.AppendUint32(b, uint32(len(f)))
		b = append(b, f...)
	}
	return b
}

// Encode implements [PayloadCodec].
func (c *AESGCM) Encode(s CodecScope, plain []byte) ([]byte, error) {
	ns := c.primary.aead.NonceSize()
	out := make([]byte, 5+ns, 5+ns+len(plain)+c.primary.aead.Overhead())
	out[0] = aesgcmVersion
	copy(out[1:5], c.primary.id[:])
	if _, err := rand.Read(out[5 : 5+ns]); err != nil {
		return nil, err
	}
	return c.primary.aead.Seal(out, out[5:5+ns], plain, additionalData(s)), nil
}

// Decode implements [PayloadCodec].
func (c *AESGCM) Decode(s CodecScope, stored []byte) ([]byte, error) {
	ns := c.primary.aead.NonceSize()
	if len(stored) < 5+ns+c.primary.aead.Overhead() || stored[0] != aesgcmVersion {
		return nil, errors.New("AES-GCM codec: stored bytes were not written by this codec (corrupt, or stored without encryption)")
	}
	var id [4]byte
	copy(id[:], stored[1:5])
	aead, ok := c.keys[id]
	if !ok {
		return nil, fmt.Errorf("AES-GCM codec: encrypted with a key this codec does not hold (key id %x; it holds %x): a wrong key", id, c.primary.id)
	}
	plain, err := aead.Open(nil, stored[5:5+ns], stored[5+ns:], additionalData(s))
	if err != nil {
		return nil, errors.New("AES-GCM codec: authentication failed: the stored bytes are corrupt, or belong to another task, job or checkpoint")
	}
	return plain, nil
}

// SealFingerprint implements [FingerprintSealer] with HMAC-SHA-256.
func (c *AESGCM) SealFingerprint(fp string) string {
	m := hmac.New(sha256.New, c.fpKey)
	m.Write([]byte(fp))
	return hex.EncodeToString(m.Sum(nil))
}
