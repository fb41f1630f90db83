module github.com/boson-go/boson/e2e

go 1.26

require (
	github.com/boson-go/boson/backend-mem v0.0.0
	github.com/boson-go/boson/core v0.0.0
	github.com/boson-go/boson/runtime v0.0.0
	go.uber.org/goleak v1.3.0
)

replace (
	github.com/boson-go/boson/backend-mem => ../backend-mem
	github.com/boson-go/boson/core => ../core
	github.com/boson-go/boson/runtime => ../runtime
)

replace github.com/boson-go/boson/conformance => ../conformance
