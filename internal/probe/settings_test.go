package probe

import (
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/attune/attune/internal/attune"
)

// TestThresholdSettings: ReadThresholds lays what is typed over the base,
// naming each field it cannot read, and Validate names each field out of
// range, with the same message either way.
func TestThresholdSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		typed  map[string]string
		want   Thresholds
		unread []string
		bad    []string
	}{
		{"nothing typed keeps the base", nil, DefaultThresholds(), nil, nil},
		{"all typed", map[string]string{FieldRetestChange: " 0.2", FieldPerturbMove: "0", FieldMinItems: "2", FieldLengthSlope: "10"},
			Thresholds{RetestChange: 0.2, PerturbMove: 0, MinItems: 2, LengthSlope: 10}, nil, nil},
		{"bounds", map[string]string{FieldRetestChange: "1", FieldPerturbMove: "-0.01", FieldMinItems: "1", FieldLengthSlope: "10.01"},
			Thresholds{RetestChange: 1, PerturbMove: -0.01, MinItems: 1, LengthSlope: 10.01}, nil,
			[]string{FieldLengthSlope, FieldMinItems, FieldPerturbMove, FieldRetestChange}},
		{"not numbers", map[string]string{FieldRetestChange: "", FieldMinItems: "2.5", FieldLengthSlope: "a tenth"}, DefaultThresholds(),
			[]string{FieldLengthSlope, FieldMinItems, FieldRetestChange}, nil},
		{"NaN is out of range", map[string]string{FieldPerturbMove: "NaN"}, Thresholds{}, nil, []string{FieldPerturbMove}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, unread := ReadThresholds(DefaultThresholds(), tc.typed)
			if keys := slices.Sorted(maps.Keys(unread)); !slices.Equal(keys, tc.unread) {
				t.Errorf("unread %v, want %v", keys, tc.unread)
			}
			for f, msg := range unread {
				if msg != ThresholdMessage(f) {
					t.Errorf("%s: %q", f, msg)
				}
			}
			if tc.name != "NaN is out of range" && got != tc.want {
				t.Errorf("read %+v, want %+v", got, tc.want)
			}
			var v *attune.ValidationError
			err := got.Validate()
			if len(tc.bad) == 0 {
				if err != nil {
					t.Errorf("Validate: %v", err)
				}
				return
			}
			if !errors.As(err, &v) {
				t.Fatalf("Validate: %v, want a validation error", err)
			}
			if keys := slices.Sorted(maps.Keys(v.Fields)); !slices.Equal(keys, tc.bad) {
				t.Errorf("refused %v, want %v", keys, tc.bad)
			}
			for f, msg := range v.Fields {
				if msg != ThresholdMessage(f) {
					t.Errorf("%s: %q", f, msg)
				}
			}
		})
	}
}
