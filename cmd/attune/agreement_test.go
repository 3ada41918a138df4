package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/attune/attune/internal/agreement"
)

func writeFile(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const smallRatings = `item,rater,value
d1,ann,4
d1,bo,4
d1,cy,5
d2,ann,2
d2,bo,3
d2,cy,
d3,ann,5
d3,bo,5
d3,cy,4
d4,ann,1
d4,bo,2
d4,cy,1
`

func TestAgreementCommand(t *testing.T) {
	t.Parallel()
	noDB := func(string) string { return "" } // the command needs no database
	path := writeFile(t, "ratings.csv", smallRatings)
	cases := []struct {
		name  string
		args  []string
		opts  agreement.Options
		pairs bool
	}{
		{"numbers: ordinal, quadratic", []string{path}, agreement.Options{Level: agreement.Ordinal, Weights: agreement.QuadraticWeights}, false},
		{"flags after the file", []string{path, "--level", "interval", "--weights", "linear"}, agreement.Options{Level: agreement.Interval, Weights: agreement.LinearWeights}, false},
		{"declared scale", []string{"--categories", "1,2,3,4,5,6", path}, agreement.Options{Level: agreement.Ordinal, Weights: agreement.QuadraticWeights}, false},
		{"nominal", []string{"--level", "nominal", "--weights", "none", path}, agreement.Options{}, false},
	}
	for _, c := range cases {
		out, err := runCmd(t, noDB, "", append([]string{"agreement"}, c.args...)...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.name, err, out)
		}
		r, _ := agreement.ReadLongCSV(strings.NewReader(smallRatings))
		if strings.Contains(c.name, "declared") {
			c.opts.Scale, _ = agreement.ParseScale("1,2,3,4,5,6")
		}
		want, err := agreement.Summarize(r, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		wantJSON, _ := json.Marshal(want)
		var got, expect map[string]any
		json.Unmarshal([]byte(out), &got)
		json.Unmarshal(wantJSON, &expect)
		if fmt.Sprint(got) != fmt.Sprint(expect) {
			t.Errorf("%s:\n got %v\nwant %v", c.name, got, expect)
		}
		if got["cohen_kappa"] != nil || !strings.Contains(fmt.Sprint(got["notes"]), "exactly two raters") {
			t.Errorf("%s: three raters, yet %v", c.name, got)
		}
	}
	// Two raters: the pairwise figures are there; words: nominal.
	two := writeFile(t, "two.csv", "item,rater,value\na,x,YES\na,y,YES\nb,x,NO\nb,y,YES\nc,x,NA\nc,y,NA\nd,x,NO\nd,y,NO\n")
	out, err := runCmd(t, noDB, "", "agreement", two)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := agreement.ReadLongCSV(strings.NewReader("item,rater,value\na,x,YES\na,y,YES\nb,x,NO\nb,y,YES\nc,x,NA\nc,y,NA\nd,x,NO\nd,y,NO\n"))
	want, _ := agreement.Summarize(r, agreement.Options{})
	var got struct {
		Kappa *float64          `json:"cohen_kappa"`
		Notes map[string]string `json:"notes"`
	}
	json.Unmarshal([]byte(out), &got)
	// YES, NO and NA have no order: no rank correlation on them, unless
	// the level says they are ordered.
	if got.Kappa == nil || *got.Kappa != want.CohenKappa.Value || len(got.Notes) != 2 ||
		got.Notes["spearman"] != agreement.ReasonUnordered || got.Notes["kendall_tau_b"] != agreement.ReasonUnordered {
		t.Fatalf("two raters: %s", out)
	}
	out, err = runCmd(t, noDB, "", "agreement", "--level", "ordinal", two)
	if err != nil || !strings.Contains(out, `"spearman": 0.`) {
		t.Fatalf("two raters, ordinal: %v %s", err, out)
	}
	// AC1 counts the categories of the declared scale: CQ8's YES and NO
	// (two raters, YES/YES twice, YES/NO, NO/NO) give 9/17, and YES, NO,
	// NA as the scale 0.6735.
	cq8 := writeFile(t, "cq8.csv", "item,rater,value\na,x,YES\na,y,YES\nb,x,YES\nb,y,YES\nc,x,YES\nc,y,NO\nd,x,NO\nd,y,NO\n")
	for cats, want := range map[string]float64{"YES,NO": 9.0 / 17, "YES,NO,NA": 0.6734693877551021} {
		out, err = runCmd(t, noDB, "", "agreement", "--categories", cats, cq8)
		var ac struct {
			AC1 float64 `json:"gwet_ac1"`
		}
		if err != nil || json.Unmarshal([]byte(out), &ac) != nil || math.Abs(ac.AC1-want) > 1e-15 {
			t.Fatalf("AC1 on %s: %v %s, want %v", cats, err, out, want)
		}
	}
	// Undefined figures are null with a reason.
	same := writeFile(t, "same.csv", "item,rater,value\na,x,1\na,y,1\nb,x,1\nb,y,1\n")
	out, _ = runCmd(t, noDB, "", "agreement", same)
	if !strings.Contains(out, `"krippendorff_alpha": null`) || !strings.Contains(out, "no variation") {
		t.Fatalf("no variation: %s", out)
	}
	// A bad file names its line and fails; bad flags are usage errors.
	bad := writeFile(t, "bad.csv", "item,rater,value\na,x,1\nb,x\n")
	if _, err := runCmd(t, noDB, "", "agreement", bad); err == nil || !strings.Contains(err.Error(), "bad.csv: line 3") {
		t.Fatalf("bad line: %v", err)
	}
	for _, args := range [][]string{{"agreement"}, {"agreement", "--level", "loud", path}, {"agreement", "--weights", "heavy", path}, {"agreement", path, "extra"}} {
		if _, err := runCmd(t, noDB, "", args...); err == nil || !strings.Contains(err.Error(), "usage") {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	if _, err := runCmd(t, noDB, "", "agreement", filepath.Join(t.TempDir(), "missing.csv")); err == nil {
		t.Error("a missing file is not an error")
	}
}

// BenchmarkAgreementCLI runs `attune agreement` over a 300,000-row file
// (100,000 items × 3 raters, values 1–5, 5% missing): read, aggregate,
// every statistic, JSON out. The target is under one second.
func BenchmarkAgreementCLI(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	var buf bytes.Buffer
	buf.WriteString("item,rater,value\n")
	for i := range 100_000 {
		truth := 1 + rng.IntN(5)
		for j := range 3 {
			fmt.Fprintf(&buf, "item-%06d,rater-%d,", i, j)
			if rng.IntN(20) > 0 {
				fmt.Fprintf(&buf, "%d", max(1, min(5, truth+rng.IntN(3)-1)))
			}
			buf.WriteByte('\n')
		}
	}
	path := writeFile(b, "ratings.csv", buf.String())
	getenv := func(string) string { return "" }
	var worst time.Duration
	for b.Loop() {
		start := time.Now()
		var out strings.Builder
		if err := run(b.Context(), []string{"agreement", path}, getenv, strings.NewReader(""), &out, io.Discard); err != nil {
			b.Fatal(err)
		}
		worst = max(worst, time.Since(start))
		if !strings.Contains(out.String(), `"n_items": 100000`) {
			b.Fatalf("output: %s", out.String())
		}
	}
	b.Logf("300,000 rows: slowest run %s (target: under 1s)", worst.Round(time.Millisecond))
}

// TestAgreementAltTest: --judge adds the alternative annotator test of
// that rater against the others, as agreement.AltTest computes it.
func TestAgreementAltTest(t *testing.T) {
	t.Parallel()
	noDB := func(string) string { return "" }
	var b strings.Builder
	b.WriteString("item,rater,value\n")
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range 60 {
		truth := 1 + rng.IntN(5)
		for _, r := range []string{"ann", "bo", "cy"} {
			fmt.Fprintf(&b, "i%d,%s,%d\n", i, r, max(1, min(5, truth+rng.IntN(3)-1)))
		}
		fmt.Fprintf(&b, "i%d,model,%d\n", i, truth)
	}
	file := writeFile(t, "alt.csv", b.String())
	out, err := runCmd(t, noDB, "", "agreement", "--judge", "model", "--epsilon", "0.2", file)
	if err != nil {
		t.Fatal(err)
	}
	r, err := agreement.ReadLongCSV(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := agreement.InferScale(r.Values())
	want, err := agreement.AltTest(r, s, "model", agreement.AltNegRMSE, agreement.AltOptions{Epsilon: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Alpha   *float64 `json:"krippendorff_alpha"`
		AltTest struct {
			Epsilon float64 `json:"epsilon"`
			Scoring string  `json:"scoring"`
			Humans  []struct {
				Rater  string   `json:"rater"`
				Items  int      `json:"n_items"`
				P      *float64 `json:"p_value"`
				Reject bool     `json:"rejected"`
			} `json:"humans"`
			WinningRate struct{ Value float64 } `json:"winning_rate"`
			Advantage   struct{ Value float64 } `json:"advantage_probability"`
			Passed      bool                    `json:"passed"`
		} `json:"alt_test"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	a := got.AltTest
	if got.Alpha == nil || a.Epsilon != 0.2 || a.Scoring != "neg_rmse" || len(a.Humans) != 3 || a.Humans[0].Rater != "ann" || a.Humans[0].Items != 60 ||
		a.Humans[0].P == nil || *a.Humans[0].P != want.Humans[0].P || a.WinningRate.Value != want.WinningRate.Value ||
		a.Advantage.Value != want.AdvantageProbability.Value || a.Passed != want.Passed || !a.Passed {
		t.Fatalf("alt-test %+v, want %+v", a, want)
	}
	// The figure has the report's shape: an object {value[, reason]}.
	var shape struct {
		AltTest map[string]json.RawMessage `json:"alt_test"`
	}
	json.Unmarshal([]byte(out), &shape)
	for _, k := range []string{"winning_rate", "advantage_probability"} {
		var fig map[string]any
		if err := json.Unmarshal(shape.AltTest[k], &fig); err != nil || len(fig) != 1 || fig["value"] == nil {
			t.Errorf("%s is %s, want {\"value\": v}", k, shape.AltTest[k])
		}
	}
	if out, err := runCmd(t, noDB, "", "agreement", "--judge", "model", "--epsilon", "0.5", "--alt-unusual-epsilon", file); err != nil || !strings.Contains(out, `"epsilon_unusual": true`) {
		t.Errorf("ε 0.5 with --alt-unusual-epsilon: %v %.300s", err, out)
	}
	for _, args := range [][]string{
		{"--judge", "nobody", file},
		{"--judge", "model", "--epsilon", "2", file},
		{"--judge", "model", "--epsilon", "0", "--alt-unusual-epsilon", file},
		{"--judge", "model", "--epsilon", "1", "--alt-unusual-epsilon", file},
		{"--judge", "model", "--epsilon", "0.5", file},
		{"--judge", "model", "--alt-scoring", "kappa", file},
		{"--judge", "model", "--alt-min-items", "1", file},
	} {
		if _, err := runCmd(t, noDB, "", append([]string{"agreement"}, args...)...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
