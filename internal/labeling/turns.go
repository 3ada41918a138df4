package labeling

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/attune/attune/internal/rubric"
)

// ParseEvidence reads turn evidence as a form holds it, by rubric item key:
// each item's turns typed as text, the numbers the workspace shows,
// separated by commas, semicolons or spaces ("2, 5"). An empty text is no
// evidence. A word that is not a whole number is a blocking issue on its
// item, for the page to show beside it, and the item's turns are left out;
// whether the numbers are turns of the dialogue, and whether the answer
// takes them, is the rubric's to say (rubric.Definition.ValidateEvidence,
// through Check). Issues come in key order.
func ParseEvidence(texts map[string]string) (rubric.Evidence, rubric.Issues) {
	out := make(rubric.Evidence, len(texts))
	var issues rubric.Issues
	for _, key := range slices.Sorted(maps.Keys(texts)) {
		turns, bad := ParseTurns(texts[key])
		if bad != "" {
			issues = append(issues, rubric.Issue{Item: key, Severity: rubric.Blocking,
				Message: fmt.Sprintf("%s: %q is not a turn number; write the numbers of the turns as the dialogue shows them, separated by commas, such as 2, 5", key, bad)})
			continue
		}
		if len(turns) > 0 {
			out[key] = turns
		}
	}
	return out, issues
}

// ParseTurns reads one list of turns as typed ("2, 5"), in the order
// typed; bad is the first word that is not a whole number ("" when every
// word is one).
func ParseTurns(s string) (turns []int, bad string) {
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\t' || r == '\n' || r == '\r' }) {
		n, err := strconv.Atoi(w)
		if err != nil {
			return nil, w
		}
		turns = append(turns, n)
	}
	return turns, ""
}

// TurnsText writes a list of turns as ParseTurns reads it: "2, 5".
func TurnsText(turns []int) string {
	parts := make([]string, len(turns))
	for i, t := range turns {
		parts[i] = strconv.Itoa(t)
	}
	return strings.Join(parts, ", ")
}
