package attune

import (
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of a judge's settings. Every path that creates or changes a judge
// (the web form, the command line, the store) holds it to these through
// Judge.Validate.
const (
	MaxJudgeName   = 200     // characters
	MaxJudgeField  = 500     // bytes of a base URL or a model's name
	MaxKeyEnv      = 100     // bytes of a key variable's name
	MaxSamples     = 25      // answers per prompt
	MaxConcurrency = 1024    // calls at once per worker process
	MaxTemperature = 2.0     // sampling temperature
	MaxMaxTokens   = 1000000 // output tokens per call
	MaxRPM         = 100000000
	MaxTPM         = math.MaxInt32
	MaxPrice       = 10000 // US dollars per million tokens
)

// Defaults of a judge's settings, for a field left empty.
const (
	DefaultSamples     = 1
	DefaultConcurrency = 4
)

// The providers a judge may call.
const (
	ProviderOpenAI    = "openai" // any OpenAI-compatible endpoint
	ProviderAnthropic = "anthropic"
)

// envName is what an environment variable's name may be; the judges table
// holds the same rule.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// The messages of a judge's fields. A field that cannot be read (not a
// number) gets the same message as one out of range, whatever path it
// came by.
var judgeMessages = map[string]string{
	"name":         "Enter a name for the judge.",
	"provider":     "Choose OpenAI-compatible or Anthropic.",
	"base_url":     "Enter a URL starting with https:// (or http:// for a server on this machine), or leave it empty.",
	"model":        "Enter the model's name, such as gpt-4o-mini.",
	"key_env":      "Enter the name of an environment variable: letters, digits and _, not starting with a digit (such as OPENAI_API_KEY).",
	"temperature":  fmt.Sprintf("Enter a temperature from 0 to %g, or leave it empty.", float64(MaxTemperature)),
	"max_tokens":   fmt.Sprintf("Enter a whole number of tokens from 1 to %d, or leave it empty.", MaxMaxTokens),
	"samples":      fmt.Sprintf("Enter a whole number of samples from 1 to %d.", MaxSamples),
	"seed":         "Enter a whole number, or leave it empty.",
	"concurrency":  fmt.Sprintf("Enter a whole number from 1 to %d.", MaxConcurrency),
	"rpm":          "Enter a whole number of requests per minute, or leave it empty for no limit.",
	"tpm":          "Enter a whole number of tokens per minute, or leave it empty for no limit.",
	"price_input":  priceMessage,
	"price_cached": priceMessage,
	"price_output": priceMessage,
}

const priceMessage = "Enter a price from 0 to 10000 dollars per million tokens, or leave it empty for 0."

// The messages of a field that holds a secret. The value is neither kept,
// shown again nor logged: see IsSecretRefusal.
const (
	MsgKeyInKeyEnv = "This looks like an API key itself. attune never asks for a key and never stores one: " +
		"put the key in an environment variable where attune runs, and enter the variable's name here (such as OPENAI_API_KEY). " +
		"What you typed was not kept."
	MsgKeyElsewhere = "This looks like an API key. attune never asks for a key and never stores one: " +
		"put it in an environment variable where attune runs and name that variable below. What you typed was not kept."
	MsgCredentialsInURL = "Remove the credentials from the URL: attune reads a key only from the environment variable below. What you typed was not kept."
)

// IsSecretRefusal reports whether a field's message refuses its value as a
// secret: the form must then drop the value rather than show it again.
func IsSecretRefusal(msg string) bool {
	return msg == MsgKeyInKeyEnv || msg == MsgKeyElsewhere || msg == MsgCredentialsInURL
}

// JudgeInput is a judge as typed, in a form or as command-line flags: every
// value still text, so that parsing and its messages are the same on every
// path. Empty numbers take the defaults.
type JudgeInput struct {
	Name, Provider, BaseURL, Model, KeyEnv                   string
	Temperature, MaxTokens, Samples, Seed                    string
	Concurrency, RPM, TPM, PriceInput, PriceCached, PriceOut string
	Logprobs                                                 bool
}

// ParseJudge reads a typed judge and checks it against Judge.Validate under
// policy. It returns the judge read (fields that could not be read left at
// their defaults) and a *ValidationError with a message per bad field.
func ParseJudge(in JudgeInput, policy JudgePolicy) (Judge, error) {
	tr := strings.TrimSpace
	j := Judge{Name: tr(in.Name), Provider: tr(in.Provider), BaseURL: tr(in.BaseURL), Model: tr(in.Model), APIKeyEnv: tr(in.KeyEnv)}
	bad := map[string]string{}
	s := &j.Settings
	readFloat := func(field, v string) *float64 {
		if v = tr(v); v == "" {
			return nil
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			bad[field] = judgeMessages[field]
			return nil
		}
		return &x
	}
	// An empty number takes its default; one typed is held to the
	// limits as typed.
	readInt := func(field, v string, def int) int {
		if v = tr(v); v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			bad[field] = judgeMessages[field]
			return def
		}
		return n
	}
	s.Temperature = readFloat("temperature", in.Temperature)
	s.MaxTokens = readInt("max_tokens", in.MaxTokens, 0)
	s.Samples = readInt("samples", in.Samples, DefaultSamples)
	s.Concurrency = readInt("concurrency", in.Concurrency, DefaultConcurrency)
	s.RPM = readInt("rpm", in.RPM, 0)
	s.TPM = readInt("tpm", in.TPM, 0)
	s.Logprobs = in.Logprobs
	if v := tr(in.Seed); v != "" {
		if seed, err := strconv.ParseInt(v, 10, 64); err != nil {
			bad["seed"] = judgeMessages["seed"]
		} else {
			s.Seed = &seed
		}
	}
	for _, p := range []struct {
		field, val string
		dst        *float64
	}{{"price_input", in.PriceInput, &s.Prices.InputPerMTok}, {"price_cached", in.PriceCached, &s.Prices.CachedInputPerMTok}, {"price_output", in.PriceOut, &s.Prices.OutputPerMTok}} {
		if x := readFloat(p.field, p.val); x != nil {
			*p.dst = *x
		}
	}
	var v *ValidationError
	if err := j.Validate(policy); err != nil {
		v = err.(*ValidationError)
	}
	if len(bad) > 0 {
		if v == nil {
			v = &ValidationError{Fields: map[string]string{}}
		}
		for k, m := range bad {
			if !IsSecretRefusal(v.Fields[k]) {
				v.Fields[k] = m
			}
		}
	}
	if v != nil {
		return j, v
	}
	return j, nil
}

func has(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// WithDefaults returns the settings with the defaults in the fields left
// zero: one sample, DefaultConcurrency calls at once.
func (s JudgeSettings) WithDefaults() JudgeSettings {
	s.applyDefaults()
	return s
}

func (s *JudgeSettings) applyDefaults() {
	if s.Samples == 0 {
		s.Samples = DefaultSamples
	}
	if s.Concurrency == 0 {
		s.Concurrency = DefaultConcurrency
	}
}

// Validate checks a judge: its own rules (a name, a known provider, an
// http(s) base URL without credentials, a model, a variable's name, never
// something that looks like an API key, settings within their limits) and
// what the admin's policy allows (the key variable and the base URL's
// host). Settings must have their defaults applied (WithDefaults). It
// returns nil or a *ValidationError whose messages name the field and
// never repeat a value refused as a secret. The store calls it inside the
// transaction that writes the judge.
func (j *Judge) Validate(policy JudgePolicy) error {
	errs := map[string]string{}
	// A key pasted into any text field is refused there, whatever else is
	// wrong with the field.
	for field, v := range map[string]string{"name": j.Name, "base_url": j.BaseURL, "model": j.Model, "key_env": j.APIKeyEnv} {
		if problem := TextProblem(v); problem != "" {
			errs[field] = "The text " + problem + "."
		} else if field != "key_env" && LooksLikeKey(v) {
			errs[field] = MsgKeyElsewhere
		}
	}
	// A long value that is no variable's name is most likely a key of a
	// shape LooksLikeKey does not know.
	if !has(errs, "key_env") && (LooksLikeKey(j.APIKeyEnv) || !envName.MatchString(j.APIKeyEnv) && len(j.APIKeyEnv) >= 20) {
		errs["key_env"] = MsgKeyInKeyEnv
	}
	if problem := NameProblem(j.Name); problem != "" && !has(errs, "name") {
		errs["name"] = "The name " + problem + "."
	}
	switch n := utf8.RuneCountInString(j.Name); {
	case has(errs, "name"):
	case strings.TrimSpace(j.Name) == "" || !utf8.ValidString(j.Name):
		errs["name"] = judgeMessages["name"]
	case n > MaxJudgeName:
		errs["name"] = fmt.Sprintf("Keep the name to %d characters or fewer (this one has %d).", MaxJudgeName, n)
	}
	if j.Provider != ProviderOpenAI && j.Provider != ProviderAnthropic {
		errs["provider"] = judgeMessages["provider"]
	}
	if !has(errs, "base_url") {
		if msg := checkBaseURL(j.BaseURL); msg != "" {
			errs["base_url"] = msg
		} else if msg := policy.checkHost(j.BaseURL, "Judges"); msg != "" {
			errs["base_url"] = msg
		}
	}
	switch {
	case has(errs, "model"):
	case strings.TrimSpace(j.Model) == "" || !utf8.ValidString(j.Model):
		errs["model"] = judgeMessages["model"]
	case len(j.Model) > MaxJudgeField:
		errs["model"] = fmt.Sprintf("Keep the model's name to %d characters or fewer.", MaxJudgeField)
	}
	switch {
	case has(errs, "key_env"), j.APIKeyEnv == "":
	case len(j.APIKeyEnv) > MaxKeyEnv || !envName.MatchString(j.APIKeyEnv):
		errs["key_env"] = judgeMessages["key_env"]
	case !policy.AllowsKeyEnv(j.APIKeyEnv):
		errs["key_env"] = policy.keyEnvRefusal(j.APIKeyEnv)
	}

	s := j.Settings
	if t := s.Temperature; t != nil && (math.IsNaN(*t) || *t < 0 || *t > MaxTemperature) {
		errs["temperature"] = judgeMessages["temperature"]
	}
	for _, c := range []struct {
		field     string
		v, lo, hi int
	}{
		{field: "max_tokens", v: s.MaxTokens, lo: 0, hi: MaxMaxTokens},
		{field: "samples", v: s.Samples, lo: 1, hi: MaxSamples},
		{field: "concurrency", v: s.Concurrency, lo: 1, hi: MaxConcurrency},
		{field: "rpm", v: s.RPM, lo: 0, hi: MaxRPM},
		{field: "tpm", v: s.TPM, lo: 0, hi: MaxTPM},
	} {
		if c.v < c.lo || c.v > c.hi {
			errs[c.field] = judgeMessages[c.field]
		}
	}
	for field, p := range map[string]float64{"price_input": s.Prices.InputPerMTok, "price_cached": s.Prices.CachedInputPerMTok, "price_output": s.Prices.OutputPerMTok} {
		if math.IsNaN(p) || p < 0 || p > MaxPrice {
			errs[field] = judgeMessages[field]
		}
	}
	if len(errs) > 0 {
		return &ValidationError{Fields: errs}
	}
	return nil
}

// checkBaseURL says what is wrong with a base URL in itself, or "".
// Credentials in the URL are refused: they would be stored and shown, as a
// key must not.
func checkBaseURL(s string) string {
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	switch {
	case err == nil && u.User != nil:
		return MsgCredentialsInURL
	case len(s) > MaxJudgeField:
		return fmt.Sprintf("Keep the URL to %d characters or fewer.", MaxJudgeField)
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" || !utf8.ValidString(s):
		return judgeMessages["base_url"]
	}
	for k := range u.Query() {
		if k := strings.ToLower(k); strings.Contains(k, "key") || strings.Contains(k, "token") || strings.Contains(k, "secret") {
			return MsgCredentialsInURL
		}
	}
	return ""
}

// keyPrefixes start the API keys of common providers. A value that starts
// with one is a key pasted by mistake, whatever field it is in.
var keyPrefixes = []string{"sk-", "sk_", "gsk_", "xai-", "nvapi-", "hf_", "pk-", "rk_", "r8_", "ghp_", "github_pat_", "AIza", "Bearer "}

// LooksLikeKey reports whether s holds what is more likely an API key than
// a name: a known key prefix followed by enough characters, or a long
// random-looking run of letters and digits (mixed case with digits, or
// hex), which names, models and URLs do not have. It errs towards
// refusing: a refused name costs a retype, a stored key is a leak.
func LooksLikeKey(s string) bool {
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

// MsgConfirmKey is what an edit that moves a judge to another endpoint
// while keeping its key variable says until the key is confirmed for the
// new endpoint.
const MsgConfirmKey = "You changed where this judge sends its calls. Its key would go to the new address: " +
	"confirm that the key from this variable may be sent there, or clear the variable."

// MayChangeConnection reports whether actor may change the judge's
// provider, base URL or key variable: its owner, an admin, or the command
// line (nil).
func (j *Judge) MayChangeConnection(actor *User) bool {
	return actor == nil || actor.Role == RoleAdmin || j.CreatedBy != nil && *j.CreatedBy == actor.ID
}

// CheckChange decides whether actor may change the judge j into next.
// actor nil is the command line, run by whoever holds the server's
// configuration, and may change anything.
//
// The connection of a judge (its provider, base URL and key variable)
// decides where its key goes, so only the judge's owner (CreatedBy) or an
// admin may change it; anyone else gets an ErrForbidden error. Other
// settings (name, model, sampling, limits, prices) any lead may change.
//
// A key is bound to the endpoint it was confirmed for: when the provider
// or base URL changes and the judge still names a key variable, the change
// must confirm the key for the new endpoint (keyConfirmed: the person saw
// and accepted that the key goes there), or it is refused with
// MsgConfirmKey on the key_env field. So neither a stale form nor a
// careless edit sends the old key to a new address; clearing the key
// variable needs no confirmation.
func (j *Judge) CheckChange(actor *User, next *Judge, keyConfirmed bool) error {
	endpointMoved := j.Provider != next.Provider || j.BaseURL != next.BaseURL
	connection := endpointMoved || j.APIKeyEnv != next.APIKeyEnv
	if connection && !j.MayChangeConnection(actor) {
		return Forbidden("Only the judge's owner or an admin can change its provider, base URL or key variable.")
	}
	if endpointMoved && next.APIKeyEnv != "" && !keyConfirmed {
		return Invalid("key_env", MsgConfirmKey)
	}
	return nil
}
