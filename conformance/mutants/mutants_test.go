package mutants

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

func TestRunPatternSelectsNamedCases(t *testing.T) {
	pat := runPattern("TestX", []string{"Claim/Limit", "Fencing/AfterRescue/Complete", ModelCase})
	want := `^TestX$/^(Claim|Fencing|Model)$/^(Limit|AfterRescue|StateMachine)$/^(Complete)$`
	if pat != want {
		t.Fatalf("runPattern = %s, want %s", pat, want)
	}
	// go test matches each level of a subtest name against its part.
	parts := regexp.MustCompile(`/`).Split(pat, -1)
	for i, name := range []string{"TestX", "Fencing", "AfterRescue", "Complete"} {
		if !regexp.MustCompile(parts[i]).MatchString(name) {
			t.Errorf("level %d (%s) does not match %s", i, parts[i], name)
		}
	}
}

func TestFailedLeavesKeepsLeavesOfRoot(t *testing.T) {
	out := []byte(`=== RUN   TestX
    --- FAIL: TestX/Claim/Limit (0.01s)
    --- FAIL: TestX/Claim (0.02s)
        --- FAIL: TestX/Fencing/AfterRescue/Complete (0.00s)
    --- FAIL: TestX/Fencing/AfterRescue (0.00s)
    --- FAIL: TestX/Fencing (0.00s)
    --- PASS: TestX/Model/StateMachine (1.00s)
    --- FAIL: TestY/Claim/Order (0.00s)
--- FAIL: TestX (0.03s)
`)
	got := FailedLeaves("TestX", out)
	want := []string{"Claim/Limit", "Fencing/AfterRescue/Complete"}
	if !slices.Equal(got, want) {
		t.Fatalf("FailedLeaves = %v, want %v", got, want)
	}
}

func TestRequireCoverageCountsModelAndProperties(t *testing.T) {
	ms := []Mutant{
		{Name: "a", Breaks: []string{ClaimLimit}, CaughtBy: []string{"Claim/Limit", ModelCase}},
		{Name: "b", Breaks: []string{FenceFail}, CaughtBy: []string{"Fencing/AfterRescue/Fail"}},
	}
	covered, model := coverage(ms)
	if !covered[ClaimLimit] || !covered[FenceFail] || covered[FenceSleep] || model != 1 {
		t.Fatalf("coverage = %v, %d", covered, model)
	}
}

func TestUnreachedTestsKeepsWhatTheTargetNeeds(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a_test.go":    "package p\n\nfunc TestTarget(t *testing.T) { h := harness(); h.run() }\n",
		"b_test.go":    "package p\n\ntype box struct{ n limit }\n\nfunc harness() *box { return &box{} }\n",
		"c_test.go":    "package p\n\nfunc (b *box) run() { _ = shared }\n",
		"d_test.go":    "package p\n\nvar shared, unused = 1, 2\n\ntype limit int\n",
		"e_test.go":    "package p\n\nfunc TestMain(m *testing.M) { other() }\n",
		"f_test.go":    "package p\n\nfunc other() {}\n\nfunc TestOther(t *testing.T) {}\n",
		"g_test.go":    "package p_test\n\nfunc TestExternal(t *testing.T) { p.Exported() }\n",
		"keep_test.go": "package p\n\nfunc kept() {}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hidden, err := unreachedTests(dir, "TestTarget", []string{filepath.Join(dir, "keep_test.go")})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range hidden {
		got = append(got, filepath.Base(h))
	}
	if want := []string{"e_test.go", "f_test.go", "g_test.go"}; !slices.Equal(got, want) {
		t.Fatalf("hidden %v, want %v", got, want)
	}
	if _, err := unreachedTests(dir, "TestMissing", nil); err == nil {
		t.Fatal("a target no file declares was accepted")
	}
}
