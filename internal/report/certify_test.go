package report_test

import (
	"strings"
	"testing"

	"github.com/attune/attune/internal/probe"
	"github.com/attune/attune/internal/probes"
	"github.com/attune/attune/internal/report"
)

// TestCertifyJoinsTheProbes: a pass with a probe that failed on the rubric
// item reads "passed, but unstable", with the verdict naming the probe; a
// probe failing on another rubric item, a failed alt-test and a judge
// without a probe keep their word.
func TestCertifyJoinsTheProbes(t *testing.T) {
	t.Parallel()
	half := 0.75
	passed := report.AltTest{Result: "passed", Passed: true, Tested: 3, WinningRate: report.Stat{Value: &half}}
	failed := report.AltTest{Result: "failed", Tested: 3, WinningRate: report.Stat{Value: &half}}
	r := &report.Report{RubricItems: []report.RubricItem{
		{Key: "a", Judges: []report.JudgeItem{{Rater: 1, AltTest: passed, Verdict: "Can replace an annotator."}, {Rater: 2, AltTest: passed}, {Rater: 3, AltTest: failed}}},
		{Key: "b", Judges: []report.JudgeItem{{Rater: 1, AltTest: passed}}},
	}}
	unstable := probe.Summary{
		Retest:       []probe.RetestResult{{Criterion: "a", Verdict: probe.Stable}, {Criterion: "b", Verdict: probe.Stable}},
		Perturbation: []probe.PerturbResult{{Criterion: "a", Rewrite: probe.Rename, Verdict: probe.Unstable}, {Criterion: "b", Rewrite: probe.Rename, Verdict: probe.Stable}},
	}
	latest := map[int64]*probes.Result{
		1: {Run: probes.Run{ID: 9}, Summary: unstable},
		3: {Run: probes.Run{ID: 10}, Summary: unstable},
	}
	report.Certify(r, latest)
	a, b := r.RubricItems[0].Judges, r.RubricItems[1].Judges
	if a[0].Certification != probe.PassedUnstable || !strings.Contains(a[0].Verdict, "probe (run 9) failed: rename of a") || a[0].ProbeRun != 9 {
		t.Errorf("unstable on a: %q, %q, run %d", a[0].Certification, a[0].Verdict, a[0].ProbeRun)
	}
	if a[1].Certification != "passed" || a[1].Probes != nil {
		t.Errorf("no probe: %q", a[1].Certification)
	}
	if a[2].Certification != "failed" {
		t.Errorf("failed alt-test with an unstable probe: %q", a[2].Certification)
	}
	if b[0].Certification != "passed" || b[0].Probes == nil || strings.Contains(b[0].Verdict, "failed") {
		t.Errorf("stable on b: %q, %q", b[0].Certification, b[0].Verdict)
	}
}
