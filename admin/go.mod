module github.com/boson-go/boson/admin

go 1.26

require (
	github.com/boson-go/boson/backend-mem v0.0.0
	github.com/boson-go/boson/conformance v0.0.0
	github.com/boson-go/boson/core v0.0.0
	github.com/chromedp/chromedp v0.23.1
)

require (
	github.com/chromedp/cdproto v0.160.1 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
)

replace (
	github.com/boson-go/boson/backend-mem => ../backend-mem
	github.com/boson-go/boson/conformance => ../conformance
	github.com/boson-go/boson/core => ../core
)
