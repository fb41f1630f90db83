module github.com/boson-go/boson/cmd

go 1.26
