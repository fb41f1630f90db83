module github.com/boson-go/boson/backend-mem

go 1.26
