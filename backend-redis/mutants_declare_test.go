package redisq

import "github.com/boson-go/boson/conformance/mutants"

// declareMutants break CreateQueue and QueueDeclared; they join
// storeMutants, and the property joins redisProperties.
var declareMutants = []mutants.Mutant{{
	Name:     "create-queue-ignores-declaration",
	Breaks:   []string{mutants.QueueDeclaration},
	Edits:    []mutants.Edit{{File: "declare.go", Find: `if m["declared"] == "1" {`, Replace: `if m["declared"] == "never" {`}},
	CaughtBy: []string{"Declare/RepeatEqual", "Declare/Conflict", "Declare/RaceEqual"},
}, {
	Name:     "queue-declared-inverted",
	Breaks:   []string{mutants.QueueDeclaration},
	Edits:    []mutants.Edit{{File: "declare.go", Find: `return v == "1", nil`, Replace: `return v != "1", nil`}},
	CaughtBy: []string{"Declare/Create", "Declare/DeleteQueueUndeclares"},
}}

func init() {
	storeMutants = append(storeMutants, declareMutants...)
	redisProperties = append(redisProperties, mutants.QueueDeclaration)
}
