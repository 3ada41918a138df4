package evaluation

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/attune/attune/internal/agreement"
	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

// TrustRouter is what trust routing needs of the database; *store.DB
// satisfies it.
type TrustRouter interface {
	TrustSource
	FindProjectByID(ctx context.Context, id int64) (*attune.Project, error)
	FindRubricByID(ctx context.Context, id int64) (*rubric.Definition, error)
	TrustRaterOf(ctx context.Context, projectID int64, judge string) (int64, string, error)
	FindTrustSetting(ctx context.Context, projectID, raterID int64) (store.TrustSetting, error)
	SetTrust(ctx context.Context, actorID *int64, projectID, raterID int64, o agreement.TrustOptions, enabled bool) (store.TrustSetting, error)
	RouteTrust(ctx context.Context, actorID *int64, projectID, raterID int64, routes []store.TrustRoute) (store.TrustRouted, error)
	ListTrustRoutes(ctx context.Context, projectID int64, decision string, limit int) ([]store.TrustRouteRow, int, int, error)
}

// TrustSettingJSON is a judge's trust routing setting as the API and
// the command line show it.
type TrustSettingJSON struct {
	Judge     string     `json:"judge"`
	RaterID   int64      `json:"rater_id"`
	Target    float64    `json:"target"`
	Alpha     float64    `json:"alpha"`
	On        bool       `json:"on"`
	Set       bool       `json:"set"` // false: the lead has set nothing, the terms are the defaults
	UpdatedBy string     `json:"updated_by,omitempty"`
	UpdatedAt *time.Time `json:"updated_at,omitempty"`
	RoutedAt  *time.Time `json:"routed_at,omitempty"`
}

// TrustRouting is a judge's trust routing in a project: the setting, the
// rule calibrated at its terms on every rubric item (each with its
// threshold, coverage and whether a guarantee was found), and where
// routing left the items. Guaranteed is true when every rubric item has a
// threshold; only then does routing keep or escalate anything, and
// Reason says otherwise why not. Routed is what the last call that
// routed did, nil when this call did not route. Kept and Escalated count
// the items routing left so, and Routes lists some of them.
type TrustRouting struct {
	Setting    TrustSettingJSON   `json:"setting"`
	Criteria   []TrustResult      `json:"criteria"`
	Guaranteed bool               `json:"guaranteed"`
	Reason     string             `json:"reason,omitempty"`
	Routed     *store.TrustRouted `json:"routed,omitempty"`
	Kept       int                `json:"kept"`
	Escalated  int                `json:"escalated"`
	Routes     []TrustRouteJSON   `json:"routes"`
	routes     []store.TrustRoute // the decisions, for RouteTrust
}

// TrustRouteJSON is one routed item.
type TrustRouteJSON struct {
	Item     string `json:"item"`
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
}

// TrustChange is a lead's change to a judge's trust routing: the terms
// (0 keeps the stored one, or the default) and on or off.
type TrustChange struct {
	ProjectID int64
	ActorID   *int64
	Judge     string
	Target    float64
	Alpha     float64
	On        bool
}

// routesShown is how many routed items a status lists.
const routesShown = 50

// TrustStatus reads a judge's trust routing in the project: the setting
// (the defaults when the lead has set none) and the rule calibrated at
// its terms on every rubric item. It routes nothing.
func TrustStatus(ctx context.Context, db TrustRouter, projectID int64, judgeName string) (TrustRouting, error) {
	rater, name, s, err := trustSetting(ctx, db, projectID, judgeName)
	if err != nil {
		return TrustRouting{}, err
	}
	return trustPlan(ctx, db, projectID, rater, name, s)
}

// SetTrustRouting stores a lead's change and, when routing is on, routes
// at once (RouteTrust): turning it on sends the items below the
// threshold to people and lets the judge's answers stand on the rest.
// Turning it off gives back what routing kept.
func SetTrustRouting(ctx context.Context, db TrustRouter, c TrustChange) (TrustRouting, error) {
	if c.Judge == "" {
		return TrustRouting{}, attune.Invalid(FieldJudge, "name the judge: a rater id or a judge's name")
	}
	rater, _, old, err := trustSetting(ctx, db, c.ProjectID, c.Judge)
	if err != nil {
		return TrustRouting{}, err
	}
	o := agreement.TrustOptions{Target: old.Target, Alpha: old.Alpha}
	if c.Target != 0 {
		o.Target = c.Target
	}
	if c.Alpha != 0 {
		o.Alpha = c.Alpha
	}
	if _, err := db.SetTrust(ctx, c.ActorID, c.ProjectID, rater, o, c.On); err != nil {
		return TrustRouting{}, err
	}
	if c.On {
		return RouteTrust(ctx, db, c.ProjectID, c.Judge, c.ActorID)
	}
	return TrustStatus(ctx, db, c.ProjectID, c.Judge)
}

// RouteTrust calibrates the judge's rule again on the human labels there
// are now and routes every item the judge answered and no person has:
// the recompute a lead asks for when more human labels have come in, or
// more judge answers. When some rubric item has no guaranteed threshold,
// nothing is kept or escalated (what routing kept before is given back).
// Routing must be on for the judge (otherwise attune.ErrConflict).
func RouteTrust(ctx context.Context, db TrustRouter, projectID int64, judgeName string, actorID *int64) (TrustRouting, error) {
	rater, name, s, err := trustSetting(ctx, db, projectID, judgeName)
	if err != nil {
		return TrustRouting{}, err
	}
	plan, err := trustPlan(ctx, db, projectID, rater, name, s)
	if err != nil {
		return TrustRouting{}, err
	}
	routes := plan.routes
	if !plan.Guaranteed {
		routes = nil
	}
	done, err := db.RouteTrust(ctx, actorID, projectID, rater, routes)
	if err != nil {
		return TrustRouting{}, err
	}
	out, err := TrustStatus(ctx, db, projectID, judgeName)
	out.Routed = &done
	return out, err
}

// trustSetting resolves the judge and reads its setting; with none, the
// defaults, off.
func trustSetting(ctx context.Context, db TrustRouter, projectID int64, judgeName string) (int64, string, TrustSettingJSON, error) {
	if judgeName == "" {
		return 0, "", TrustSettingJSON{}, attune.Invalid(FieldJudge, "name the judge: a rater id or a judge's name")
	}
	rater, name, err := db.TrustRaterOf(ctx, projectID, judgeName)
	if err != nil {
		return 0, "", TrustSettingJSON{}, err
	}
	out := TrustSettingJSON{Judge: name, RaterID: rater, Target: DefaultTrustTarget, Alpha: DefaultTrustAlpha}
	s, err := db.FindTrustSetting(ctx, projectID, rater)
	switch {
	case err == nil:
		out.Target, out.Alpha, out.On, out.Set, out.UpdatedBy, out.RoutedAt = s.Target, s.Alpha, s.Enabled, true, s.UpdatedBy, s.RoutedAt
		out.UpdatedAt = &s.UpdatedAt
	case !isNotFound(err):
		return 0, "", out, err
	}
	return rater, name, out, nil
}

// judgeAnswer is the judge's answer on one rubric item of an item no
// person labelled, and its confidence (ok false when none was recorded).
type judgeAnswer struct {
	value      string
	confidence float64
	ok         bool
}

// trustPlan calibrates every rubric item at the setting's terms and
// decides each item only the judge answered: kept when its confidence is
// at or above the threshold on every rubric item, else escalated with
// the rubric items that fell short.
func trustPlan(ctx context.Context, db TrustRouter, projectID, rater int64, name string, s TrustSettingJSON) (TrustRouting, error) {
	p, err := db.FindProjectByID(ctx, projectID)
	if err != nil {
		return TrustRouting{}, err
	}
	def, err := db.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return TrustRouting{}, err
	}
	out := TrustRouting{Setting: s, Guaranteed: true, Routes: []TrustRouteJSON{}}
	judgeID := fmt.Sprint(rater)
	answers := map[int64]map[string]judgeAnswer{}
	var order []int64
	var short []string
	for _, it := range def.Items {
		rows, err := db.TrustRows(ctx, projectID, judgeID, it.Key)
		if err != nil {
			return TrustRouting{}, err
		}
		res, err := calibrate(rows, TrustQuery{ProjectID: projectID, Judge: judgeID, RubricItem: it.Key, Target: s.Target, Alpha: s.Alpha})
		if err != nil {
			return TrustRouting{}, err
		}
		out.Criteria = append(out.Criteria, res)
		if !res.Found {
			out.Guaranteed = false
			short = append(short, it.Key+": "+res.Reason)
		}
		for _, r := range rows {
			if len(r.People) > 0 {
				continue
			}
			if answers[r.ItemID] == nil {
				answers[r.ItemID] = map[string]judgeAnswer{}
				order = append(order, r.ItemID)
			}
			c, ok := judge.Confidence(rubric.Value(r.Judge), r.Distribution, r.Samples)
			answers[r.ItemID][it.Key] = judgeAnswer{value: r.Judge, confidence: c, ok: ok}
		}
	}
	if !out.Guaranteed {
		out.Reason = "no threshold is guaranteed on " + strings.Join(short, "; ") + ": routing keeps nothing and every item stays with people"
	}
	for _, id := range order {
		route := store.TrustRoute{ItemID: id, Gold: map[string]string{}, Notes: map[string]string{}}
		var why []string
		for i, it := range def.Items {
			a, answered := answers[id][it.Key]
			t := out.Criteria[i]
			switch {
			case !answered:
				why = append(why, fmt.Sprintf("the judge gave no answer on %s", it.Key))
			case !a.ok:
				why = append(why, fmt.Sprintf("the judge recorded no certainty on %s", it.Key))
			case !t.Found:
				why = append(why, fmt.Sprintf("no threshold is guaranteed on %s", it.Key))
			case !t.Keeps(a.confidence):
				why = append(why, fmt.Sprintf("confidence %.3g on %s is below the threshold %.3g", a.confidence, it.Key, t.Threshold))
			default:
				route.Gold[it.Key] = a.value
				route.Notes[it.Key] = fmt.Sprintf("trusted judge %s: confidence %.3g, threshold %.3g", name, a.confidence, t.Threshold)
			}
		}
		route.Kept = len(why) == 0
		if route.Kept {
			route.Reason = fmt.Sprintf("the judge's confidence is at or above the threshold on every rubric item (target %.3g, alpha %.3g)", s.Target, s.Alpha)
		} else {
			route.Gold, route.Notes = nil, nil
			route.Reason = strings.Join(why, "; ")
		}
		out.routes = append(out.routes, route)
	}
	rows, kept, escalated, err := db.ListTrustRoutes(ctx, projectID, "", routesShown)
	if err != nil {
		return TrustRouting{}, err
	}
	out.Kept, out.Escalated = kept, escalated
	for _, r := range rows {
		out.Routes = append(out.Routes, TrustRouteJSON{Item: r.SourceID, Decision: r.Decision, Reason: r.Reason})
	}
	return out, nil
}

func isNotFound(err error) bool { return errors.Is(err, attune.ErrNotFound) }
