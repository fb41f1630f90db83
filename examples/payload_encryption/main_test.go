package main

import (
	"strings"
	"testing"

	"github.com/boson-go/boson/examples/internal/extest"
)

func TestPayloadEncryption(t *testing.T) {
	out := extest.Run(t, run)
	extest.Contains(t, out,
		"no -key given: using a random 32-byte key\n",
		"holds the account number: false\n",
		"stored result and checkpoint hold the reference: false\n",
		"the handle decodes the result: TR-3000-125000\n",
		"a worker with another key: failed after 1 attempt(s) of 5: ",
		"decode input of task send-payout: AES-GCM codec: encrypted with a key this codec does not hold",
		"the ciphertext moved to task audit-payout: true: ",
		"AES-GCM codec: authentication failed",
		"after rotating the key, the old result still reads: TR-3000-125000\n",
		"a client without the old key: ErrCodec true: ",
	)
	// A key given on the command line is used as is.
	out = extest.Run(t, run, "-key", strings.Repeat("ab", 16))
	extest.Lacks(t, out, "random 32-byte key")
	extest.Contains(t, out, "the handle decodes the result: TR-3000-125000\n")
	var sink strings.Builder
	if err := run(t.Context(), &sink, []string{"-key", "abcd"}); err == nil || !strings.Contains(err.Error(), "want 16, 24 or 32 bytes") {
		t.Errorf("a 2-byte key: %v", err)
	}
}
