module github.com/boson-go/boson/backend-mem

go 1.26

require github.com/boson-go/boson/core v0.0.0

replace github.com/boson-go/boson/core => ../core
