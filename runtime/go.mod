module github.com/boson-go/boson/runtime

go 1.26
