// Package adjudication is the one flow of a project's gold for every
// adapter: the gold pages, the JSON API and the command line call
// ApplyConsensus, Adjudicate and SetMaxSpread, so that each refuses the
// same input with the same verdict and message and stores the same rows.
// The rules stay in the pure packages: the consensus rule and the limits
// of the maximum spread and the note (package gold), the rubric's checks
// (rubric.Definition.Validate); the flow reads what they need once, calls
// them, and stores through one store call.
package adjudication

import (
	"context"
	"fmt"
	"strings"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/gold"
	"github.com/attune/attune/internal/labeling"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

// Store is what the flow needs of the database; *store.DB satisfies it.
type Store interface {
	FindItem(ctx context.Context, projectID, itemID int64) (*attune.Item, error)
	FindRubricByID(ctx context.Context, id int64) (*rubric.Definition, error)
	ItemAnswerSets(ctx context.Context, projectID, itemID int64) ([]store.ItemAnswerSet, error)
	GoldMaxSpread(ctx context.Context, projectID int64) (int, error)
	SetGoldMaxSpread(ctx context.Context, actorID *int64, projectID int64, spread int) error
	ApplyConsensus(ctx context.Context, projectID int64, opts store.ConsensusOptions) (store.ConsensusResult, error)
	Adjudicate(ctx context.Context, a store.Adjudication) error
}

// Flow applies the consensus rule and stores a lead's gold.
type Flow struct{ db Store }

// New returns the flow over db.
func New(db Store) *Flow { return &Flow{db: db} }

// Problems is gold the rubric refuses, or that needs the lead to confirm
// the rubric's warnings first; it is the labeling flow's type, so that
// every adapter shows it as it shows a person's refused labels. It
// matches attune.ErrInvalid.
type Problems = labeling.Problems

// SpreadField is the field a refused maximum spread is named by.
const SpreadField = "max_spread"

// spreadMessage is gold.SpreadProblem as every adapter shows it: under the
// field on the page, as the field's message by the API, after the flag's
// name on the command line.
func spreadMessage(problem string) string { return sentence(problem) }

// sentence is a pure package's problem ("enter …") as a message.
func sentence(problem string) string {
	return strings.ToUpper(problem[:1]) + problem[1:] + "."
}

// ParseMaxSpread reads a maximum spread as typed (the page's field, the
// command's flag): the number, or an attune.ErrInvalid error on
// SpreadField in the words SetMaxSpread refuses it with.
func ParseMaxSpread(typed string) (int, error) {
	n, problem := gold.ParseMaxSpread(typed)
	if problem != "" {
		return 0, attune.Invalid(SpreadField, spreadMessage(problem))
	}
	return n, nil
}

// Consensus is what applying the consensus rule did, with the maximum
// spread it applied.
type Consensus struct {
	store.ConsensusResult
	MaxSpread int
	// SpreadSet is true when SetMaxSpread set MaxSpread first.
	SpreadSet bool
}

// Message says what the rule did, as the page's notice and the command's
// output both say it.
func (c Consensus) Message() string {
	msg := "The consensus rule had nothing new to judge."
	if c.Items > 0 {
		msg = fmt.Sprintf("The consensus rule judged %d %s: %d got gold by the rule, %d %s for a lead.",
			c.Items, plural(c.Items, "item", "items"), c.Automatic, c.Queued, plural(c.Queued, "waits", "wait"))
	}
	if c.SpreadSet {
		msg = fmt.Sprintf("The maximum spread is %d. %s", c.MaxSpread, msg)
	}
	return msg
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// ApplyConsensus applies the project's consensus rule to the items it has
// not judged as they are now (store.DB.ApplyConsensus), or with all to
// every item with complete labels again. actorID is who asked, nil from
// the command line.
func (f *Flow) ApplyConsensus(ctx context.Context, projectID int64, actorID *int64, all bool) (Consensus, error) {
	res, err := f.db.ApplyConsensus(ctx, projectID, store.ConsensusOptions{ActorID: actorID, All: all})
	if err != nil {
		return Consensus{}, err
	}
	spread, err := f.db.GoldMaxSpread(ctx, projectID)
	if err != nil {
		return Consensus{}, err
	}
	return Consensus{ConsensusResult: res, MaxSpread: spread}, nil
}

// SetMaxSpread sets the project's maximum spread and applies the rule
// again under it (ApplyConsensus). A spread outside 0 to
// gold.MaxSpreadLimit is an attune.ErrInvalid error on SpreadField and
// changes nothing.
func (f *Flow) SetMaxSpread(ctx context.Context, projectID int64, actorID *int64, spread int, all bool) (Consensus, error) {
	if problem := gold.SpreadProblem(spread); problem != "" {
		return Consensus{}, attune.Invalid(SpreadField, spreadMessage(problem))
	}
	if err := f.db.SetGoldMaxSpread(ctx, actorID, projectID, spread); err != nil {
		return Consensus{}, err
	}
	c, err := f.ApplyConsensus(ctx, projectID, actorID, all)
	c.SpreadSet = err == nil
	return c, err
}

// Input is a lead's gold for one item, as the adjudication page and the
// API both receive it. The flow cleans it as a person's labels are
// cleaned (labeling.CleanAnswers, labeling.CleanNote).
type Input struct {
	Answers map[string]string // rubric item key → value
	Note    string
	// AcceptConsensus takes the consensus on every rubric item that has
	// one.
	AcceptConsensus bool
	ConfirmWarnings bool
}

// Gold is a lead's gold for an item as the flow checked it: the item, the
// answers cleaned and with any accepted consensus filled in, the note
// cleaned.
type Gold struct {
	Item    *attune.Item
	Answers map[string]string
	Note    string
}

// Adjudicate stores a lead's gold for an item: every rubric item answered
// with a value the rubric allows there, checked with the item's facts as a
// person's answers are (NA is refused where the rubric forbids it), the
// note within gold.MaxNote; the rubric's warnings need confirming.
// Accepting the consensus fills in the consensus of every rubric item that
// has one. Gold refused or awaiting confirmation is a *Problems and stores
// nothing; the Gold returned with it is what was checked, for a form to
// show again.
func (f *Flow) Adjudicate(ctx context.Context, p *attune.Project, actorID, itemID int64, in Input) (Gold, error) {
	item, err := f.db.FindItem(ctx, p.ID, itemID)
	if err != nil {
		return Gold{}, err
	}
	def, err := f.db.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return Gold{}, err
	}
	facts := labeling.FactsOf(item)
	decision, err := f.Decision(ctx, p.ID, def, facts, itemID)
	if err != nil {
		return Gold{}, err
	}
	answers, note := labeling.CleanAnswers(in.Answers), labeling.CleanNote(in.Note)
	checked := Gold{Item: item, Answers: answers, Note: note}
	if in.AcceptConsensus {
		for _, ic := range decision.Items {
			if ic.Decided {
				answers[ic.Key] = string(ic.Value)
			}
		}
	}
	issues := def.Validate(toAnswers(answers), facts, rubric.Options{})
	if problem := gold.NoteProblem(note); problem != "" {
		issues = append(issues, rubric.Issue{Item: "note", Severity: rubric.Blocking, Message: sentence(problem)})
	}
	switch verdict, shown := issues.Verdict(in.ConfirmWarnings); verdict {
	case rubric.Refused:
		return checked, &Problems{Issues: shown}
	case rubric.NeedsConfirmation:
		return checked, &Problems{Issues: shown, NeedsConfirm: true}
	}
	var accepted []string
	for _, ic := range decision.Items {
		if ic.Decided && answers[ic.Key] == string(ic.Value) {
			accepted = append(accepted, ic.Key)
		}
	}
	return checked, f.db.Adjudicate(ctx, store.Adjudication{ProjectID: p.ID, ItemID: itemID, ActorID: actorID,
		Answers: answers, Accepted: accepted, Note: note})
}

// Decision applies the consensus rule to an item's people's answers as
// they are now, under the project's maximum spread: what the rule would
// say, whether or not it last judged the item. def and facts are the
// project's rubric and the item's facts, read by the caller.
func (f *Flow) Decision(ctx context.Context, projectID int64, def *rubric.Definition, facts rubric.Facts, itemID int64) (gold.Decision, error) {
	sets, err := f.db.ItemAnswerSets(ctx, projectID, itemID)
	if err != nil {
		return gold.Decision{}, err
	}
	spread, err := f.db.GoldMaxSpread(ctx, projectID)
	if err != nil {
		return gold.Decision{}, err
	}
	return gold.Decide(def, facts, HumanAnswers(sets), spread), nil
}

// HumanAnswers are the people's answer sets of an item: the votes of the
// consensus.
func HumanAnswers(sets []store.ItemAnswerSet) []rubric.Answers {
	var out []rubric.Answers
	for _, a := range sets {
		if a.Kind == "human" {
			out = append(out, toAnswers(a.Answers))
		}
	}
	return out
}

func toAnswers(m map[string]string) rubric.Answers {
	out := make(rubric.Answers, len(m))
	for k, v := range m {
		out[k] = rubric.Value(v)
	}
	return out
}
