package ppi_test

import (
	"encoding/json"
	"fmt"

	"github.com/attune/attune/internal/ppi"
)

// Four labelled items and four the judge rated alone: the judge's YES
// share on the unlabelled items, corrected by its error on the labelled
// ones.
func ExampleMean() {
	e, err := ppi.Mean(ppi.Sample{
		Human:           []float64{1, 0, 1, 1},
		JudgeLabelled:   []float64{1, 0, 0, 1},
		JudgeUnlabelled: []float64{1, 1, 0, 1},
	}, ppi.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := json.MarshalIndent(e, "", "  ")
	fmt.Println(string(out))
	// Output:
	// {
	//   "n_labelled": 4,
	//   "n_unlabelled": 4,
	//   "human": {
	//     "mean": 0.75,
	//     "low": 0.26000900386498665,
	//     "high": 1.2399909961350133
	//   },
	//   "judge": {
	//     "mean": 0.625,
	//     "low": 0.266363313345787,
	//     "high": 0.983636686654213
	//   },
	//   "ppi": {
	//     "mean": 0.8277777777777777,
	//     "low": 0.38650591125934913,
	//     "high": 1.2690496442962063,
	//     "lambda": 0.3111111111111111
	//   },
	//   "effective_human_labels": 4.932007306677491
	// }
}

// Send 3 of 8 judge-only items to people, from a seed that is stored with
// the draw so the same items can be drawn again.
func ExampleDraw() {
	d, err := ppi.Draw([]string{"d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8"}, 3, 2026)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(d.IDs, d.Seed)
	// Output:
	// [d2 d4 d6] 2026
}
