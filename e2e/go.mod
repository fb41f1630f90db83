module github.com/boson-go/boson/e2e

go 1.26.0

require (
	github.com/boson-go/boson/backend-mem v0.0.0
	github.com/boson-go/boson/backend-nats v0.0.0
	github.com/boson-go/boson/backend-redis v0.0.0
	github.com/boson-go/boson/conformance v0.0.0
	github.com/boson-go/boson/core v0.0.0
	github.com/boson-go/boson/runtime v0.0.0
	github.com/jackc/pgx/v5 v5.13.0
	github.com/nats-io/nats.go v1.55.0
	github.com/prometheus/client_golang v1.25.0
	github.com/prometheus/common v0.72.0
	github.com/redis/go-redis/v9 v9.23.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/dustin/go-humanize v1.1.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/ncruces/go-strftime v1.1.0 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/remyoudompheng/bigfft v0.0.0-20230129092748-24d4a6f8daec // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
	modernc.org/libc v1.80.1 // indirect
	modernc.org/mathutil v1.7.1 // indirect
	modernc.org/memory v1.12.1 // indirect
	modernc.org/sqlite v1.62.0 // indirect
)

require (
	github.com/boson-go/boson/admin v0.0.0
	github.com/boson-go/boson/backend-sql v0.0.0
	github.com/boson-go/boson/observability v0.0.0
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

replace github.com/boson-go/boson/backend-sql => ../backend-sql

replace github.com/boson-go/boson/admin => ../admin

replace github.com/boson-go/boson/observability => ../observability
