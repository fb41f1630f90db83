package main

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/boson-go/boson/examples/internal/extest"
)

func TestPayloadCompression(t *testing.T) {
	out := extest.Run(t, run)
	extest.Contains(t, out,
		"(gzip: true)\n",
		"result as the handle decodes it: {Title:uptime, March Lines:31 Words:310}\n",
		`stored unchanged: {"title":"uptime, March","lines":31,"words":310}`,
		"a job queued before the codec was on still runs: {Title:queued before compression Lines:1 Words:3}\n",
		"corrupt stored bytes: failed after 1 attempt(s) of 5: ",
		"payload codec: decode input of task summarize-report: gzip codec: corrupt bytes",
	)
	m := regexp.MustCompile(`input: (\d+) bytes of JSON, stored as (\d+) bytes`).FindStringSubmatch(out)
	if m == nil {
		t.Fatal("no sizes printed")
	}
	plain, _ := strconv.Atoi(m[1])
	stored, _ := strconv.Atoi(m[2])
	if stored*4 > plain {
		t.Errorf("%d bytes stored as %d: less than 4x smaller", plain, stored)
	}
}
