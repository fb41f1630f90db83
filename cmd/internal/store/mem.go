package store

import (
	"strings"

	mem "github.com/boson-go/boson/backend-mem"
)

func openMem(rest string) (*Store, error) {
	if r := strings.TrimLeft(rest, "/"); r != "" {
		return nil, invalidURL("mem:"+rest, "mem: takes no path or options")
	}
	b := mem.New(mem.Options{})
	s := &Store{Backend: b, Kind: "mem", Location: "process memory"}
	s.onClose(b.Close)
	return s, nil
}
