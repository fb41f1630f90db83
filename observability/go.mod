module github.com/boson-go/boson/observability

go 1.26
