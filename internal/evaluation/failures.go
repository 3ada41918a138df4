package evaluation

import (
	"context"
	"unicode/utf8"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/failmap"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

// FailureQuery asks where a judge parts from people on one rubric item.
type FailureQuery struct {
	ProjectID  int64
	Judge      string
	RubricItem string
	SystemKey  string // "" means DefaultSystemKey; adapters pass the project's (attune.Project.SystemKeyOr)
}

// FailureSource is what the failure map needs of the database; *store.DB
// satisfies it.
type FailureSource interface {
	FailureRows(ctx context.Context, projectID int64, judge, rubricItem, systemKey string) ([]store.FailureRow, error)
}

// CheckFailures says what is wrong with q, naming the field as Check does.
func CheckFailures(q FailureQuery) error {
	switch {
	case q.Judge == "":
		return attune.Invalid(FieldJudge, "name the judge: a rater id or a judge's name")
	case q.RubricItem == "":
		return attune.Invalid(FieldRubricItem, "name the rubric item to map, by key")
	}
	return nil
}

// Failures maps the judge's agreement with people on the rubric item by
// the kind of item (internal/failmap). An item's crisis signals are the
// rubric's facts of it (rubric.FactsOf), as every other path reads them;
// its reply length is the last assistant message's, in characters. When
// the judge has several raters (samples), its answer on an item is the
// most common of theirs, the earliest rater's on a tie. The map carries the
// length probe (failmap.LengthBias) over the same items and answers.
func Failures(ctx context.Context, src FailureSource, q FailureQuery) (failmap.Map, error) {
	if err := CheckFailures(q); err != nil {
		return failmap.Map{}, err
	}
	if q.SystemKey == "" {
		q.SystemKey = DefaultSystemKey
	}
	rows, err := src.FailureRows(ctx, q.ProjectID, q.Judge, q.RubricItem, q.SystemKey)
	if err != nil {
		return failmap.Map{}, err
	}
	items := make([]failmap.Item, len(rows))
	for i, r := range rows {
		texts := make([]string, len(r.Messages))
		reply := -1
		for k, m := range r.Messages {
			texts[k] = m.Content
			if m.Role == "assistant" {
				reply = utf8.RuneCountInString(m.Content)
			}
		}
		facts := rubric.FactsOf(r.Turns, texts, r.Sensitive)
		items[i] = failmap.Item{
			Turns: r.Turns, Crisis: facts.Crisis == rubric.Signalled, ReplyChars: reply,
			System: r.System, People: r.People, Judge: mostCommon(r.Judge),
		}
	}
	return failmap.Build(items), nil
}

// mostCommon is the most frequent answer, the first to reach that count
// on a tie; "" for none.
func mostCommon(answers []string) string {
	best, bestN := "", 0
	counts := map[string]int{}
	for _, a := range answers {
		counts[a]++
		if counts[a] > bestN {
			best, bestN = a, counts[a]
		}
	}
	return best
}
