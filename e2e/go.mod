module github.com/boson-go/boson/e2e

go 1.26.0

require (
	github.com/boson-go/boson/backend-mem v0.0.0
	github.com/boson-go/boson/backend-nats v0.0.0
	github.com/boson-go/boson/backend-redis v0.0.0
	github.com/boson-go/boson/core v0.0.0
	github.com/boson-go/boson/runtime v0.0.0
	github.com/nats-io/nats.go v1.55.0
	github.com/redis/go-redis/v9 v9.23.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/google/btree v1.1.3 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/nats-io/nkeys v0.4.17 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

replace (
	github.com/boson-go/boson/backend-mem => ../backend-mem
	github.com/boson-go/boson/core => ../core
	github.com/boson-go/boson/runtime => ../runtime
)

replace github.com/boson-go/boson/conformance => ../conformance

replace github.com/boson-go/boson/backend-redis => ../backend-redis

replace github.com/boson-go/boson/backend-nats => ../backend-nats
