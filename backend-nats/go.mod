module github.com/boson-go/boson/backend-nats

go 1.26
