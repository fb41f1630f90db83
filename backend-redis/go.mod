module github.com/boson-go/boson/backend-redis

go 1.26.0

require (
	github.com/boson-go/boson/conformance v0.0.0
	github.com/boson-go/boson/core v0.0.0
	github.com/redis/go-redis/v9 v9.23.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)

replace (
	github.com/boson-go/boson/backend-mem => ../backend-mem
	github.com/boson-go/boson/conformance => ../conformance
	github.com/boson-go/boson/core => ../core
)
