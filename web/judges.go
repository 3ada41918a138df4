package web

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/a-h/templ"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/store"
	judgeview "github.com/attune/attune/web/views/judge"
)

// Limits of the judge form.
const (
	maxJudgeName   = 200
	maxJudgeField  = 500 // base URL, model
	maxKeyEnv      = 100
	maxSamples     = 25
	maxConcurrency = 1024
	maxTemperature = 2
	maxPrice       = 10000 // US dollars per million tokens
)

// envName is what a variable's name may be: the judges table holds the same
// rule.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// keyPrefixes start the API keys of common providers. A value that starts
// with one is a key pasted by mistake, whatever field it is in.
var keyPrefixes = []string{"sk-", "sk_", "gsk_", "xai-", "nvapi-", "hf_", "pk-", "rk_", "r8_", "ghp_", "github_pat_", "AIza", "Bearer "}

// looksLikeKey reports whether s holds what is more likely an API key
// than a name: a known key prefix followed by enough characters, or a long
// random-looking run of letters and digits (mixed case with digits, or
// hex), which names, models and URLs do not have. It errs towards
// refusing: a refused name costs a retype, a stored key is a leak.
func looksLikeKey(s string) bool {
	s = strings.TrimSpace(s)
	for _, p := range keyPrefixes {
		if strings.HasPrefix(s, p) && len(s) >= len(p)+12 {
			return true
		}
	}
	for _, run := range strings.FieldsFunc(s, func(r rune) bool { return !isAlnum(r) }) {
		var lower, upper, digit, hex = false, false, false, true
		for _, r := range run {
			lower = lower || r >= 'a' && r <= 'z'
			upper = upper || r >= 'A' && r <= 'Z'
			digit = digit || r >= '0' && r <= '9'
			hex = hex && (r >= '0' && r <= '9' || r >= 'a' && r <= 'f')
		}
		if len(run) >= 24 && lower && upper && digit || len(run) >= 32 && hex {
			return true
		}
	}
	return false
}

func isAlnum(r rune) bool { return r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) }

// keyRefusal and keyElsewhere are what a field holding something like a
// key says: the key-variable field, and any other. The value is neither
// shown again nor logged.
const (
	keyRefusal = "This looks like an API key itself. attune never asks for a key and never stores one: " +
		"put the key in an environment variable where attune runs, and enter the variable's name here (such as OPENAI_API_KEY). " +
		"What you typed was not kept."
	keyElsewhere = "This looks like an API key. attune never asks for a key and never stores one: " +
		"put it in an environment variable where attune runs and name that variable below. What you typed was not kept."
)

// readJudgeForm reads and checks the judge form, returning what to show
// again (never a value that looks like a key), the judge to store, and a
// message per bad field.
func readJudgeForm(r *http.Request) (judgeview.Form, store.NewJudge, map[string]string) {
	v := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	f := judgeview.Form{
		Name: v("name"), Provider: v("provider"), BaseURL: v("base_url"), Model: v("model"), KeyEnv: v("key_env"),
		Temperature: v("temperature"), MaxTokens: v("max_tokens"), Samples: v("samples"), Logprobs: r.PostFormValue("logprobs") != "",
		Seed: v("seed"), Concurrency: v("concurrency"), RPM: v("rpm"), TPM: v("tpm"),
		PriceInput: v("price_input"), PriceCached: v("price_cached"), PriceOutput: v("price_output"),
	}
	errs := map[string]string{}
	// A key pasted into any text field is refused there and dropped from
	// the form, so that the page does not carry it back.
	for _, fld := range []struct {
		name string
		val  *string
	}{{"name", &f.Name}, {"base_url", &f.BaseURL}, {"model", &f.Model}, {"key_env", &f.KeyEnv}} {
		if looksLikeKey(*fld.val) {
			errs[fld.name], *fld.val = keyElsewhere, ""
		}
	}
	if has(errs, "key_env") {
		errs["key_env"] = keyRefusal
	}
	// A long value that is no variable's name is most likely a key of a
	// shape looksLikeKey does not know.
	if !envName.MatchString(f.KeyEnv) && len(f.KeyEnv) >= 20 {
		errs["key_env"], f.KeyEnv = keyRefusal, ""
	}
	nj := store.NewJudge{Name: f.Name, Provider: f.Provider, BaseURL: f.BaseURL, Model: f.Model, APIKeyEnv: f.KeyEnv}

	switch n := utf8.RuneCountInString(f.Name); {
	case has(errs, "name"):
	case n == 0:
		errs["name"] = "Enter a name for the judge."
	case n > maxJudgeName:
		errs["name"] = fmt.Sprintf("Keep the name to %d characters or fewer (this one has %d).", maxJudgeName, n)
	}
	if f.Provider != "openai" && f.Provider != "anthropic" {
		errs["provider"] = "Choose OpenAI-compatible or Anthropic."
	}
	if msg, secret := checkBaseURL(f.BaseURL); msg != "" && !has(errs, "base_url") {
		errs["base_url"] = msg
		if secret {
			f.BaseURL = ""
		}
	}
	switch {
	case has(errs, "model"):
	case f.Model == "":
		errs["model"] = "Enter the model's name, such as gpt-4o-mini."
	case len(f.Model) > maxJudgeField:
		errs["model"] = fmt.Sprintf("Keep the model's name to %d characters or fewer.", maxJudgeField)
	}
	switch {
	case has(errs, "key_env"), f.KeyEnv == "":
	case len(f.KeyEnv) > maxKeyEnv || !envName.MatchString(f.KeyEnv):
		errs["key_env"] = "Enter the name of an environment variable: letters, digits and _, not starting with a digit (such as OPENAI_API_KEY)."
	}

	s := &nj.Settings
	if t, ok := optFloat(f.Temperature, 0, maxTemperature, errs, "temperature", "Enter a temperature from 0 to 2, or leave it empty."); ok {
		s.Temperature = t
	}
	s.MaxTokens = optInt(f.MaxTokens, 1, 1_000_000, 0, errs, "max_tokens", "Enter a whole number of tokens from 1 to 1000000, or leave it empty.")
	s.Samples = optInt(f.Samples, 1, maxSamples, 1, errs, "samples", fmt.Sprintf("Enter a whole number of samples from 1 to %d.", maxSamples))
	s.Logprobs = f.Logprobs
	if f.Seed != "" {
		if seed, err := strconv.ParseInt(f.Seed, 10, 64); err != nil {
			errs["seed"] = "Enter a whole number, or leave it empty."
		} else {
			s.Seed = &seed
		}
	}
	s.Concurrency = optInt(f.Concurrency, 1, maxConcurrency, 4, errs, "concurrency", fmt.Sprintf("Enter a whole number from 1 to %d.", maxConcurrency))
	s.RPM = optInt(f.RPM, 0, 100_000_000, 0, errs, "rpm", "Enter a whole number of requests per minute, or leave it empty for no limit.")
	s.TPM = optInt(f.TPM, 0, math.MaxInt32, 0, errs, "tpm", "Enter a whole number of tokens per minute, or leave it empty for no limit.")
	priceMsg := fmt.Sprintf("Enter a price from 0 to %d dollars per million tokens, or leave it empty for 0.", maxPrice)
	for _, p := range []struct {
		field, val string
		dst        *float64
	}{{"price_input", f.PriceInput, &s.Prices.InputPerMTok}, {"price_cached", f.PriceCached, &s.Prices.CachedInputPerMTok}, {"price_output", f.PriceOutput, &s.Prices.OutputPerMTok}} {
		if x, ok := optFloat(p.val, 0, maxPrice, errs, p.field, priceMsg); ok && x != nil {
			*p.dst = *x
		}
	}
	return f, nj, errs
}

// checkBaseURL says what is wrong with a base URL, or "". Credentials in
// the URL are refused (secret set): they would be stored and shown, as a
// key must not.
func checkBaseURL(s string) (msg string, secret bool) {
	const credentials = "Remove the credentials from the URL: attune reads a key only from the environment variable below. What you typed was not kept."
	if s == "" {
		return "", false
	}
	u, err := url.Parse(s)
	switch {
	case err == nil && u.User != nil:
		return credentials, true
	case len(s) > maxJudgeField:
		return fmt.Sprintf("Keep the URL to %d characters or fewer.", maxJudgeField), false
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return "Enter a URL starting with https:// (or http:// for a server on this machine), or leave it empty.", false
	}
	for k := range u.Query() {
		if k := strings.ToLower(k); strings.Contains(k, "key") || strings.Contains(k, "token") || strings.Contains(k, "secret") {
			return credentials, true
		}
	}
	return "", false
}

// optFloat parses an optional number within [lo, hi]; empty is nil.
func optFloat(s string, lo, hi float64, errs map[string]string, field, msg string) (*float64, bool) {
	if s == "" {
		return nil, true
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(x) || x < lo || x > hi {
		errs[field] = msg
		return nil, false
	}
	return &x, true
}

// optInt parses an optional whole number within [lo, hi]; empty is def.
func optInt(s string, lo, hi, def int, errs map[string]string, field, msg string) int {
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		errs[field] = msg
		return def
	}
	return n
}

func has(errs map[string]string, field string) bool {
	_, ok := errs[field]
	return ok
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

func (s *Server) judgesPage(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	judges, err := s.db.ListJudges(ctx)
	if err != nil {
		return err
	}
	totals, err := s.db.TotalsByJudge(ctx)
	if err != nil {
		return err
	}
	page := judgeview.ListPage{Chrome: s.chrome(r, "Judges", "judges")}
	for _, j := range judges {
		row := judgeview.Row{
			ID: j.ID, Name: j.Name, Provider: j.Provider, Model: j.Model, BaseURL: j.BaseURL, KeyEnv: j.APIKeyEnv,
			Settings: settingsSummary(j.Settings), Prices: pricesSummary(j.Settings.Prices),
			EditURL: templ.SafeURL(judgePath(j.ID)),
		}
		if t, ok := totals[j.ID]; ok {
			row.Totals = fmt.Sprintf("%d %s · %s calls · %s tokens in (%s cached), %s out · %s",
				t.Runs, plural(t.Runs, "run", "runs"), count(int64(t.Calls)), count(t.InputTokens), count(t.CachedTokens),
				count(t.OutputTokens), usd(t.CostUSD))
		}
		page.Judges = append(page.Judges, row)
	}
	s.render(w, r, http.StatusOK, judgeview.List(page))
	return nil
}

func (s *Server) newJudgePage(w http.ResponseWriter, r *http.Request) error {
	s.renderJudgeForm(w, r, http.StatusOK, 0, judgeview.Form{Provider: "openai", Samples: "1", Concurrency: "4"}, nil, judgeview.TryForm{})
	return nil
}

func (s *Server) renderJudgeForm(w http.ResponseWriter, r *http.Request, status int, id int64, f judgeview.Form, errs map[string]string, try judgeview.TryForm) {
	title := "New judge"
	if id != 0 {
		title = "Edit " + f.Name
	}
	s.render(w, r, status, judgeview.Edit(judgeview.FormPage{Chrome: s.chrome(r, title, "judges"), ID: id, Form: f, Errors: errs, Try: try}))
}

func (s *Server) createJudge(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	f, nj, errs := readJudgeForm(r)
	if len(errs) > 0 {
		s.renderJudgeForm(w, r, http.StatusUnprocessableEntity, 0, f, errs, judgeview.TryForm{})
		return nil
	}
	actor := userFrom(ctx).ID
	j, err := s.db.CreateJudge(ctx, &actor, nj)
	if errors.Is(err, attune.ErrConflict) {
		s.renderJudgeForm(w, r, http.StatusConflict, 0, f, map[string]string{"name": capitalize(attune.PublicMessage(err)) + "; choose another name."}, judgeview.TryForm{})
		return nil
	}
	if err != nil {
		return err
	}
	s.sessions.Put(ctx, sessionFlash, "Created the judge "+j.Name+". Try it on an item below before you run it.")
	http.Redirect(w, r, judgePath(j.ID)+"#try", http.StatusSeeOther)
	return nil
}

// findJudge loads the judge named in the path.
func (s *Server) findJudge(r *http.Request) (*attune.Judge, error) {
	id, err := pathID(r)
	if err != nil {
		return nil, err
	}
	return s.db.FindJudge(r.Context(), id)
}

func (s *Server) editJudgePage(w http.ResponseWriter, r *http.Request) error {
	j, err := s.findJudge(r)
	if err != nil {
		return err
	}
	try, err := s.tryForm(r.Context(), j.ID, "", "")
	if err != nil {
		return err
	}
	s.renderJudgeForm(w, r, http.StatusOK, j.ID, judgeForm(j), nil, try)
	return nil
}

func (s *Server) updateJudge(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	j, err := s.findJudge(r)
	if err != nil {
		return err
	}
	f, nj, errs := readJudgeForm(r)
	try, err := s.tryForm(ctx, j.ID, "", "")
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		s.renderJudgeForm(w, r, http.StatusUnprocessableEntity, j.ID, f, errs, try)
		return nil
	}
	err = s.db.UpdateJudge(ctx, &userFrom(ctx).ID, j.ID, nj)
	if errors.Is(err, attune.ErrConflict) {
		s.renderJudgeForm(w, r, http.StatusConflict, j.ID, f, map[string]string{"name": capitalize(attune.PublicMessage(err)) + "; choose another name."}, try)
		return nil
	}
	if err != nil {
		return err
	}
	s.sessions.Put(ctx, sessionFlash, "Saved the judge "+nj.Name+". Runs already made keep their settings.")
	http.Redirect(w, r, "/judges", http.StatusSeeOther)
	return nil
}

// tryForm builds the try-on-an-item form: the projects the viewer leads,
// which are the ones a judge may be tried on.
func (s *Server) tryForm(ctx context.Context, judgeID int64, project, item string) (judgeview.TryForm, error) {
	t := judgeview.TryForm{Action: templ.SafeURL(fmt.Sprintf("/judges/%d/try", judgeID)), Project: project, Item: item}
	ps, err := s.db.ListProjectsForUser(ctx, userFrom(ctx))
	if err != nil {
		return t, err
	}
	admin := userFrom(ctx).Role == attune.RoleAdmin
	for _, p := range ps {
		if (admin || p.MemberRole == string(attune.MemberLead)) && p.Items > 0 {
			t.Projects = append(t.Projects, judgeview.Option{Value: strconv.FormatInt(p.ID, 10), Label: p.Name + " (" + p.RubricRef + ")"})
		}
	}
	return t, nil
}
