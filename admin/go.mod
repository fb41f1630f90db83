module github.com/boson-go/boson/admin

go 1.26

require (
	github.com/boson-go/boson/backend-mem v0.0.0
	github.com/boson-go/boson/core v0.0.0
)

replace (
	github.com/boson-go/boson/backend-mem => ../backend-mem
	github.com/boson-go/boson/conformance => ../conformance
	github.com/boson-go/boson/core => ../core
)
