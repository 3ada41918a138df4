package runs_test

import (
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/runs"
	"github.com/attune/attune/internal/store"
)

// The store and the runner are what the flow declares it needs.
var (
	_ runs.Store  = (*store.DB)(nil)
	_ runs.Runner = (*judge.Runner)(nil)
)

func TestLimitProblem(t *testing.T) {
	cases := []struct {
		in      string
		want    int    // 0: nil
		problem string // a fragment; "" when read
	}{
		{"", 0, ""},
		{"  ", 0, ""},
		{"1", 1, ""},
		{" 25 ", 25, ""},
		{"10000000", 10_000_000, ""},
		{"10000001", 0, "from 1 up"},
		{"0", 0, "Enter a whole number of items from 1 up"},
		{"-3", 0, "from 1 up"},
		{"abc", 0, "Not a whole number: abc."},
		{"2.5", 0, "Not a whole number: 2.5."},
		{"1e3", 0, "Not a whole number"},
	}
	for _, c := range cases {
		got, problem := runs.LimitProblem(c.in)
		if c.problem != "" {
			if got != nil || !strings.Contains(problem, c.problem) {
				t.Errorf("LimitProblem(%q) = %v, %q; want refused with %q", c.in, got, problem, c.problem)
			}
			continue
		}
		if problem != "" || (c.want == 0) != (got == nil) || got != nil && *got != c.want {
			t.Errorf("LimitProblem(%q) = %v, %q; want %d", c.in, got, problem, c.want)
		}
	}
}

func TestBudgetProblem(t *testing.T) {
	cases := []struct {
		in      string
		want    float64 // 0: nil
		problem string
	}{
		{"", 0, ""},
		{"5", 5, ""},
		{"$2.50", 2.5, ""},
		{"0.01", 0.01, ""},
		{"1000000", 1_000_000, ""},
		{"1000000.01", 0, "at most 1000000"},
		{"0", 0, "above 0"},
		{"-1", 0, "above 0"},
		{"NaN", 0, "above 0"},
		{"ten", 0, "Not an amount: ten."},
	}
	for _, c := range cases {
		got, problem := runs.BudgetProblem(c.in)
		if c.problem != "" {
			if got != nil || !strings.Contains(problem, c.problem) {
				t.Errorf("BudgetProblem(%q) = %v, %q; want refused with %q", c.in, got, problem, c.problem)
			}
			continue
		}
		if problem != "" || (c.want == 0) != (got == nil) || got != nil && *got != c.want {
			t.Errorf("BudgetProblem(%q) = %v, %q; want %v", c.in, got, problem, c.want)
		}
	}
}

func TestPromptProblem(t *testing.T) {
	for in, want := range map[string]int{"": 0, "1": 1, " 3 ": 3} {
		if got, problem := runs.PromptProblem(in); got != want || problem != "" {
			t.Errorf("PromptProblem(%q) = %d, %q; want %d", in, got, problem, want)
		}
	}
	for _, in := range []string{"0", "-1", "v2", "1.5"} {
		if _, problem := runs.PromptProblem(in); !strings.Contains(problem, "prompt version number from 1 up") {
			t.Errorf("PromptProblem(%q) = %q, want refused", in, problem)
		}
	}
}

func TestBudgetSpentAndActive(t *testing.T) {
	five, two := 5.0, 2.0
	cases := []struct {
		run   attune.JudgeRun
		spent bool
	}{
		{attune.JudgeRun{SpentUSD: 10}, false}, // no cap
		{attune.JudgeRun{BudgetUSD: &five, SpentUSD: 4.99}, false},
		{attune.JudgeRun{BudgetUSD: &five, SpentUSD: 5}, true},
		{attune.JudgeRun{BudgetUSD: &two, SpentUSD: 3}, true},
	}
	for _, c := range cases {
		if got := runs.BudgetSpent(&c.run); got != c.spent {
			t.Errorf("BudgetSpent(%+v) = %v, want %v", c.run, got, c.spent)
		}
	}
	for st, want := range map[attune.RunStatus]bool{attune.RunQueued: true, attune.RunRunning: true, attune.RunPaused: false,
		attune.RunCancelled: false, attune.RunCompleted: false} {
		if runs.IsActive(st) != want {
			t.Errorf("IsActive(%s) = %v, want %v", st, !want, want)
		}
	}
}
