// Package trustfixture makes a project on which a judge's trust routing
// has a guarantee, for the tests of the pages and the command line that
// show and change it. It is for tests only.
package trustfixture

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/importer"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

// Judge is the fixture's judge's name; Kept and Escalated are how many of
// the items only it labelled routing on keeps and sends to people.
const (
	Judge     = "sure"
	Kept      = 2
	Escalated = 1
)

// New makes project name (empathetic-understanding@1, overlap 2) and its
// judge: on 50 items two people answer 4; the judge answers 40 of them 4
// at confidence 0.95 and 10 of them 3 at 0.55, so its threshold is 0.95
// at the default target (0.9) and risk (0.05), with coverage 0.8. Of three
// items no person labelled, it answers two at 0.97 (kept) and one at 0.6
// (escalated).
func New(ctx context.Context, db *store.DB, name string) (*attune.Project, error) {
	if err := db.LoadBuiltinRubrics(ctx); err != nil {
		return nil, err
	}
	ref, _ := rubric.ParseRef("empathetic-understanding@1")
	def, rv, err := db.FindRubric(ctx, ref)
	if err != nil {
		return nil, err
	}
	p, err := db.CreateProject(ctx, nil, store.NewProject{Name: name, RubricVersionID: rv.ID, Overlap: 2, Lease: time.Hour})
	if err != nil {
		return nil, err
	}
	type answer struct {
		value string
		dist  map[string]float64
	}
	var items, labels strings.Builder
	labels.WriteString("item,rater,rater_kind,rubric_item,value\n")
	answers := map[string]answer{}
	for i := range 53 {
		id := fmt.Sprintf("t%02d", i)
		fmt.Fprintf(&items, `{"id":%q,"messages":[{"role":"user","content":"I feel low %d"},{"role":"assistant","content":"That sounds hard."}]}`+"\n", id, i)
		switch {
		case i < 40:
			answers[id] = answer{"4", map[string]float64{"4": 0.95, "3": 0.05}}
		case i < 50:
			answers[id] = answer{"3", map[string]float64{"3": 0.55, "4": 0.45}}
		case i < 50+Kept:
			answers[id] = answer{"4", map[string]float64{"4": 0.97, "5": 0.03}}
		default:
			answers[id] = answer{"4", map[string]float64{"4": 0.6, "3": 0.4}}
		}
		if i < 50 {
			for _, it := range def.Items {
				fmt.Fprintf(&labels, "%s,ann,human,%s,4\n%s,bo,human,%s,4\n", id, it.Key, id, it.Key)
			}
		}
	}
	if _, err := importer.Import(ctx, db, p, strings.NewReader(items.String()), importer.Options{Source: "items.jsonl"}); err != nil {
		return nil, err
	}
	if _, err := importer.ImportLabels(ctx, db, p, strings.NewReader(labels.String()), store.LabelsImportOptions{Source: "labels.csv"}); err != nil {
		return nil, err
	}
	j, err := db.CreateJudge(ctx, nil, attune.JudgePolicy{}, store.NewJudge{Name: Judge, Provider: "openai", Model: "m"})
	if err != nil {
		return nil, err
	}
	run, err := db.CreateRun(ctx, nil, store.NewRun{JudgeID: j.ID, ProjectID: p.ID})
	if err != nil {
		return nil, err
	}
	lo, hi, err := db.ItemIDRange(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	for id := lo; id <= hi; id++ {
		it, err := db.FindItem(ctx, p.ID, id)
		if err != nil {
			return nil, err
		}
		a := answers[it.SourceID]
		var ls []store.JudgeLabel
		for _, ri := range def.Items {
			ls = append(ls, store.JudgeLabel{Key: ri.Key, Value: a.value, Method: "structured", PromptHash: "ph", Distribution: a.dist, Samples: []string{a.value}})
		}
		if _, _, err := db.WriteJudgeAnswers(ctx, run, it.ID, ls, 10); err != nil {
			return nil, err
		}
	}
	return p, nil
}
