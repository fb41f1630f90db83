module github.com/boson-go/boson/core

go 1.26
