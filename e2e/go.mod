module github.com/boson-go/boson/e2e

go 1.26
