package mutants

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
)

// unreachedTests returns the absolute paths of the _test.go files in dir
// that the target test cannot reach, so that a mutant's build can leave them
// out through the overlay: a store's package often holds many more tests
// than its conformance entry point, and compiling them for every mutant
// costs more than running the cases the mutant names.
//
// A file is reached when it declares the target test, or a top-level name
// (function, type, variable or constant) that a reached file mentions, or a
// method of a type a reached file declares. Names are matched without
// scopes, so a local variable that shares a top-level name keeps that
// name's file too: the set can only grow past what the build needs, never
// fall short of it. TestMain, which the stores use to start worker
// subprocesses, is kept only where a reached file declares it. Files named
// in keep are reached from the start.
func unreachedTests(dir, test string, keep []string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, err
	}
	type file struct {
		path  string
		names []string // the identifiers it mentions
	}
	fset := token.NewFileSet()
	var files []file
	declared := map[string][]int{} // a top-level name: the files that declare it
	methods := map[string][]int{}  // a receiver type: the files that declare its methods
	var start []int
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(fset, abs, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("mutants: parse %s: %w", p, err)
		}
		i := len(files)
		seen := map[string]bool{}
		var names []string
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && !seen[id.Name] {
				seen[id.Name] = true
				names = append(names, id.Name)
			}
			return true
		})
		files = append(files, file{path: abs, names: names})
		if slices.ContainsFunc(keep, func(k string) bool { return sameFile(k, abs) }) {
			start = append(start, i)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil && len(d.Recv.List) == 1 {
					methods[receiverType(d.Recv.List[0].Type)] = append(methods[receiverType(d.Recv.List[0].Type)], i)
					continue
				}
				if d.Name.Name == test {
					start = append(start, i)
				}
				declared[d.Name.Name] = append(declared[d.Name.Name], i)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						declared[s.Name.Name] = append(declared[s.Name.Name], i)
					case *ast.ValueSpec:
						for _, n := range s.Names {
							declared[n.Name] = append(declared[n.Name], i)
						}
					}
				}
			}
		}
	}
	if len(start) == 0 {
		return nil, fmt.Errorf("mutants: no _test.go file in %s declares %s", dir, test)
	}
	reached := make([]bool, len(files))
	work := start
	for len(work) > 0 {
		i := work[len(work)-1]
		work = work[:len(work)-1]
		if reached[i] {
			continue
		}
		reached[i] = true
		for _, n := range files[i].names {
			if n == "TestMain" {
				continue // a mention of TestMain reaches nothing
			}
			work = append(work, declared[n]...)
			work = append(work, methods[n]...)
		}
	}
	var out []string
	for i, f := range files {
		if !reached[i] {
			out = append(out, f.path)
		}
	}
	return out, nil
}

// receiverType names the type of a method's receiver: T for T, *T, T[K]
// and *T[K].
func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// sameFile reports whether the file path p (relative to the working
// directory, or absolute) names abs.
func sameFile(p, abs string) bool {
	a, err := filepath.Abs(p)
	return err == nil && filepath.Clean(a) == abs
}
