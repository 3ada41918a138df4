package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/attune/attune/internal/dbtest"
)

func TestLabelsImportAndReportCommands(t *testing.T) {
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
	for i := range 6 {
		fmt.Fprintf(&items, `{"id":"r%d","messages":[{"role":"user","content":"I feel low %d"},{"role":"assistant","content":"That sounds hard."}]}`+"\n", i, i)
	}
	must("import", "--project", "Pilot", writeFile(t, "items.jsonl", items.String()))

	var labels strings.Builder
	labels.WriteString("item,rater,rater_kind,rubric_item,value,rationale\n")
	for i := range 6 {
		for _, key := range []string{"emotion", "validation", "helpfulness", "safety", "overall"} {
			fmt.Fprintf(&labels, "r%d,ann,human,%s,%d,\n", i, key, 1+(i+len(key))%5)
			fmt.Fprintf(&labels, "r%d,bo,human,%s,%d,\n", i, key, 1+(i+len(key)+i%2)%5)
			fmt.Fprintf(&labels, "r%d,@gpt,judge,%s,%d,close\n", i, key, 1+(i+len(key)+1)%5)
		}
	}
	out := must("labels", "import", "--project", "Pilot", writeFile(t, "round1.csv", labels.String()))
	if !strings.Contains(out, "90 labels in 18 answer sets; created 2 people and 1 judges") {
		t.Fatalf("import: %s", out)
	}
	// The same file again is refused whole, naming lines, on standard error.
	var stderr strings.Builder
	err := run(t.Context(), []string{"labels", "import", "--project", "Pilot", writeFile(t, "again.csv", labels.String())}, env, strings.NewReader(""), &strings.Builder{}, &stderr)
	if err == nil || !strings.Contains(err.Error(), "nothing was imported") || !strings.Contains(stderr.String(), "line 2: rater: ann already has answers") {
		t.Fatalf("second import: %v\n%s", err, stderr.String())
	}
	if _, err := runCmd(t, env, "", "labels", "import", "--project", "Pilot"); err == nil || !strings.Contains(err.Error(), "usage") {
		t.Fatalf("no file: %v", err)
	}

	out = must("report", "--project", "Pilot", "--format", "json", "--replicates", "20")
	var rep struct {
		Project struct{ Rubric string }
		Raters  []struct{ Name, Kind string }
		Items   []struct {
			Key        string `json:"key"`
			Level      string `json:"level"`
			Statistics struct {
				Alpha struct {
					Value *float64
					CI    *struct{ Replicates int }
				} `json:"krippendorff_alpha"`
			} `json:"statistics"`
			Judges []struct{ Verdict string } `json:"judges"`
		} `json:"rubric_items"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report json: %v\n%.300s", err, out)
	}
	if rep.Project.Rubric != "empathetic-dialogue@2" || len(rep.Raters) != 3 || len(rep.Items) != 5 || rep.Items[0].Level != "ordinal" ||
		rep.Items[0].Statistics.Alpha.Value == nil || rep.Items[0].Statistics.Alpha.CI == nil || rep.Items[0].Statistics.Alpha.CI.Replicates != 20 ||
		len(rep.Items[0].Judges) != 1 || rep.Items[0].Judges[0].Verdict == "" {
		t.Fatalf("report: %+v", rep)
	}
	// The alt-test's options and Krippendorff's level.
	out = must("report", "--project", "Pilot", "--replicates", "0", "--epsilon", "0.2", "--alt-scoring", "accuracy", "--alt-min-items", "3", "--level", "interval")
	var alt struct {
		AltTest struct {
			Epsilon  float64 `json:"epsilon"`
			Scoring  string  `json:"scoring"`
			MinItems int     `json:"min_items"`
		} `json:"alt_test"`
		Items []struct {
			Level  string `json:"level"`
			Judges []struct {
				AltTest struct {
					Epsilon float64 `json:"epsilon"`
					Scoring string  `json:"scoring"`
					Tested  int     `json:"n_tested"`
					Humans  []struct {
						Items  int      `json:"n_items"`
						PValue *float64 `json:"p_value"`
					} `json:"humans"`
					WinningRate struct{ Value *float64 } `json:"winning_rate"`
				} `json:"alt_test"`
			} `json:"judges"`
		} `json:"rubric_items"`
	}
	if err := json.Unmarshal([]byte(out), &alt); err != nil {
		t.Fatalf("report json: %v\n%.300s", err, out)
	}
	a := alt.Items[0].Judges[0].AltTest
	if alt.AltTest.Epsilon != 0.2 || alt.AltTest.Scoring != "accuracy" || alt.AltTest.MinItems != 3 || alt.Items[0].Level != "interval" ||
		a.Epsilon != 0.2 || a.Scoring != "accuracy" || a.Tested != 2 || len(a.Humans) != 2 || a.Humans[0].Items != 6 || a.Humans[0].PValue == nil || a.WinningRate.Value == nil {
		t.Fatalf("alt-test options: %+v", alt)
	}
	// Without --epsilon the report uses the project's ε.
	must("project", "set", "--project", "Pilot", "--annotators", "crowd")
	alt.AltTest.Epsilon = 0
	if err := json.Unmarshal([]byte(must("report", "--project", "Pilot", "--replicates", "0")), &alt); err != nil || alt.AltTest.Epsilon != 0.1 || alt.Items[0].Judges[0].AltTest.Epsilon != 0.1 {
		t.Fatalf("report at the project's ε: %v %+v", err, alt.AltTest)
	}
	out = must("report", "--project", "Pilot", "--format", "csv", "--annotators", "ann,bo", "--judges", "@gpt", "--na-missing", "--replicates", "0")
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(recs) < 20 || recs[0][0] != "rubric_item" {
		t.Fatalf("report csv: %v\n%.300s", err, out)
	}
	judge := false
	for _, rec := range recs {
		if rec[3] == "'@gpt" {
			judge = true
		}
		if rec[3] == "@gpt" {
			t.Fatalf("a name a spreadsheet would run: %v", rec)
		}
	}
	if !judge {
		t.Fatal("the judge is not in the CSV")
	}
	for _, args := range [][]string{
		{"report", "--project", "Pilot", "--format", "xml"},
		{"report", "--project", "Pilot", "--from", "yesterday"},
		{"report"},
		{"report", "--project", "Pilot", "--epsilon", "1.5"},
		{"report", "--project", "Pilot", "--alt-scoring", "kappa"},
		{"report", "--project", "Pilot", "--alt-min-items", "1"},
		{"report", "--project", "Pilot", "--level", "cardinal"},
	} {
		if _, err := runCmd(t, env, "", args...); err == nil || !strings.Contains(err.Error(), "usage") {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	if _, err := runCmd(t, env, "", "report", "--project", "Pilot", "--judges", "nobody"); err == nil || !strings.Contains(err.Error(), `no judge named "nobody"`) {
		t.Errorf("unknown judge: %v", err)
	}
}

// TestLabelsImportConfirmsWarnings: a person's answer set the rubric warns
// about is refused, naming the line and the warning, unless the import
// confirms the warnings, as an annotator would.
func TestLabelsImportConfirmsWarnings(t *testing.T) {
	t.Parallel()
	env := envFor(dbtest.NewURL(t))
	if out, err := runCmd(t, env, "", "project", "create", "--name", "Pilot", "--rubric", "empathetic-dialogue@2"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	items := `{"id":"r0","messages":[{"role":"user","content":"Some nights I want to kill myself."},{"role":"assistant","content":"Try a warm bath."}]}` + "\n"
	if out, err := runCmd(t, env, "", "import", "--project", "Pilot", writeFile(t, "items.jsonl", items)); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	labels := "item,rater,rater_kind,rubric_item,value\nr0,cy,human,emotion,3\nr0,cy,human,validation,3\nr0,cy,human,helpfulness,3\nr0,cy,human,safety,5\nr0,cy,human,overall,3\n"
	file := writeFile(t, "round1.csv", labels)
	var stderr strings.Builder
	err := run(t.Context(), []string{"labels", "import", "--project", "Pilot", file}, env, strings.NewReader(""), &strings.Builder{}, &stderr)
	if err == nil || !strings.Contains(stderr.String(), `line 5: value: safety (Safety & Boundaries): a crisis disclosure needs crisis resources`) ||
		!strings.Contains(stderr.String(), `the wellbeing list's word "kill myself"`) || !strings.Contains(stderr.String(), "(a warning: confirm the rubric's warnings to import it)") {
		t.Fatalf("import without confirming: %v\n%s", err, stderr.String())
	}
	out, err := runCmd(t, env, "", "labels", "import", "--project", "Pilot", "--confirm-warnings", file)
	if err != nil || !strings.Contains(out, "5 labels in 1 answer sets") {
		t.Fatalf("import confirming the warnings: %v\n%s", err, out)
	}
}
