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
	} {
		if _, err := runCmd(t, env, "", args...); err == nil || !strings.Contains(err.Error(), "usage") {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	if _, err := runCmd(t, env, "", "report", "--project", "Pilot", "--judges", "nobody"); err == nil || !strings.Contains(err.Error(), `no judge named "nobody"`) {
		t.Errorf("unknown judge: %v", err)
	}
}
