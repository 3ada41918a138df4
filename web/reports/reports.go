package reports

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"

	"github.com/attune/attune/internal/agreement"
	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dataset"
	"github.com/attune/attune/internal/importer"
	"github.com/attune/attune/internal/report"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/web/kit"
	rview "github.com/attune/attune/web/views/report"
)

// maxReplicates bounds the bootstrap replicates a request may ask for: a
// report's time grows with them.
const maxReplicates = 2000

func reportPath(projectID int64) string { return fmt.Sprintf("/projects/%d/report", projectID) }

// reportRequest is a report asked for in a URL's query: the options for
// report.Build and, for the page, what the filter form shows.
type reportRequest struct {
	opts    report.Options
	raters  []store.ProjectRater
	query   url.Values // the filters only, to carry into links
	filters rview.Filters
	// readFrom says where the report read its labels (heavyReads).
	readFrom string
}

// readReportQuery reads the filters from the query. With filter=1 (the
// form was sent) the annotator and judge lists are exactly the boxes
// ticked; without it every rater is in. Bad values are attune.ErrInvalid,
// on the parameter's name.
func (s *Handler) readReportQuery(r *http.Request, p *attune.Project, q url.Values) (*reportRequest, error) {
	raters, err := s.DB.ListProjectRaters(r.Context(), p.ID)
	if err != nil {
		return nil, err
	}
	rr := &reportRequest{raters: raters, query: url.Values{}}
	rr.opts.Bootstrap = report.DefaultBootstrap
	// The project's ε, chosen by who its annotators are, unless the URL
	// asks for another.
	// The project's ε is the lead's own setting: an unusual one is used,
	// and marked.
	rr.opts.Alt.Epsilon, rr.opts.Alt.AllowUnusualEpsilon = p.Epsilon, true
	if rr.opts.Alt.Epsilon == 0 {
		rr.opts.Alt.Epsilon = report.DefaultEpsilon
	}
	f := &rr.filters
	f.Action = reportURL(p.ID, nil)
	form := q.Get("filter") != ""
	picked := func(name string) ([]int64, error) {
		if !form {
			return nil, nil
		}
		ids := []int64{}
		for _, v := range q[name] {
			id, err := strconv.ParseInt(v, 10, 64)
			if err != nil || id <= 0 {
				return nil, attune.Invalid(name, fmt.Sprintf("%q is not a rater", v))
			}
			ids = append(ids, id)
		}
		return ids, nil
	}
	if rr.opts.Annotators, err = picked("annotator"); err != nil {
		return nil, err
	}
	if rr.opts.Judges, err = picked("judge"); err != nil {
		return nil, err
	}
	if form {
		rr.query.Set("filter", "1")
		for _, id := range rr.opts.Annotators {
			rr.query.Add("annotator", strconv.FormatInt(id, 10))
		}
		for _, id := range rr.opts.Judges {
			rr.query.Add("judge", strconv.FormatInt(id, 10))
		}
	}
	for _, pr := range raters {
		c := rview.Check{Value: strconv.FormatInt(pr.ID, 10), Label: kit.RaterLabel(pr.Name, pr.Kind, !pr.Account), Checked: true}
		if pr.Kind == "judge" {
			c.Name = "judge"
			c.Checked = rr.opts.Judges == nil || slices.Contains(rr.opts.Judges, pr.ID)
			f.Judges = append(f.Judges, c)
		} else {
			c.Name = "annotator"
			c.Checked = rr.opts.Annotators == nil || slices.Contains(rr.opts.Annotators, pr.ID)
			f.Annotators = append(f.Annotators, c)
		}
	}
	if v := q.Get("rubric"); v != "" {
		rr.opts.Rubric = v
		rr.query.Set("rubric", v)
	}
	f.Rubrics = []rview.Option{{Value: p.RubricRef, Label: p.RubricRef + " (the project's)", Selected: true}}
	for _, end := range []struct {
		name string
		plus int
		dst  *time.Time
		show *string
	}{{"from", 0, &rr.opts.From, &f.From}, {"to", 1, &rr.opts.To, &f.To}} {
		v := strings.TrimSpace(q.Get(end.name))
		if v == "" {
			continue
		}
		t, err := time.Parse("2006-01-02", v)
		if err != nil {
			return nil, attune.Invalid(end.name, fmt.Sprintf("%q is not a day written YYYY-MM-DD", v))
		}
		*end.dst, *end.show = t.AddDate(0, 0, end.plus), v
		rr.query.Set(end.name, v)
	}
	switch q.Get("na") {
	case "", "category":
	case "missing":
		rr.opts.NAMissing, f.NAMissing = true, true
		rr.query.Set("na", "missing")
	default:
		return nil, attune.Invalid("na", "choose category or missing")
	}
	if v := q.Get("replicates"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxReplicates {
			return nil, attune.Invalid("replicates", fmt.Sprintf("give a whole number of replicates from 0 to %d", maxReplicates))
		}
		rr.opts.Bootstrap.Replicates = n
		rr.query.Set("replicates", v)
	}
	// alt_unusual_epsilon=1 accepts an ε outside 0.05 to 0.3 asked for in
	// the URL; alt_allow_few=1 gives a verdict on one or two annotators.
	unusual, few := q.Get("alt_unusual_epsilon"), q.Get("alt_allow_few")
	for name, v := range map[string]string{"alt_unusual_epsilon": unusual, "alt_allow_few": few} {
		switch v {
		case "":
		case "1":
			rr.query.Set(name, v)
		default:
			return nil, attune.Invalid(name, "give 1 to ask for it, or leave it out")
		}
	}
	rr.opts.Alt.AllowFewHumans = few == "1"
	f.AltUnusualEpsilon, f.AltAllowFew = unusual == "1", few == "1"
	if v := strings.TrimSpace(q.Get("epsilon")); v != "" {
		e, err := strconv.ParseFloat(v, 64)
		if err != nil {
			e = math.NaN()
		}
		// The project's own ε, sent back by the form, is allowed as it is.
		allow := unusual == "1" || e == p.Epsilon
		if msg := agreement.AltEpsilonProblem(e, allow); msg != "" {
			return nil, attune.Invalid("epsilon", msg+" (alt_unusual_epsilon=1).")
		}
		rr.opts.Alt.Epsilon, rr.opts.Alt.AllowUnusualEpsilon = e, allow
		rr.query.Set("epsilon", v)
	}
	if v := strings.TrimSpace(q.Get("alt_min_items")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 2 || n > 1_000_000 {
			return nil, attune.Invalid("alt_min_items", "give the least items per annotator as a whole number, 2 or more")
		}
		rr.opts.Alt.MinItems = n
		rr.query.Set("alt_min_items", v)
	}
	switch v := q.Get("alt_scoring"); v {
	case "":
	case "accuracy", "neg_rmse":
		rr.opts.Alt.Scoring = v
		rr.query.Set("alt_scoring", v)
	default:
		return nil, attune.Invalid("alt_scoring", "choose accuracy or neg_rmse")
	}
	if v := q.Get("estimate_judge"); v != "" {
		rr.opts.EstimateJudge = v
		rr.query.Set("estimate_judge", v)
	}
	switch v := q.Get("level"); v {
	case "":
	case "nominal", "ordinal", "interval", "ratio":
		rr.opts.Level = v
		rr.query.Set("level", v)
	default:
		return nil, attune.Invalid("level", "choose nominal, ordinal, interval or ratio")
	}
	f.Epsilon = epsilonOptions(rr.opts.Alt.Epsilon, p.Epsilon)
	f.AltScoring = choices(rr.opts.Alt.Scoring, [][2]string{{"", "by item (default)"}, {"accuracy", "accuracy"}, {"neg_rmse", "negative RMSE"}})
	f.Level = choices(rr.opts.Level, [][2]string{{"", "by item (default)"}, {"nominal", "nominal"}, {"ordinal", "ordinal"}, {"interval", "interval"}, {"ratio", "ratio"}})
	f.Summary = filterSummary(rr.opts, f)
	return rr, nil
}

// filterSummary says in a line what the filters keep, so that the closed
// filter bar tells what the figures below cover: "All raters · all dates
// · NA an answer · ε 0.15".
func filterSummary(o report.Options, f *rview.Filters) string {
	kept := func(cs []rview.Check) int {
		n := 0
		for _, c := range cs {
			if c.Checked {
				n++
			}
		}
		return n
	}
	var parts []string
	na, nj := kept(f.Annotators), kept(f.Judges)
	if na == len(f.Annotators) && nj == len(f.Judges) {
		parts = append(parts, "All raters")
	} else {
		parts = append(parts, fmt.Sprintf("%d of %d annotators", na, len(f.Annotators)),
			fmt.Sprintf("%d of %d judges", nj, len(f.Judges)))
	}
	switch {
	case f.From != "" && f.To != "":
		parts = append(parts, "labels from "+f.From+" to "+f.To)
	case f.From != "":
		parts = append(parts, "labels from "+f.From)
	case f.To != "":
		parts = append(parts, "labels up to "+f.To)
	default:
		parts = append(parts, "all dates")
	}
	if f.NAMissing {
		parts = append(parts, "NA missing")
	} else {
		parts = append(parts, "NA an answer")
	}
	parts = append(parts, "ε "+strconv.FormatFloat(o.Alt.Epsilon, 'f', -1, 64))
	if o.Alt.Scoring != "" {
		parts = append(parts, "alt-test by "+o.Alt.Scoring)
	}
	if o.Level != "" {
		parts = append(parts, o.Level+" α")
	}
	return strings.Join(parts, " · ")
}

// epsilonOptions are the ε a lead chooses from, by who the annotators are
// (attune.AnnotatorPools), with e selected and the project's own ε marked;
// an ε, the project's or the URL's, that is none of them is offered as
// well.
func epsilonOptions(e, project float64) []rview.Option {
	var opts []rview.Option
	seen := map[float64]bool{}
	add := func(v float64, label string) {
		if seen[v] {
			return
		}
		seen[v] = true
		if v == project {
			label += ", the project's"
		}
		opts = append(opts, rview.Option{Value: strconv.FormatFloat(v, 'f', -1, 64), Label: label, Selected: v == e})
	}
	for _, pool := range attune.AnnotatorPools {
		add(pool.Epsilon, fmt.Sprintf("%s (ε %s)", pool.Label, strconv.FormatFloat(pool.Epsilon, 'f', -1, 64)))
	}
	for _, v := range []float64{project, e} {
		if v > 0 {
			add(v, "ε "+strconv.FormatFloat(v, 'f', -1, 64))
		}
	}
	return opts
}

// choices turns (value, label) pairs into options with cur selected.
func choices(cur string, list [][2]string) []rview.Option {
	out := make([]rview.Option, len(list))
	for i, c := range list {
		out[i] = rview.Option{Value: c[0], Label: c[1], Selected: c[0] == cur}
	}
	return out
}

// reportURL is the report page's URL with the given query.
func reportURL(projectID int64, q url.Values) templ.SafeURL {
	u := reportPath(projectID)
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return templ.SafeURL(u)
}

// buildReport checks access (leads and admins) and builds the report the
// query asks for, for the pages and the API alike.
// The report reads the replica while it keeps up; rr.readFrom says so.
func (s *Handler) buildReport(r *http.Request, u *attune.User) (*attune.Project, *reportRequest, *report.Report, error) {
	p, err := s.APILeadProject(r, u, "read its agreement report")
	if err != nil {
		return nil, nil, nil, err
	}
	rr, err := s.readReportQuery(r, p, r.URL.Query())
	if err != nil {
		return nil, nil, nil, err
	}
	db, readFrom := s.HeavyReads(r)
	rr.readFrom = readFrom
	rep, err := report.Build(r.Context(), db, p, rr.opts)
	if err != nil {
		return nil, nil, nil, err
	}
	return p, rr, rep, nil
}

// ReportPage is the report. A filter it cannot read is left out: the page
// shows the report without it, the message beside the filter's field in
// the opened filter bar, with 422 for the query that was refused.
func (s *Handler) ReportPage(w http.ResponseWriter, r *http.Request) error {
	p, err := s.APILeadProject(r, kit.UserFrom(r.Context()), "read its agreement report")
	if err != nil {
		return err
	}
	rr, problems, err := kit.ReadLeniently(r.URL.Query(), func(q url.Values) (*reportRequest, error) { return s.readReportQuery(r, p, q) })
	if err != nil {
		return err
	}
	db, readFrom := s.HeavyReads(r)
	rr.readFrom = readFrom
	rep, err := report.Build(r.Context(), db, p, rr.opts)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if len(problems) > 0 {
		status = http.StatusUnprocessableEntity
		rr.filters.Errors = problems
	}
	s.Render(w, r, status, rview.View(s.reportView(r, p, rr, rep)))
	return nil
}

// ReportJSON writes the report as JSON, as a download.
func (s *Handler) ReportJSON(w http.ResponseWriter, r *http.Request) error {
	p, rr, rep, err := s.buildReport(r, kit.UserFrom(r.Context()))
	if err != nil {
		return err
	}
	reportDownload(w, "application/json; charset=utf-8", reportFileName(p.Name, "json"), rr.readFrom)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		// The status is sent: the client sees a cut file.
		s.Log.ErrorContext(r.Context(), "write report", "request_id", kit.InfoFrom(r.Context()).ID, "err", err)
	}
	return nil
}

// APIReport is the report as JSON for a token, with the page's query
// parameters: the same figures as report.json.
func (s *Handler) APIReport(r *http.Request, u *attune.User) (int, any, error) {
	_, _, rep, err := s.buildReport(r, u)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, rep, nil
}

// ReportCSV writes the report as CSV, one row per figure (see
// report.CSVHeader), as a download.
func (s *Handler) ReportCSV(w http.ResponseWriter, r *http.Request) error {
	p, rr, rep, err := s.buildReport(r, kit.UserFrom(r.Context()))
	if err != nil {
		return err
	}
	reportDownload(w, "text/csv; charset=utf-8", reportFileName(p.Name, "csv"), rr.readFrom)
	if err := rep.WriteCSV(w); err != nil {
		s.Log.ErrorContext(r.Context(), "write report", "request_id", kit.InfoFrom(r.Context()).ID, "err", err)
	}
	return nil
}

func reportDownload(w http.ResponseWriter, contentType, name, readFrom string) {
	h := w.Header()
	if readFrom != "" {
		h.Set(kit.ReadFromHeader, readFrom)
	}
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
}

// reportFileName is a download's file name: the project's name reduced to
// letters, digits and dashes.
func reportFileName(project, ext string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(project) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-")
	if name == "" {
		name = "project"
	}
	return name + "-agreement." + ext
}

// ImportLabels stores an uploaded labels file in the project, streaming it
// part by part as the dataset import does, and goes back to the report; a
// refused file shows its problems with the form again.
func (s *Handler) ImportLabels(w http.ResponseWriter, r *http.Request) error {
	p, _, err := s.ProjectAccess(r, true)
	if err != nil {
		return err
	}
	ctx := r.Context()
	r.Body = http.MaxBytesReader(w, r.Body, s.MaxUpload())
	refuse := func(status int, source string, err error, message string) error {
		page := rview.ImportPage{
			Chrome:      s.Chrome(r, "Import labels", "home"),
			ProjectName: p.Name, ProjectURL: templ.SafeURL(kit.ProjectPath(p.ID)), ReportURL: reportURL(p.ID, nil),
			Source: source, Message: message, Form: labelsImportForm(p.ID),
		}
		var le *attune.LineErrors
		if errors.As(err, &le) {
			for _, l := range le.Errors {
				page.Lines = append(page.Lines, rview.ImportLine{Line: l.Line, Field: l.Field, Message: l.Message})
			}
			page.More = le.More
		} else if err != nil {
			page.Message = kit.PublicText(err)
		}
		s.Render(w, r, status, rview.Import(page))
		return nil
	}
	var res store.LabelsImportResult
	var source string
	// The form puts the checkbox before the file: the upload is read in
	// order, and the file is stored as it streams.
	fields := map[string]string{"confirm_warnings": ""}
	err = kit.ReadUpload(r, s.MaxUpload(), fields, func(name string, file io.Reader) error {
		source = name
		var err error
		res, err = importer.ImportLabels(ctx, s.DB, p, file, store.LabelsImportOptions{ActorID: &kit.UserFrom(ctx).ID, Source: name,
			ConfirmWarnings: fields["confirm_warnings"] != ""})
		return err
	})
	var refused *kit.UploadRefused
	if errors.As(err, &refused) {
		return refuse(refused.Status, refused.Source, refused.Err, refused.Message)
	}
	if err != nil {
		return err
	}
	s.Flash(ctx, fmt.Sprintf("Imported %d %s in %d answer %s from %s (%d new %s, %d new %s).",
		res.Labels, kit.Plural(res.Labels, "label", "labels"), res.AnswerSets, kit.Plural(res.AnswerSets, "set", "sets"), source,
		res.People, kit.Plural(res.People, "person", "people"), res.Judges, kit.Plural(res.Judges, "judge", "judges")))
	http.Redirect(w, r, reportPath(p.ID), http.StatusSeeOther)
	return nil
}

func labelsImportForm(projectID int64) rview.ImportForm {
	return rview.ImportForm{Action: templ.SafeURL(fmt.Sprintf("/projects/%d/labels/import", projectID)), Header: dataset.LabelsHeader}
}

// APIImportLabels imports a labels file (CSV, item,rater,rater_kind,
// rubric_item,value[,rationale]) into the project (its leads), as the
// report's import page does: all or nothing, every answer set checked by
// the rubric; ?confirm_warnings=true stores people's sets the rubric only
// warns about. 200 with what it stored, or 422 with the lines at fault.
func (s *Handler) APIImportLabels(r *http.Request, u *attune.User) (int, any, error) {
	p, err := s.APILeadProject(r, u, "import its labels")
	if err != nil {
		return 0, nil, err
	}
	confirm := r.URL.Query().Get("confirm_warnings")
	if confirm != "" && confirm != "true" && confirm != "false" {
		return 0, nil, attune.Invalid("confirm_warnings", "use true or false")
	}
	limit := s.MaxUpload()
	if r.ContentLength > limit {
		return 0, nil, &kit.TooLarge{What: "file", Limit: limit}
	}
	res, err := importer.ImportLabels(r.Context(), s.DB, p, http.MaxBytesReader(nil, r.Body, limit),
		store.LabelsImportOptions{ActorID: &u.ID, Source: "api", ConfirmWarnings: confirm == "true"})
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return 0, nil, &kit.TooLarge{What: "file", Limit: limit}
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]int{"labels": res.Labels, "answer_sets": res.AnswerSets, "people": res.People, "judges": res.Judges}, nil
}
