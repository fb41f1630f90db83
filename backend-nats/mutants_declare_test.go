package natsq_test

import "github.com/boson-go/boson/conformance/mutants"

// declareMutants break the replica's CreateQueue and QueueDeclared; they
// join storeMutants.
var declareMutants = []mutants.Mutant{{
	Name:     "create-queue-ignores-declaration",
	Breaks:   []string{mutants.QueueDeclaration},
	Edits:    []mutants.Edit{{File: "declare.go", Find: "\tif s.declared[cfg.Queue] {\n", Replace: "\tif s.declared[cfg.Queue] && false {\n"}},
	CaughtBy: []string{"Declare/RepeatEqual", "Declare/Conflict", "Declare/RaceEqual"},
}, {
	Name:     "queue-declared-inverted",
	Breaks:   []string{mutants.QueueDeclaration},
	Edits:    []mutants.Edit{{File: "declare.go", Find: "\treturn b.st.declared[queue], nil", Replace: "\treturn !b.st.declared[queue], nil"}},
	CaughtBy: []string{"Declare/Create", "Declare/PutConfigDoesNotDeclare"},
}}

func init() { storeMutants = append(storeMutants, declareMutants...) }
