module github.com/boson-go/boson/conformance

go 1.26

require github.com/boson-go/boson/core v0.0.0

replace github.com/boson-go/boson/core => ../core

require (
	github.com/boson-go/boson/backend-mem v0.0.0
	pgregory.net/rapid v1.3.0
)

replace github.com/boson-go/boson/backend-mem => ../backend-mem
