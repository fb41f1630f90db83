module github.com/boson-go/boson/backend-redis

go 1.26
