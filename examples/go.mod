module github.com/boson-go/boson/examples

go 1.26
