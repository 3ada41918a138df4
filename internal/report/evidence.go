package report

import (
	"context"
	"slices"

	"github.com/attune/attune/internal/agreement"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

// EvidenceAgreement is the agreement on where a rubric item fails: among
// raters who both gave a failing answer on the same item and both marked
// turns, how often they name a common turn and Krippendorff's alpha on the
// turn sets with the MASI distance (agreement.EvidenceAgreement;
// docs/agreement.md).
type EvidenceAgreement struct {
	// People is among the annotators; Judges each judge against them.
	People EvidenceFigures `json:"people"`
	Judges []JudgeEvidence `json:"judges"`
}

// EvidenceFigures are the figures on evidence over one set of pairs.
type EvidenceFigures struct {
	// Items counts the items with at least one pair compared; Pairs the
	// pairs of marked sets, Overlapping those naming a common turn.
	Items       int `json:"n_items"`
	Pairs       int `json:"n_pairs"`
	Overlapping int `json:"n_overlapping"`
	// Overlap is Overlapping over Pairs, Alpha alpha with MASI; both
	// undefined ("too few …") when Items is below MinItems.
	Overlap Stat `json:"overlap_share"`
	Alpha   Stat `json:"masi_alpha"`
	TooFew  bool `json:"too_few"`
	// MinItems is agreement.MinEvidenceItems, said beside the figures.
	MinItems int `json:"min_items"`
}

// JudgeEvidence is one judge's agreement on evidence with the annotators:
// its marked turns paired with each annotator's on the same item.
type JudgeEvidence struct {
	Rater int64 `json:"rater"`
	EvidenceFigures
}

func evidenceFigures(f agreement.EvidenceFigures) EvidenceFigures {
	out := EvidenceFigures{Items: f.Items, Pairs: f.Overlap.Pairs, Overlapping: f.Overlap.Overlapping,
		Alpha: stat(f.Alpha), TooFew: f.TooFew, MinItems: agreement.MinEvidenceItems}
	switch {
	case f.TooFew:
		out.Overlap = Stat{Reason: agreement.ReasonFewEvidenceItems}
	default:
		out.Overlap = value(f.Overlap.Share)
	}
	return out
}

// readEvidence reads the turns marked in the project and gives the
// agreement on them for each rubric item whose answers can fail, in the
// order of def's items (nil for the others). Only turns marked on a
// failing answer count: the rule lets no other be stored, and a set read
// in the middle of an edit is held to it here too.
func readEvidence(ctx context.Context, db *store.DB, projectID int64, def *rubric.Definition, humans, judges []int64, filter store.AgreementFilter) ([]*EvidenceAgreement, error) {
	out := make([]*EvidenceAgreement, len(def.Items))
	canFail := false
	for i := range def.Items {
		canFail = canFail || def.CanFail(&def.Items[i])
	}
	if !canFail {
		return out, nil
	}
	sets, err := db.ListEvidence(ctx, projectID, filter)
	if err != nil {
		return nil, err
	}
	// The sets come by item, so an item's raters follow each other.
	type byRater map[int64]agreement.TurnSet
	for k := range def.Items {
		it := &def.Items[k]
		if !def.CanFail(it) {
			continue
		}
		// marked[i] is the turns each rater marked on the i-th item with
		// any, on a failing answer of it.
		var marked []byRater
		for i, s := range sets {
			if i == 0 || s.ItemID != sets[i-1].ItemID {
				marked = append(marked, byRater{})
			}
			turns := s.Evidence[it.Key]
			if len(turns) == 0 || !def.Fails(it, rubric.Value(s.Answers[it.Key])) {
				continue
			}
			marked[len(marked)-1][s.RaterID] = turns
		}
		people := make([][]agreement.TurnSet, len(marked))
		for i, m := range marked {
			for _, h := range humans {
				if t, ok := m[h]; ok {
					people[i] = append(people[i], t)
				}
			}
		}
		e := &EvidenceAgreement{People: evidenceFigures(agreement.EvidenceAgreement(people)), Judges: []JudgeEvidence{}}
		for _, j := range judges {
			mine := make([]agreement.TurnSet, len(marked))
			for i, m := range marked {
				mine[i] = m[j]
			}
			e.Judges = append(e.Judges, JudgeEvidence{Rater: j, EvidenceFigures: evidenceFigures(agreement.EvidenceAgreementWith(mine, people))})
		}
		out[k] = e
	}
	return out, nil
}

// HasPairs says whether there is anything to show: some pair of marked
// sets, among the people or with a judge.
func (e *EvidenceAgreement) HasPairs() bool {
	return e != nil && (e.People.Pairs > 0 || slices.ContainsFunc(e.Judges, func(j JudgeEvidence) bool { return j.Pairs > 0 }))
}
