module github.com/boson-go/boson/backend-sql

go 1.26
