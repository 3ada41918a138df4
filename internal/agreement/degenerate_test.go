package agreement

import (
	"strings"
	"testing"
)

// TestDegenerateCases pins the documented result of every degenerate case:
// a value where the statistic is defined, the reason where it is not.
func TestDegenerateCases(t *testing.T) {
	t.Parallel()
	type want map[string]any // JSON field → float64 value or reason substring
	for _, tc := range []struct {
		name string
		csv  string
		opts Options
		want want
	}{
		{
			name: "three raters, one category used by everyone",
			csv:  "i1,a,3\ni1,b,3\ni1,c,3\ni2,a,3\ni2,b,3\n",
			opts: Options{Scale: mustScale(t, "1", "2", "3", "4", "5"), Level: Ordinal, Weights: QuadraticWeights},
			want: want{
				"percent_agreement": 1.0, "gwet_ac1": 1.0, "gwet_ac2": 1.0,
				"krippendorff_alpha": ReasonNoVariation, "fleiss_kappa": ReasonNoVariation,
				"scotts_pi": "fleiss_kappa is its generalization", "cohen_kappa": "exactly two raters; the data have 3",
				"spearman": ReasonNotTwoRaters, "kendall_tau_b": ReasonNotTwoRaters,
			},
		},
		{
			name: "two raters, one category used by both",
			csv:  "i1,a,YES\ni1,b,YES\ni2,a,YES\ni2,b,YES\n",
			opts: Options{Scale: mustScale(t, "YES", "NO", "NA")},
			want: want{
				"percent_agreement": 1.0, "gwet_ac1": 1.0,
				"cohen_kappa": ReasonNoVariation, "scotts_pi": ReasonNoVariation,
				"spearman": ReasonNoVariation, "kendall_tau_b": ReasonNoVariation,
			},
		},
		{
			name: "two raters who always differ, each constant",
			csv:  "i1,a,1\ni1,b,2\ni2,a,1\ni2,b,2\ni3,a,1\ni3,b,2\ni4,a,1\ni4,b,2\n",
			opts: Options{Scale: mustScale(t, "1", "2")},
			want: want{
				// p_o = 0 and p_e = 0: kappa is 0, not undefined.
				"percent_agreement": 0.0, "cohen_kappa": 0.0,
				// Pooled π = (½, ½): p_e = ½, pi = (0 - ½)/(1 - ½).
				"scotts_pi": -1.0,
				// n = 8 pairable values, o_12 = o_21 = 4: 1 - 7·8/(4·4·2).
				"krippendorff_alpha": -0.75,
				"spearman":           ReasonNoVariation, "kendall_tau_b": ReasonNoVariation,
			},
		},
		{
			name: "a single rater",
			csv:  "i1,a,1\ni2,a,2\ni3,a,\n",
			want: want{
				"percent_agreement": ReasonFewRaters, "krippendorff_alpha": ReasonFewRaters,
				"fleiss_kappa": ReasonFewRaters, "gwet_ac1": ReasonFewRaters, "gwet_ac2": ReasonFewRaters,
				"cohen_kappa": ReasonFewRaters, "scotts_pi": ReasonFewRaters,
			},
		},
		{
			name: "two raters with no item in common",
			csv:  "i1,a,1\ni2,b,2\ni3,a,2\ni3,b,\n",
			want: want{
				"percent_agreement": ReasonNoPairable, "krippendorff_alpha": ReasonNoPairable,
				"fleiss_kappa": ReasonNoPairable, "gwet_ac1": ReasonNoPairable,
				"cohen_kappa": ReasonNoPairable, "spearman": ReasonNoPairable, "kendall_tau_b": ReasonNoPairable,
			},
		},
		{
			name: "interval level on a non-numeric scale",
			csv:  "i1,a,YES\ni1,b,NO\ni2,a,NO\ni2,b,NO\n",
			opts: Options{Level: Interval},
			want: want{"krippendorff_alpha": ReasonNotNumeric},
		},
		{
			name: "ratio level over negative values",
			csv:  "i1,a,-1\ni1,b,1\ni2,a,1\ni2,b,1\n",
			opts: Options{Level: Ratio, Weights: RatioWeights},
			want: want{"krippendorff_alpha": ReasonNegative, "gwet_ac2": ReasonNegative},
		},
		{
			name: "a one-category scale",
			csv:  "i1,a,NA\ni1,b,NA\n",
			want: want{"gwet_ac1": ReasonFewCategories, "fleiss_kappa": ReasonNoVariation, "percent_agreement": 1.0},
		},
		{
			name: "no ratings at all",
			csv:  "i1,a,\ni1,b,\n",
			want: want{"percent_agreement": ReasonNoPairable, "cohen_kappa": ReasonNoPairable},
		},
		{
			name: "header only",
			csv:  "",
			want: want{"percent_agreement": ReasonFewRaters, "kendall_tau_b": ReasonFewRaters},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := ReadLongCSV(strings.NewReader("item,rater,value\n" + tc.csv))
			if err != nil {
				t.Fatal(err)
			}
			s, err := Summarize(r, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]Estimate{}
			for _, f := range s.fields() {
				got[f.name] = *f.e
			}
			for name, w := range tc.want {
				e, ok := got[name]
				if !ok {
					t.Fatalf("no field %s", name)
				}
				switch w := w.(type) {
				case float64:
					checkNear(t, name, e, w, 1e-12)
				case string:
					if e.Defined || !strings.Contains(e.Reason, w) {
						t.Errorf("%s = %+v, want undefined: …%s…", name, e, w)
					}
				}
			}
		})
	}
}
