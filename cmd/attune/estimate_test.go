package main

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/attune/attune/internal/dbtest"
)

// TestEstimateCommand runs `attune estimate` on "emotion" (1–5), worked by
// hand:
//
//	v1: r0 people 4, 2 → 3, judge 3; r1 person 5, judge 5; r2, r3 judge 4, 2 only.
//	    mean(h) 4, Var(h) 2; judge on all 3.5, Var 5/3; Cov(h, j) 2;
//	    λ = 2 / ((1 + 2/2)·5/3) = 0.6; θ̂ = 0.6·3 + (4 − 0.6·4) = 3.4;
//	    Var(h − 0.6j) = 0.32, so Var(θ̂) = 0.36·2/2 + 0.32/2 = 0.52;
//	    worth 2·(2/2)/0.52 = 3.846… labels.
//	v2: r4 person 2, judge 2; r5 person 4, judge 4; none unlabelled: λ = 0,
//	    ppi = human = 3 with variance 2/2 = 1.
//	r6 names no system and no person labelled it: "(none)" is skipped.
//	v1 − v2, independent: ppi 0.4 with variance 1.52.
func TestEstimateCommand(t *testing.T) {
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
	must("project", "create", "--name", "Pilot", "--rubric", "empathetic-dialogue@2", "--overlap", "2")
	var items strings.Builder
	for i, sys := range []string{"v1", "v1", "v1", "v1", "v2", "v2", ""} {
		meta := "{}"
		if sys != "" {
			meta = fmt.Sprintf(`{"system":%q}`, sys)
		}
		fmt.Fprintf(&items, `{"id":"r%d","messages":[{"role":"user","content":"I feel low %d"},{"role":"assistant","content":"That sounds hard."}],"meta":%s}`+"\n", i, i, meta)
	}
	must("import", "--project", "Pilot", writeFile(t, "items.jsonl", items.String()))
	labels := "item,rater,rater_kind,rubric_item,value\n" +
		"r0,ann,human,emotion,4\nr0,bo,human,emotion,2\nr0,@gpt,judge,emotion,3\n" +
		"r1,ann,human,emotion,5\nr1,@gpt,judge,emotion,5\n" +
		"r2,@gpt,judge,emotion,4\nr3,@gpt,judge,emotion,2\n" +
		"r4,ann,human,emotion,2\nr4,@gpt,judge,emotion,2\n" +
		"r5,ann,human,emotion,4\nr5,@gpt,judge,emotion,4\n" +
		"r6,@gpt,judge,emotion,3\n"
	must("labels", "import", "--project", "Pilot", writeFile(t, "labels.csv", labels))

	out := must("estimate", "--project", "Pilot", "--judge", "@gpt", "--rubric-item", "emotion")
	type interval struct{ Mean, Low, High float64 }
	var got struct {
		Sample  string
		Systems []struct {
			System               string
			NLabelled            int `json:"n_labelled"`
			NUnlabelled          int `json:"n_unlabelled"`
			Human, Judge         interval
			PPI                  struct{ Mean, Low, High, Lambda float64 }
			EffectiveHumanLabels float64 `json:"effective_human_labels"`
		}
		Overall struct {
			NLabelled   int `json:"n_labelled"`
			NUnlabelled int `json:"n_unlabelled"`
		}
		Differences []struct {
			A, B   string
			Paired bool
			PPI    interval
		}
		Skipped []struct{ System string }
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	near := func(name string, g, w float64) {
		t.Helper()
		if math.Abs(g-w) > 1e-9 {
			t.Errorf("%s = %v, want %v\n%s", name, g, w, out)
		}
	}
	const z = 1.959963984540054
	if !strings.Contains(got.Sample, "random sample") || len(got.Systems) != 2 || got.Systems[0].System != "v1" || got.Systems[1].System != "v2" {
		t.Fatalf("systems:\n%s", out)
	}
	v1, v2 := got.Systems[0], got.Systems[1]
	if v1.NLabelled != 2 || v1.NUnlabelled != 2 || v2.NLabelled != 2 || v2.NUnlabelled != 0 {
		t.Errorf("counts v1 %d/%d v2 %d/%d", v1.NLabelled, v1.NUnlabelled, v2.NLabelled, v2.NUnlabelled)
	}
	near("v1 human", v1.Human.Mean, 4)
	near("v1 judge", v1.Judge.Mean, 3.5)
	near("v1 λ", v1.PPI.Lambda, 0.6)
	near("v1 ppi", v1.PPI.Mean, 3.4)
	near("v1 ppi high", v1.PPI.High, 3.4+z*math.Sqrt(0.52))
	near("v1 worth", v1.EffectiveHumanLabels, 2/0.52)
	near("v2 λ", v2.PPI.Lambda, 0)
	near("v2 ppi low", v2.PPI.Low, 3-z)
	if got.Overall.NLabelled != 4 || got.Overall.NUnlabelled != 3 {
		t.Errorf("overall %d/%d, want 4/3", got.Overall.NLabelled, got.Overall.NUnlabelled)
	}
	if len(got.Differences) != 1 || got.Differences[0].A != "v1" || got.Differences[0].B != "v2" || got.Differences[0].Paired {
		t.Fatalf("differences:\n%s", out)
	}
	near("v1 − v2 ppi", got.Differences[0].PPI.Mean, 0.4)
	near("v1 − v2 ppi high", got.Differences[0].PPI.High, 0.4+z*math.Sqrt(1.52))
	if len(got.Skipped) != 1 || got.Skipped[0].System != "(none)" {
		t.Errorf("skipped:\n%s", out)
	}

	if text := must("estimate", "--project", "Pilot", "--judge", "@gpt", "--rubric-item", "emotion", "--format", "text"); !strings.Contains(text, "v1 − v2 (independent)") || !strings.Contains(text, "ppi 3.400") {
		t.Errorf("text:\n%s", text)
	}

	// Left out, --system-key is the project's setting: set to a key no
	// item names, every item is of (none); given, the flag wins. A set of
	// the key alone leaves the ε as it was; an empty key is refused.
	if out := must("project", "set", "--project", "Pilot", "--annotators", "experts"); !strings.Contains(out, `system key "system"`) {
		t.Errorf("set ε: %s", out)
	}
	if out := must("project", "set", "--project", "Pilot", "--system-key", "arm"); !strings.Contains(out, `system key "arm"`) || !strings.Contains(out, "ε 0.2 ") {
		t.Errorf("set the key: %s", out)
	}
	if _, err := runCmd(t, env, "", "project", "set", "--project", "Pilot", "--system-key", ""); err == nil || !strings.Contains(err.Error(), "--system-key: ") {
		t.Errorf("an empty key: %v, want it refused on --system-key", err)
	}
	if text := must("estimate", "--project", "Pilot", "--judge", "@gpt", "--rubric-item", "emotion", "--format", "text"); !strings.Contains(text, `systems by meta key "arm"`) || strings.Contains(text, "v1") {
		t.Errorf("text by the project's key:\n%s", text)
	}
	if text := must("estimate", "--project", "Pilot", "--judge", "@gpt", "--rubric-item", "emotion", "--system-key", "system", "--format", "text"); !strings.Contains(text, "v1 − v2 (independent)") {
		t.Errorf("text by --system-key system:\n%s", text)
	}
	if out := must("project", "show", "Pilot"); !strings.Contains(out, `system key "arm"`) || !strings.Contains(out, "ε 0.2 ") {
		t.Errorf("show: %s", out)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--judge", "@gpt", "--rubric-item", "emotion"}, "--project"},
		{[]string{"--project", "Pilot", "--rubric-item", "emotion"}, "--judge"},
		{[]string{"--project", "Pilot", "--judge", "@gpt"}, "--rubric-item"},
		{[]string{"--project", "Pilot", "--judge", "@gpt", "--rubric-item", "emotion", "--format", "xml"}, "--format"},
		{[]string{"--project", "Pilot", "--judge", "@gpt", "--outcome", "score"}, "--outcome"},
		{[]string{"--project", "Pilot", "--judge", "@gpt", "--outcome", "pass"}, "--outcome"},
		{[]string{"--project", "Pilot", "--judge", "@gpt", "--rubric-item", "emotion", "--human", "crowd"}, "--human"},
		{[]string{"--project", "Pilot", "--judge", "@gpt", "--rubric-item", "emotion", "--system-key", ""}, "--system-key"},
		{[]string{"--project", "Pilot", "--judge", "ann", "--rubric-item", "emotion"}, `"ann"`},
	} {
		if _, err := runCmd(t, env, "", append([]string{"estimate"}, c.args...)...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error naming %s", c.args, err, c.want)
		}
	}
}
