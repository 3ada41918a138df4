package agreement

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestReadLongCSV(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		in            string
		items, raters int
		values        []string
		wantErr       string // substring; "" for success
		wantLine      int
	}{
		{
			name:  "plain",
			in:    "item,rater,value\ni1,ann,1\ni1,bob,2\ni2,ann,\ni2,bob,3\n",
			items: 2, raters: 2, values: []string{"1", "2", "3"},
		},
		{
			name:  "columns in any order, extra columns, BOM, CRLF, spaces",
			in:    "\ufeffValue, Rater ,kind,ITEM\r\n 4 ,ann,human,i1\r\n5,gpt,judge,i1\r\n",
			items: 1, raters: 2, values: []string{"4", "5"},
		},
		{
			name:    "quoted field spanning lines keeps line numbers",
			in:      "item,rater,value\n\"i\n1\",ann,1\ni2,ann,2\ni2,ann,3\n",
			wantErr: `rater "ann" already rated item "i2" on line 4`, wantLine: 5,
		},
		{name: "empty file", in: "", wantErr: "empty file", wantLine: 1},
		{name: "no value column", in: "item,rater\ni1,ann\n", wantErr: `no "value" column`, wantLine: 1},
		{name: "column twice", in: "item,rater,value,item\n", wantErr: `column "item" twice`, wantLine: 1},
		{name: "wrong field count", in: "item,rater,value\ni1,ann,1\ni2,ann\n", wantErr: "wrong number of fields", wantLine: 3},
		{name: "bare quote", in: "item,rater,value\ni1,ann,1\ni2,a\"nn,1\n", wantErr: "bare \"", wantLine: 3},
		{name: "empty item", in: "item,rater,value\n,ann,1\n", wantErr: "empty item", wantLine: 2},
		{name: "empty rater", in: "item,rater,value\ni1,  ,1\n", wantErr: "empty rater", wantLine: 2},
		{name: "duplicate, even as missing", in: "item,rater,value\ni1,ann,\ni1,ann,2\n", wantErr: "already rated", wantLine: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := ReadLongCSV(strings.NewReader(tc.in))
			if tc.wantErr != "" {
				var le *LineError
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &le) || le.Line != tc.wantLine {
					t.Fatalf("err = %v, want line %d: …%s…", err, tc.wantLine, tc.wantErr)
				}
				if !strings.HasPrefix(err.Error(), "line ") {
					t.Errorf("error %q does not start with its line", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.NumItems() != tc.items || r.NumRaters() != tc.raters || !slices.Equal(r.Values(), tc.values) {
				t.Errorf("got %d items, %d raters, values %v; want %d, %d, %v",
					r.NumItems(), r.NumRaters(), r.Values(), tc.items, tc.raters, tc.values)
			}
		})
	}
}

func TestValueOffScaleNamesLine(t *testing.T) {
	t.Parallel()
	r, err := ReadLongCSV(strings.NewReader("item,rater,value\ni1,ann,1\ni1,bob,7\ni2,ann,7\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Summarize(r, Options{Scale: likert(t)})
	if err == nil || err.Error() != `line 3: value "7" is not on the scale 1,2,3,4,5` {
		t.Errorf("err = %v", err)
	}
}

func TestScale(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		infer   []string // InferScale input; nil uses parse
		parse   string
		labels  []string
		values  []float64
		numeric bool
		wantErr string
	}{
		{name: "numbers sort as numbers", infer: []string{"10", "9", "2.5", "-1", "9"},
			labels: []string{"-1", "2.5", "9", "10"}, values: []float64{-1, 2.5, 9, 10}, numeric: true},
		{name: "words sort as strings, values are positions", infer: []string{"YES", "NO", "NA", "3"},
			labels: []string{"3", "NA", "NO", "YES"}, values: []float64{1, 2, 3, 4}},
		{name: "declared order kept", parse: "YES, NO ,NA",
			labels: []string{"YES", "NO", "NA"}, values: []float64{1, 2, 3}},
		{name: "declared numbers keep their order", parse: "5,4,3,2,1",
			labels: []string{"5", "4", "3", "2", "1"}, values: []float64{5, 4, 3, 2, 1}, numeric: true},
		{name: "repeated", parse: "1,2,1", wantErr: "repeated"},
		{name: "same value", parse: "1,1.0", wantErr: "same value"},
		{name: "empty label", parse: "1,,2", wantErr: "empty"},
		{name: "nothing", infer: []string{}, wantErr: "no categories"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var s *Scale
			var err error
			if tc.infer != nil {
				s, err = InferScale(tc.infer)
			} else {
				s, err = ParseScale(tc.parse)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want …%s…", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(s.Labels(), tc.labels) || !slices.Equal(s.Values(), tc.values) || s.Numeric() != tc.numeric {
				t.Errorf("got %v %v numeric=%v", s.Labels(), s.Values(), s.Numeric())
			}
		})
	}
}

func TestWeightMatrix(t *testing.T) {
	t.Parallel()
	x := []float64{1, 2, 3, 4, 5}
	// Entries w(1,l) for l = 1..5, from Gwet's (2014) definitions.
	for _, tc := range []struct {
		w    Weighting
		want []float64
	}{
		{NoWeights, []float64{1, 0, 0, 0, 0}},
		{LinearWeights, []float64{1, 0.75, 0.5, 0.25, 0}},
		{QuadraticWeights, []float64{1, 0.9375, 0.75, 0.4375, 0}},
		// m = |k-l|+1: 1 - C(m,2)/C(5,2) = 1 - {0,1,3,6,10}/10.
		{OrdinalWeights, []float64{1, 0.9, 0.7, 0.4, 0}},
		{RadicalWeights, []float64{1, 1 - 1/2.0, 1 - math.Sqrt(2)/2, 1 - math.Sqrt(3)/2, 0}},
		// ((1-l)/(1+l))² over ((5-1)/(5+1))² = 4/9.
		{RatioWeights, []float64{1, 1 - (1.0/9)/(4.0/9), 1 - (4.0/16)/(4.0/9), 1 - (9.0/25)/(4.0/9), 1 - (16.0/36)/(4.0/9)}},
	} {
		m, err := WeightMatrix(tc.w, x)
		if err != nil {
			t.Fatal(err)
		}
		for l, want := range tc.want {
			if math.Abs(m[0][l]-want) > 1e-12 || m[l][0] != m[0][l] {
				t.Errorf("%v w(1,%d) = %v, want %v (symmetric)", tc.w, l+1, m[0][l], want)
			}
		}
	}
	if _, err := WeightMatrix(RatioWeights, []float64{-1, 0, 1}); err == nil {
		t.Error("ratio weights over negative values: no error")
	}
	if w, err := ParseWeighting("quadratic"); err != nil || w != QuadraticWeights {
		t.Errorf("ParseWeighting = %v, %v", w, err)
	}
	if _, err := ParseWeighting("cubic"); err == nil {
		t.Error("ParseWeighting(cubic): no error")
	}
	if l, err := ParseLevel("ordinal"); err != nil || l != Ordinal {
		t.Errorf("ParseLevel = %v, %v", l, err)
	}
}

func TestNewUnitsValidates(t *testing.T) {
	t.Parallel()
	s := likert(t)
	for _, tc := range []struct {
		name string
		list []Unit
	}{
		{"short counts", []Unit{{Counts: []int{1, 2}, Weight: 1}}},
		{"negative count", []Unit{{Counts: []int{1, -1, 0, 0, 0}, Weight: 1}}},
		{"negative weight", []Unit{{Counts: []int{1, 1, 0, 0, 0}, Weight: -2}}},
	} {
		if _, err := NewUnits(s, tc.list); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	u, err := NewUnits(s, []Unit{
		{Counts: []int{0, 0, 0, 0, 0}, Weight: 4},
		{Counts: []int{2, 0, 0, 0, 0}, Weight: 0},
		{Counts: []int{1, 1, 0, 0, 0}, Weight: 3},
		{Counts: []int{0, 1, 0, 0, 0}, Weight: 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	if u.Items() != 5 || u.Pairable() != 3 || len(u.List()) != 2 {
		t.Errorf("items %d pairable %d units %d; want 5, 3, 2", u.Items(), u.Pairable(), len(u.List()))
	}
	if _, err := NewContingency(s, [][]int{{1}}); err == nil {
		t.Error("NewContingency with a 1×1 table on a 5-point scale: no error")
	}
}

func TestAddDuplicateFoundByUnits(t *testing.T) {
	t.Parallel()
	r := NewRatings()
	for _, tr := range [][3]string{{"i1", "ann", "1"}, {"i2", "ann", "2"}, {"i1", "ann", "3"}} {
		if err := r.Add(tr[0], tr[1], tr[2]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Units(likert(t)); err == nil || !strings.Contains(err.Error(), `rater "ann" rated item "i1" twice`) {
		t.Errorf("Units: err = %v", err)
	}
	if _, err := Summarize(r, Options{}); err == nil {
		t.Error("Summarize: no error")
	}
	if err := r.Add("", "ann", "1"); err == nil || !strings.HasPrefix(err.Error(), "agreement: ") {
		t.Errorf("Add with empty item: err = %v", err)
	}
}
