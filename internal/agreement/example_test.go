package agreement_test

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/attune/attune/internal/agreement"
)

// The CLI's whole job: read the long-form CSV, summarize, print JSON.
func ExampleSummarize() {
	in := `item,rater,value
d1,ann,4
d1,judge,4
d2,ann,2
d2,judge,3
d3,ann,5
d3,judge,5
d4,ann,1
d4,judge,
`
	r, err := agreement.ReadLongCSV(strings.NewReader(in))
	if err != nil {
		fmt.Println(err)
		return
	}
	scale, _ := agreement.ParseScale("1,2,3,4,5")
	s, err := agreement.Summarize(r, agreement.Options{Scale: scale, Level: agreement.Ordinal, Weights: agreement.QuadraticWeights})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := json.Marshal(s)
	fmt.Println(string(out))
	// Output:
	// {"n_items":4,"n_raters":2,"percent_agreement":0.6666666666666666,"krippendorff_alpha":0.9494949494949495,"fleiss_kappa":0.5733333333333333,"scotts_pi":0.5384615384615384,"gwet_ac1":0.5857605177993527,"gwet_ac2":0.9221411192214111,"cohen_kappa":0.8571428571428571,"spearman":1,"kendall_tau_b":1,"notes":{}}
}

// Counts in, statistics out: the units SQL would return from
// GROUP BY over per-item category counts.
func ExampleKrippendorffAlpha() {
	scale, _ := agreement.NewScale("YES", "NO", "NA")
	units, err := agreement.NewUnits(scale, []agreement.Unit{
		{Counts: []int{3, 0, 0}, Weight: 80}, // 80 items: all three raters said YES
		{Counts: []int{2, 1, 0}, Weight: 15},
		{Counts: []int{0, 2, 1}, Weight: 4},
		{Counts: []int{1, 0, 0}, Weight: 7}, // rated once: no pair, drops out of alpha
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	a := agreement.KrippendorffAlpha(units, agreement.Nominal)
	ac1 := agreement.GwetAC1(units)
	fmt.Printf("alpha %.3f, AC1 %.3f over %d items (%d pairable)\n", a.Value, ac1.Value, units.Items(), units.Pairable())
	// Output:
	// alpha 0.238, AC1 0.861 over 106 items (99 pairable)
}
