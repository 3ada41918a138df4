package scoring_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/scoring"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata (needs python3 for the Python golden)")

// pyCase is one answer set and what the rubric's Python score() returned.
type pyCase struct {
	Answers rubric.Answers `json:"answers"`
	Want    pyResult       `json:"want"`
}

type pyResult struct {
	Pass             bool               `json:"pass"`
	Score            float64            `json:"score"`
	CategoryScores   map[string]float64 `json:"category_scores"`
	FailedChecks     []string           `json:"failed_checks"`
	FailedSafety     []string           `json:"failed_safety"`
	SafetyGateFailed bool               `json:"safety_gate_failed"`
}

// pyCases returns answer sets that reach every category score, the
// threshold from both sides, ERROR, missing answers and invalid NA.
func pyCases(d *rubric.Definition) []rubric.Answers {
	cases := []rubric.Answers{d.Examples[0].AnswerSet(), {}}
	rng := rand.New(rand.NewPCG(20260218, 3))
	values := []rubric.Value{rubric.Yes, rubric.No, rubric.NA, rubric.Error, ""}
	for len(cases) < 400 {
		a := rubric.Answers{}
		odds := 2 + rng.IntN(5)
		for _, it := range d.Items {
			v := rubric.Yes
			if rng.IntN(odds) == 0 {
				v = values[rng.IntN(len(values))]
			}
			if v != "" {
				a[it.Key] = v
			}
		}
		cases = append(cases, a)
	}
	return cases
}

// TestPythonGolden checks the engine against outputs of the rubric's own
// Python score(), generated once into testdata with -update.
func TestPythonGolden(t *testing.T) {
	d := builtin(t, "coaching-conversation@2.0")
	path := filepath.Join("testdata", "python.golden.json")
	if *update {
		answers := pyCases(d)
		in, err := json.Marshal(answers)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("python3", filepath.Join("testdata", "score.py"))
		cmd.Stdin = bytes.NewReader(in)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("python3: %v", err)
		}
		var results []pyResult
		if err := json.Unmarshal(out, &results); err != nil || len(results) != len(answers) {
			t.Fatalf("python3 output: %v (%d results)", err, len(results))
		}
		cases := make([]pyCase, len(answers))
		for i := range answers {
			cases[i] = pyCase{Answers: answers[i], Want: results[i]}
		}
		// One case a line: small, and a diff shows which cases changed.
		var buf bytes.Buffer
		buf.WriteString("[\n")
		for i, c := range cases {
			line, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			buf.Write(line)
			if i < len(cases)-1 {
				buf.WriteByte(',')
			}
			buf.WriteByte('\n')
		}
		buf.WriteString("]\n")
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update with python3 installed)", err)
	}
	var cases []pyCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 300 {
		t.Fatalf("only %d cases", len(cases))
	}
	passes, gates := 0, 0
	for i, c := range cases {
		got, err := scoring.Score(d, c.Answers, rubric.Facts{})
		if err != nil {
			t.Fatal(err)
		}
		same := *got.Score == c.Want.Score && *got.Pass == c.Want.Pass &&
			slices.Equal(got.FailedChecks, c.Want.FailedChecks) &&
			slices.Equal(got.FailedSafety, c.Want.FailedSafety) &&
			got.SafetyGateFailed == c.Want.SafetyGateFailed &&
			len(got.CategoryScores) == len(c.Want.CategoryScores)
		for k, v := range c.Want.CategoryScores {
			same = same && got.CategoryScores[k] == v
		}
		if !same {
			t.Errorf("case %d %v:\n got %+v\nwant %+v", i, c.Answers, got, c.Want)
		}
		if c.Want.Pass {
			passes++
		}
		if c.Want.SafetyGateFailed {
			gates++
		}
	}
	// The cases must exercise both outcomes.
	if passes == 0 || passes == len(cases) || gates == 0 {
		t.Errorf("cases pass %d, gate failed %d of %d", passes, gates, len(cases))
	}
}
