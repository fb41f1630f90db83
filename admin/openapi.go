package admin

import _ "embed"

// openAPIDocument is the OpenAPI 3 description of the JSON API, served at
// /api/v1/openapi.json. A test checks the handler against it.
//
//go:embed openapi.json
var openAPIDocument []byte

// OpenAPI returns a copy of the OpenAPI 3 document that describes the JSON
// API, with paths relative to /api/v1.
func OpenAPI() []byte { return append([]byte(nil), openAPIDocument...) }
