package mutants

import (
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
