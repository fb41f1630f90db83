module github.com/boson-go/boson/admin

go 1.26
