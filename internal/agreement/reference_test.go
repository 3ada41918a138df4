package agreement

import (
	"testing"
)

// krippendorff2011 is the reliability data of Krippendorff (2011), "Computing
// Krippendorff's Alpha-Reliability", section C: observers A-D × 12 units,
// values 1-5, "" missing.
var krippendorff2011 = [][]string{
	{"1", "2", "3", "3", "2", "1", "4", "1", "2", "", "", ""},
	{"1", "2", "3", "3", "2", "2", "4", "1", "2", "5", "", "3"},
	{"", "3", "3", "3", "2", "3", "4", "2", "2", "5", "1", ""},
	{"1", "2", "3", "3", "2", "4", "4", "1", "2", "5", "1", ""},
}

func TestKrippendorffPaperExample(t *testing.T) {
	t.Parallel()
	u, err := ratingsOf(t, krippendorff2011).Units(likert(t))
	if err != nil {
		t.Fatal(err)
	}
	// The paper prints three decimals; TestCoincidencePaperExample checks
	// the nominal value exactly.
	for _, tc := range []struct {
		level Level
		want  float64
	}{
		{Nominal, 0.743},
		{Ordinal, 0.815},
		{Interval, 0.849},
		{Ratio, 0.797},
	} {
		checkNear(t, "alpha "+tc.level.String(), KrippendorffAlpha(u, tc.level), tc.want, 0.0005)
	}
}

func TestCoincidencePaperExample(t *testing.T) {
	t.Parallel()
	u, err := ratingsOf(t, krippendorff2011).Units(likert(t))
	if err != nil {
		t.Fatal(err)
	}
	// The coincidence matrix printed in the paper (section C), rows and
	// columns 1-5; its marginals are n_c = 9, 13, 10, 5, 3 and n = 40.
	want := [][]float64{
		{7, 4.0 / 3, 1.0 / 3, 1.0 / 3, 0},
		{4.0 / 3, 10, 4.0 / 3, 1.0 / 3, 0},
		{1.0 / 3, 4.0 / 3, 8, 1.0 / 3, 0},
		{1.0 / 3, 1.0 / 3, 1.0 / 3, 4, 0},
		{0, 0, 0, 0, 3},
	}
	// Observer B's 3 in unit 12 is its only value there: unpaired, it drops
	// out, so category 3 holds 10 pairable values, not 11.
	got := Coincidence(u)
	for c := range want {
		for k := range want[c] {
			if d := got[c][k] - want[c][k]; d > 1e-12 || d < -1e-12 {
				t.Errorf("o[%d][%d] = %v, want %v", c+1, k+1, got[c][k], want[c][k])
			}
		}
	}
	// Nominal alpha from the paper's formula on these counts:
	// 1 - (n-1)(n - Σ o_cc) / (n² - Σ n_c²) = 1 - 39·(40-32)/(1600-384).
	checkNear(t, "alpha nominal exact", KrippendorffAlpha(u, Nominal), 1-39.0*8/(1600-384), 1e-12)
}

// fleissExample is the 10 subjects × 14 raters × 5 categories table used to
// illustrate Fleiss' kappa (Fleiss 1971's computation; the table is the
// common textbook illustration): κ = 0.210.
var fleissExample = [][]int{
	{0, 0, 0, 0, 14},
	{0, 2, 6, 4, 2},
	{0, 0, 3, 5, 6},
	{0, 3, 9, 2, 0},
	{2, 2, 8, 1, 1},
	{7, 7, 0, 0, 0},
	{3, 2, 6, 3, 0},
	{2, 5, 3, 2, 2},
	{6, 5, 2, 1, 0},
	{0, 2, 2, 3, 7},
}

func TestFleissExample(t *testing.T) {
	t.Parallel()
	var list []Unit
	for _, c := range fleissExample {
		list = append(list, Unit{Counts: c, Weight: 1})
	}
	u, err := NewUnits(likert(t), list)
	if err != nil {
		t.Fatal(err)
	}
	// By hand: P̄ = Σ_i (Σ_j n_ij² - 14) / (10·14·13) = 688/1820 and
	// P_e = Σ_j p_j² = (20² + 28² + 39² + 21² + 32²) / 140² = 4170/19600.
	pbar, pe := 688.0/1820, 4170.0/19600
	checkNear(t, "percent agreement", PercentAgreement(u), pbar, 1e-12)
	checkNear(t, "fleiss exact", FleissKappa(u, NoWeights), (pbar-pe)/(1-pe), 1e-12)
	checkNear(t, "fleiss published", FleissKappa(u, NoWeights), 0.210, 0.0005)
}

func TestCohenTextbook2x2(t *testing.T) {
	t.Parallel()
	s := mustScale(t, "YES", "NO")
	// 50 items: both yes 20, A yes B no 5, A no B yes 10, both no 15.
	// p_o = 0.7, p_e = 0.5·0.6 + 0.5·0.4 = 0.5, κ = 0.4 (Cohen 1960's
	// formula; the standard textbook illustration).
	c, err := NewContingency(s, [][]int{{20, 5}, {10, 15}})
	if err != nil {
		t.Fatal(err)
	}
	checkNear(t, "kappa", CohenKappa(c, NoWeights), 0.4, 1e-12)
	checkNear(t, "agreement", PairAgreement(c, NoWeights), 0.7, 1e-12)
	// Scott (1955): π_yes = (25+30)/100 = 0.55, p_e = 0.55² + 0.45² = 0.505,
	// pi = (0.7-0.505)/(1-0.505) = 13/33.
	checkNear(t, "scott", ScottPi(c, NoWeights), 13.0/33, 1e-12)
	// Gwet (2008), two raters: p_e = 2·0.55·0.45/(q-1) = 0.495,
	// AC1 = (0.7-0.495)/(1-0.495) = 41/101. Through units: each item is a
	// unit with two ratings.
	u, err := NewUnits(s, []Unit{
		{Counts: []int{2, 0}, Weight: 20},
		{Counts: []int{1, 1}, Weight: 15},
		{Counts: []int{0, 2}, Weight: 15},
	})
	if err != nil {
		t.Fatal(err)
	}
	checkNear(t, "ac1", GwetAC1(u), 41.0/101, 1e-12)
	// With two raters and no missing data Fleiss' kappa is Scott's pi.
	checkNear(t, "fleiss = scott", FleissKappa(u, NoWeights), 13.0/33, 1e-12)
}

// Reference values computed in R 4.2.2 with Debian's r-cran-psych and
// r-cran-psy: psy::ckappa(cbind(a,b))$kappa, psy::wkappa(cbind(a,b),
// weights="absolute"/"squared")$kappa (linear/quadratic on positions;
// psych::cohen.kappa gives the same), cor(a, b, method="spearman") and
// cor(a, b, method="kendall") (tau-b with ties).
func TestPairwiseAgainstR(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                     string
		a, b                     []int // values 1-5
		kappa, linear, quadratic float64
		spearman, kendall        float64
	}{
		{
			name:      "spread",
			a:         []int{1, 2, 3, 4, 5, 3, 2, 4, 5, 1, 3, 3, 4, 2, 5, 4, 1, 2, 3, 4},
			b:         []int{1, 3, 3, 4, 4, 2, 2, 5, 5, 2, 3, 4, 4, 1, 5, 3, 1, 2, 2, 4},
			kappa:     0.43217665615142,
			linear:    0.691780821917808,
			quadratic: 0.865671641791045,
			spearman:  0.871462264150943,
			kendall:   0.784810126582278,
		},
		{
			name:      "heavy ties, category 5 unused by b",
			a:         []int{1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 3, 4, 4, 5, 1, 2, 3, 4, 4, 2, 3, 3, 3, 1},
			b:         []int{1, 2, 1, 2, 2, 3, 2, 3, 3, 4, 3, 2, 4, 3, 4, 1, 2, 3, 4, 4, 2, 2, 3, 3, 2},
			kappa:     0.568965517241379,
			linear:    0.71671388101983,
			quadratic: 0.846153846153846,
			spearman:  0.859027763733077,
			kendall:   0.802824648255838,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := likert(t)
			a, b := make([]int, len(tc.a)), make([]int, len(tc.b))
			for i := range a {
				a[i], b[i] = tc.a[i]-1, tc.b[i]-1
			}
			c := pairTable(t, s, a, b)
			checkNear(t, "kappa", CohenKappa(c, NoWeights), tc.kappa, 1e-12)
			checkNear(t, "linear", CohenKappa(c, LinearWeights), tc.linear, 1e-12)
			checkNear(t, "quadratic", CohenKappa(c, QuadraticWeights), tc.quadratic, 1e-12)
			checkNear(t, "spearman", Spearman(c), tc.spearman, 1e-12)
			checkNear(t, "kendall", KendallTauB(c), tc.kendall, 1e-12)
		})
	}
}
