package agreement

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestSummaryGolden pins the JSON the CLI will print for a few files.
func TestSummaryGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		golden string
		csv    string
		opts   Options
	}{
		{"krippendorff2011_ordinal_quadratic", "krippendorff2011.csv", Options{Level: Ordinal, Weights: QuadraticWeights}},
		{"krippendorff2011_interval_bootstrap", "krippendorff2011.csv", Options{Level: Interval, Weights: LinearWeights,
			Bootstrap: &Bootstrap{Replicates: 200, Level: 0.9, Seed: 1}}},
		{"two_raters_ordinal_quadratic", "two_raters.csv", Options{Level: Ordinal, Weights: QuadraticWeights}},
		{"criteria_nominal", "criteria.csv", Options{Scale: mustScale(t, "YES", "NO", "NA")}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			t.Parallel()
			f, err := os.Open(filepath.Join("testdata", tc.csv))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r, err := ReadLongCSV(f)
			if err != nil {
				t.Fatal(err)
			}
			s, err := Summarize(r, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := json.Indent(&got, raw, "", "  "); err != nil {
				t.Fatal(err)
			}
			got.WriteByte('\n')
			path := filepath.Join("testdata", tc.golden+".golden.json")
			if *update {
				if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("summary differs from %s (rerun with -update if intended):\n%s", path, got.Bytes())
			}
		})
	}
}

func TestSummaryJSONShape(t *testing.T) {
	t.Parallel()
	s, err := Summarize(ratingsOf(t, krippendorff2011), Options{Level: Ordinal})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	keys := []string{"n_items", "n_raters", "percent_agreement", "krippendorff_alpha", "fleiss_kappa",
		"scotts_pi", "gwet_ac1", "gwet_ac2", "cohen_kappa", "spearman", "kendall_tau_b", "notes"}
	if len(got) != len(keys) {
		t.Errorf("got keys %v, want exactly %v", reflect.ValueOf(got).MapKeys(), keys)
	}
	for _, k := range keys {
		if _, ok := got[k]; !ok {
			t.Errorf("missing key %s", k)
		}
	}
	if got["n_items"] != 12.0 || got["n_raters"] != 4.0 || got["cohen_kappa"] != nil {
		t.Errorf("n_items %v, n_raters %v, cohen_kappa %v", got["n_items"], got["n_raters"], got["cohen_kappa"])
	}
	notes := got["notes"].(map[string]any)
	if len(notes) != 4 || notes["cohen_kappa"] == nil {
		t.Errorf("notes = %v, want the four pairwise statistics", notes)
	}
}
