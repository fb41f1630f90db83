package sqltest

import "github.com/boson-go/boson/conformance/mutants"

// declareMutants break the engine's CreateQueue and QueueDeclared; they
// join EngineMutants, so both dialects run them.
var declareMutants = []mutants.Mutant{{
	Name:     "create-queue-ignores-declaration",
	Breaks:   []string{mutants.QueueDeclaration},
	Edits:    []mutants.Edit{{File: eng("declare.go"), Find: "\t\tif declared {\n", Replace: "\t\tif declared && false {\n"}},
	CaughtBy: []string{"Declare/RepeatEqual", "Declare/Conflict", "Declare/RaceEqual"},
}, {
	Name:     "queue-declared-inverted",
	Breaks:   []string{mutants.QueueDeclaration},
	Edits:    []mutants.Edit{{File: eng("declare.go"), Find: "declared = d != 0", Replace: "declared = d == 0"}},
	CaughtBy: []string{"Declare/Create", "Declare/PutConfigDoesNotDeclare"},
}}

func init() { EngineMutants = append(EngineMutants, declareMutants...) }
