package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/attune/attune/internal/dbtest"
)

// TestJudgeExperiment compares two judges on gold items from the command
// line: one answers as the people did, the other passes every dialogue,
// including the two that the people failed on safety.
func TestJudgeExperiment(t *testing.T) {
	t.Parallel()
	env := envFor(dbtest.NewURL(t))
	must := func(args ...string) string {
		t.Helper()
		out, err := runCmd(t, env, "", args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return out
	}
	must("project", "create", "--name", "Pilot", "--rubric", "coaching-conversation@2.0", "--overlap", "2")
	var items strings.Builder
	for i := range 5 {
		fmt.Fprintf(&items, `{"id":"c%d","messages":[{"role":"user","content":"I feel stuck %d"},{"role":"assistant","content":"What would help most?"}]}`+"\n", i, i)
	}
	must("import", "--project", "Pilot", writeFile(t, "items.jsonl", items.String()))

	passing := map[string]string{"CQ1": "YES", "CQ2": "NA", "CQ3": "YES", "CQ4": "YES", "CQ5": "YES", "CQ6": "YES",
		"CQ7": "YES", "CQ8": "YES", "CQ9": "NA", "CP1": "NA", "CP2": "YES", "CP3": "NA"}
	var labels strings.Builder
	labels.WriteString("item,rater,rater_kind,rubric_item,value,rationale\n")
	for i := range 5 {
		for key, v := range passing {
			people := v
			if key == "CQ8" && i >= 2 {
				people = "NO" // c2, c3 (and c4) fail the safety gate
			}
			fmt.Fprintf(&labels, "c%d,ann,human,%s,%s,\n", i, key, people)
			if i < 4 { // c4 has one person only: not in the frozen set
				fmt.Fprintf(&labels, "c%d,bo,human,%s,%s,\n", i, key, people)
			}
			fmt.Fprintf(&labels, "c%d,exact,judge,%s,%s,\n", i, key, people)
			fmt.Fprintf(&labels, "c%d,lenient,judge,%s,%s,\n", i, key, v)
		}
	}
	must("labels", "import", "--project", "Pilot", writeFile(t, "labels.csv", labels.String()))
	must("gold", "auto", "--project", "Pilot")

	out := must("judge", "experiment", "--project", "Pilot", "--judge", "exact, lenient", "--replicates", "50", "--epsilon", "0.15")
	type stat struct {
		Value        *float64
		Lower, Upper *float64
		Method       string
	}
	var res struct {
		Items       int
		Variants    []string
		RubricItems []struct {
			Key      string
			Best     string
			Variants []struct {
				Variant   string
				KappaGold stat   `json:"kappa_gold"`
				KappaDiff stat   `json:"kappa_diff_from_best"`
				Verdict   string `json:"verdict_vs_best"`
				AltTest   struct {
					Epsilon float64
					Humans  int
				} `json:"alt_test"`
			}
		} `json:"rubric_items"`
		Scores []struct {
			Variant string
			Gate    struct {
				Misses      []int64
				GoldFailed  int `json:"gold_failed"`
				Sensitivity stat
				Specificity stat
			} `json:"safety_gate"`
			MAE           stat
			PassAgreement stat     `json:"pass_agreement"`
			Cost          *float64 `json:"cost_per_item_usd"`
		} `json:"final_score"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("experiment JSON: %v\n%.400s", err, out)
	}
	if res.Items != 4 || strings.Join(res.Variants, ",") != "exact,lenient" || len(res.RubricItems) != 12 || len(res.Scores) != 2 {
		t.Fatalf("experiment over %d items, variants %v, %d rubric items, %d score rows:\n%s", res.Items, res.Variants, len(res.RubricItems), len(res.Scores), out)
	}
	for _, ri := range res.RubricItems {
		if ri.Key != "CQ8" {
			continue
		}
		if ri.Best != "exact" || *ri.Variants[0].KappaGold.Value != 1 || *ri.Variants[1].KappaGold.Value != 0 ||
			*ri.Variants[1].KappaDiff.Value != -1 || ri.Variants[1].KappaDiff.Lower == nil {
			t.Errorf("CQ8: %+v", ri)
		}
		// Lenient differs from gold on every resample that has both
		// answers: worse, by the simultaneous interval, which says so.
		if v := ri.Variants; v[0].Verdict != "best" || v[1].Verdict != "worse" ||
			!strings.HasPrefix(v[1].KappaDiff.Method, "simultaneous max-t bootstrap") {
			t.Errorf("CQ8 verdicts: %+v", v)
		}
		if a := ri.Variants[0].AltTest; a.Epsilon != 0.15 {
			t.Errorf("CQ8 alt-test: %+v, want ε 0.15", a)
		}
	}
	exact, lenient := res.Scores[0], res.Scores[1]
	if len(exact.Gate.Misses) != 0 || *exact.Gate.Sensitivity.Value != 1 || exact.Gate.GoldFailed != 2 || *exact.MAE.Value != 0 {
		t.Errorf("exact: %+v", exact)
	}
	if len(lenient.Gate.Misses) != 2 || *lenient.Gate.Sensitivity.Value != 0 || *lenient.Gate.Specificity.Value != 1 ||
		*lenient.PassAgreement.Value != 0.5 || lenient.Cost != nil {
		t.Errorf("lenient: %+v", lenient)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"judge", "experiment", "--project", "Pilot"}, "needs --project and --judge"},
		{[]string{"judge", "experiment", "--project", "Pilot", "--judge", "exact@2"}, `judge "exact" has no prompt v2`},
		{[]string{"judge", "experiment", "--project", "Pilot", "--judge", "nobody"}, `no judge is named "nobody"`},
		{[]string{"judge", "experiment", "--project", "Pilot", "--judge", "exact", "--epsilon", "3"}, "--epsilon: ε must be strictly between 0 and 1"},
		{[]string{"judge", "experiment", "--project", "Pilot", "--judge", "exact", "--epsilon", "0.5"}, "outside the usual 0.05 to 0.3"},
	} {
		if _, err := runCmd(t, env, "", c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want %q", c.args, err, c.want)
		}
	}
}
