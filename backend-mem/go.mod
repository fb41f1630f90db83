module github.com/boson-go/boson/backend-mem

go 1.26

require github.com/boson-go/boson/core v0.0.0

replace github.com/boson-go/boson/core => ../core

require github.com/boson-go/boson/conformance v0.0.0

require pgregory.net/rapid v1.3.0 // indirect

replace github.com/boson-go/boson/conformance => ../conformance
