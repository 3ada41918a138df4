package judging

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/a-h/templ"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/web/kit"
	judgeview "github.com/attune/attune/web/views/judge"
)

// readJudgeForm reads the judge form and checks it by the rules every path
// shares (parseJudge), returning what to show again (never a value
// refused as a secret), the judge to store, and a message per bad field.
func (s *Handler) readJudgeForm(r *http.Request) (judgeview.Form, store.NewJudge, map[string]string) {
	v := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	f := judgeview.Form{
		Name: v("name"), Provider: v("provider"), BaseURL: v("base_url"), Model: v("model"), KeyEnv: v("key_env"),
		Temperature: v("temperature"), MaxTokens: v("max_tokens"), Samples: v("samples"), Logprobs: r.PostFormValue("logprobs") != "",
		Seed: v("seed"), Concurrency: v("concurrency"), RPM: v("rpm"), TPM: v("tpm"),
		PriceInput: v("price_input"), PriceCached: v("price_cached"), PriceOutput: v("price_output"),
	}
	nj, errs := s.parseJudge(attune.JudgeInput{
		Name: f.Name, Provider: f.Provider, BaseURL: f.BaseURL, Model: f.Model, KeyEnv: f.KeyEnv,
		Temperature: f.Temperature, MaxTokens: f.MaxTokens, Samples: f.Samples, Seed: f.Seed, Logprobs: f.Logprobs,
		Concurrency: f.Concurrency, RPM: f.RPM, TPM: f.TPM, PriceInput: f.PriceInput, PriceCached: f.PriceCached, PriceOut: f.PriceOutput,
	})
	blankSecrets(&f, errs)
	return f, nj, errs
}

// parseJudge checks a typed judge (from the form or the API) by
// attune.ParseJudge under the admin's policy, which holds base URLs to
// the egress allow-list, and returns the judge to store with a message
// per bad field (none when it is good).
func (s *Handler) parseJudge(in attune.JudgeInput) (store.NewJudge, map[string]string) {
	j, err := attune.ParseJudge(in, s.policy)
	nj := store.NewJudge{Name: j.Name, Provider: j.Provider, BaseURL: j.BaseURL, Model: j.Model, APIKeyEnv: j.APIKeyEnv, Settings: j.Settings}
	return nj, kit.FieldErrors(err)
}

// connectionRefusal is the 403 of a judge's edit that changes its
// connection (provider, base URL, key variable) when actor may not, or
// nil. A valid new connection from someone who may not change it is
// refused so whatever else is wrong with the edit; an invalid one gets
// its field's message first.
func connectionRefusal(actor *attune.User, j *attune.Judge, nj store.NewJudge, errs map[string]string) error {
	next := attune.Judge{Provider: nj.Provider, BaseURL: nj.BaseURL, APIKeyEnv: nj.APIKeyEnv}
	if err := j.CheckChange(actor, &next, true); errors.Is(err, attune.ErrForbidden) &&
		!kit.Has(errs, "provider") && !kit.Has(errs, "base_url") && !kit.Has(errs, "key_env") {
		return err
	}
	return nil
}

// blankSecrets drops from the form every value refused as a secret (a key
// pasted into a field, credentials in the URL), so that the page does not
// carry it back.
func blankSecrets(f *judgeview.Form, errs map[string]string) {
	for field, val := range map[string]*string{"name": &f.Name, "base_url": &f.BaseURL, "model": &f.Model, "key_env": &f.KeyEnv} {
		if attune.IsSecretRefusal(errs[field]) {
			*val = ""
		}
	}
}

// judgeForm fills the form from a stored judge.
func judgeForm(j *attune.Judge) judgeview.Form {
	st := j.Settings
	f := judgeview.Form{
		Name: j.Name, Provider: j.Provider, BaseURL: j.BaseURL, Model: j.Model, KeyEnv: j.APIKeyEnv,
		Samples: strconv.Itoa(st.SampleCount()), Logprobs: st.Logprobs, Concurrency: strconv.Itoa(max(st.Concurrency, 1)),
		PriceInput: num(st.Prices.InputPerMTok), PriceCached: num(st.Prices.CachedInputPerMTok), PriceOutput: num(st.Prices.OutputPerMTok),
	}
	if st.Temperature != nil {
		f.Temperature = num(*st.Temperature)
	}
	if st.MaxTokens > 0 {
		f.MaxTokens = strconv.Itoa(st.MaxTokens)
	}
	if st.Seed != nil {
		f.Seed = strconv.FormatInt(*st.Seed, 10)
	}
	if st.RPM > 0 {
		f.RPM = strconv.Itoa(st.RPM)
	}
	if st.TPM > 0 {
		f.TPM = strconv.Itoa(st.TPM)
	}
	return f
}

func judgePath(id int64) string { return fmt.Sprintf("/judges/%d/edit", id) }

// JudgesPage lists every judge with its settings, its owner and what its runs
// have cost so far.
func (s *Handler) JudgesPage(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	judges, err := s.DB.ListJudges(ctx)
	if err != nil {
		return err
	}
	totals, err := s.DB.TotalsByJudge(ctx)
	if err != nil {
		return err
	}
	page := judgeview.ListPage{Chrome: s.Chrome(r, "Judges", "judges")}
	for _, j := range judges {
		row := judgeview.Row{
			ID: j.ID, Name: j.Name, Provider: j.Provider, Model: j.Model, BaseURL: j.BaseURL, KeyEnv: j.APIKeyEnv,
			Settings: settingsSummary(j.Settings), Prices: pricesSummary(j.Settings.Prices),
			EditURL: templ.SafeURL(judgePath(j.ID)), Owner: j.OwnerEmail,
		}
		if j.CreatedBy != nil && *j.CreatedBy == kit.UserFrom(ctx).ID {
			row.Owner = "you"
		}
		if t, ok := totals[j.ID]; ok {
			row.Totals = fmt.Sprintf("%d %s · %s calls · %s tokens in (%s cached), %s out · %s",
				t.Runs, kit.Plural(t.Runs, "run", "runs"), kit.Count(int64(t.Calls)), kit.Count(t.InputTokens), kit.Count(t.CachedTokens),
				kit.Count(t.OutputTokens), usd(t.CostUSD))
		}
		page.Judges = append(page.Judges, row)
	}
	s.Render(w, r, http.StatusOK, judgeview.List(page))
	return nil
}

// NewJudgePage shows the form of a new judge, with the defaults filled in.
func (s *Handler) NewJudgePage(w http.ResponseWriter, r *http.Request) error {
	s.renderJudgeForm(w, r, http.StatusOK, nil, judgeview.Form{Provider: attune.ProviderOpenAI,
		Samples: strconv.Itoa(attune.DefaultSamples), Concurrency: strconv.Itoa(attune.DefaultConcurrency)}, nil, judgeview.TryForm{})
	return nil
}

// renderJudgeForm shows the form of a new judge (j nil) or of j.
func (s *Handler) renderJudgeForm(w http.ResponseWriter, r *http.Request, status int, j *attune.Judge, f judgeview.Form, errs map[string]string, try judgeview.TryForm) {
	// The chrome is built once: building it takes the flash out of the
	// session, and a second build would show the page without it.
	title := "New judge"
	if j != nil {
		title = "Edit " + f.Name
	}
	page := judgeview.FormPage{Chrome: s.Chrome(r, title, "judges"), Form: f, Errors: errs, Try: try}
	if j != nil {
		page.ID, page.ConnectionLocked = j.ID, !j.MayChangeConnection(kit.UserFrom(r.Context()))
	}
	s.Render(w, r, status, judgeview.Edit(page))
}

// CreateJudge stores a judge from the form, owned by the viewer, and goes to
// its page to be tried; a refused form is shown again with its problems.
func (s *Handler) CreateJudge(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	f, nj, errs := s.readJudgeForm(r)
	if len(errs) > 0 {
		s.renderJudgeForm(w, r, http.StatusUnprocessableEntity, nil, f, errs, judgeview.TryForm{})
		return nil
	}
	actor := kit.UserFrom(ctx).ID
	j, err := s.DB.CreateJudge(ctx, &actor, s.policy, nj)
	if errors.Is(err, attune.ErrInvalid) {
		errs := kit.FieldErrors(err)
		blankSecrets(&f, errs)
		s.renderJudgeForm(w, r, http.StatusUnprocessableEntity, nil, f, errs, judgeview.TryForm{})
		return nil
	}
	if errors.Is(err, attune.ErrConflict) {
		s.renderJudgeForm(w, r, http.StatusConflict, nil, f, map[string]string{"name": kit.Capitalize(attune.PublicMessage(err)) + "; choose another name."}, judgeview.TryForm{})
		return nil
	}
	if err != nil {
		return err
	}
	s.Flash(ctx, "Created the judge "+j.Name+". Try it on an item below before you run it.")
	http.Redirect(w, r, judgePath(j.ID)+"#try", http.StatusSeeOther)
	return nil
}

// findJudge loads the judge named in the path.
func (s *Handler) findJudge(r *http.Request) (*attune.Judge, error) {
	id, err := kit.PathInt(r, "id")
	if err != nil {
		return nil, err
	}
	return s.DB.FindJudge(r.Context(), id)
}

// EditJudgePage shows a judge's form with its settings and the try form.
func (s *Handler) EditJudgePage(w http.ResponseWriter, r *http.Request) error {
	j, err := s.findJudge(r)
	if err != nil {
		return err
	}
	try, err := s.tryForm(r.Context(), j.ID, "", "")
	if err != nil {
		return err
	}
	s.renderJudgeForm(w, r, http.StatusOK, j, judgeForm(j), nil, try)
	return nil
}

// UpdateJudge saves a judge's edit: only its owner or an admin changes
// its connection, and its key goes to a new endpoint only once confirmed.
func (s *Handler) UpdateJudge(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	j, err := s.findJudge(r)
	if err != nil {
		return err
	}
	f, nj, errs := s.readJudgeForm(r)
	try, err := s.tryForm(ctx, j.ID, "", "")
	if err != nil {
		return err
	}
	if err := connectionRefusal(kit.UserFrom(ctx), j, nj, errs); err != nil {
		return err
	}
	// The key is confirmed for exactly the address the box was ticked
	// for: a form changed again after ticking asks again.
	endpoint := nj.Provider + " " + nj.BaseURL
	if posted := r.PostFormValue("confirm_key_for"); posted != "" {
		nj.KeyConfirmed = nj.APIKeyEnv != "" && posted == endpoint
		f.AskConfirmKey, f.ConfirmKeyFor, f.ConfirmKeyChecked = true, endpoint, nj.KeyConfirmed
	}
	if len(errs) > 0 {
		s.renderJudgeForm(w, r, http.StatusUnprocessableEntity, j, f, errs, try)
		return nil
	}
	err = s.DB.UpdateJudge(ctx, &kit.UserFrom(ctx).ID, s.policy, j.ID, nj)
	if errors.Is(err, attune.ErrInvalid) {
		errs := kit.FieldErrors(err)
		blankSecrets(&f, errs)
		if errs["key_env"] == attune.MsgConfirmKey {
			// Offer the box for the address now in the form.
			f.AskConfirmKey, f.ConfirmKeyFor, f.ConfirmKeyChecked = true, endpoint, false
		}
		s.renderJudgeForm(w, r, http.StatusUnprocessableEntity, j, f, errs, try)
		return nil
	}
	if errors.Is(err, attune.ErrConflict) {
		s.renderJudgeForm(w, r, http.StatusConflict, j, f, map[string]string{"name": kit.Capitalize(attune.PublicMessage(err)) + "; choose another name."}, try)
		return nil
	}
	if err != nil {
		return err
	}
	s.Flash(ctx, "Saved the judge "+nj.Name+". Runs already made keep their settings.")
	http.Redirect(w, r, "/judges", http.StatusSeeOther)
	return nil
}

// tryForm builds the try-on-an-item form: the projects the viewer leads,
// which are the ones a judge may be tried on.
func (s *Handler) tryForm(ctx context.Context, judgeID int64, project, item string) (judgeview.TryForm, error) {
	t := judgeview.TryForm{Action: templ.SafeURL(fmt.Sprintf("/judges/%d/try", judgeID)), Project: project, Item: item}
	ps, err := s.DB.ListProjectsForUser(ctx, kit.UserFrom(ctx))
	if err != nil {
		return t, err
	}
	admin := kit.UserFrom(ctx).Role == attune.RoleAdmin
	for _, p := range ps {
		if (admin || p.MemberRole == string(attune.MemberLead)) && p.Items > 0 {
			t.Projects = append(t.Projects, judgeview.Option{Value: strconv.FormatInt(p.ID, 10), Label: p.Name + " (" + p.RubricRef + ")"})
		}
	}
	return t, nil
}
