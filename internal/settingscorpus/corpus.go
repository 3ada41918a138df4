// Package settingscorpus is the one corpus of judge and project settings
// that every path which stores them (the web forms, the command line, the
// store) is tested against: each must give the verdicts and messages the
// rules beside the nouns give (attune.ParseJudge, attune.Project.Validate).
// It is for tests only.
package settingscorpus

import (
	_ "embed"
	"encoding/json"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/probe"
	"github.com/attune/attune/internal/rubric"
)

//go:embed corpus.json
var corpusJSON []byte

// Corpus is the settings corpus.
type Corpus struct {
	// Policy is what the admin allows while the corpus is tried, as the
	// environment writes it.
	Policy struct {
		KeyEnvs string `json:"key_envs"`
		Hosts   string `json:"hosts"`
	} `json:"policy"`
	JudgeBase   map[string]string `json:"judge_base"`
	Judges      []Case            `json:"judges"`
	ProjectBase map[string]string `json:"project_base"`
	Projects    []Case            `json:"projects"`
}

// Case is one set of settings: the base with some fields set, and the
// fields it must be refused on (none: accepted).
type Case struct {
	Name string            `json:"case"`
	Set  map[string]string `json:"set"`
	// Typed cases concern how a value is typed (not a number, or a zero
	// typed where an empty field means the default); the store takes
	// numbers, where zero means the default, so they never reach it.
	Typed bool `json:"typed"`
	// InstructionsLen, when set, makes the instructions that many
	// characters long.
	InstructionsLen int      `json:"instructions_len"`
	Refused         []string `json:"refused"`
}

// Load returns the corpus; it panics on a broken corpus file.
func Load() Corpus {
	var c Corpus
	if err := json.Unmarshal(corpusJSON, &c); err != nil {
		panic("settingscorpus: " + err.Error())
	}
	return c
}

// JudgePolicy is the corpus's policy as attune reads it.
func (c Corpus) JudgePolicy() attune.JudgePolicy {
	hosts, err := attune.ParseHostRules(c.Policy.Hosts)
	if err != nil {
		panic("settingscorpus: " + err.Error())
	}
	return attune.JudgePolicy{KeyEnvs: strings.Split(c.Policy.KeyEnvs, ","), Hosts: hosts}
}

// Values returns a case's fields: the base with the case's set over it,
// by the web form's field names.
func (c Corpus) Values(base map[string]string, k Case) map[string]string {
	v := maps.Clone(base)
	maps.Copy(v, k.Set)
	if k.InstructionsLen > 0 {
		v["instructions"] = strings.Repeat("x", k.InstructionsLen)
	}
	return v
}

// JudgeInput is a judge case as typed.
func JudgeInput(v map[string]string) attune.JudgeInput {
	return attune.JudgeInput{
		Name: v["name"], Provider: v["provider"], BaseURL: v["base_url"], Model: v["model"], KeyEnv: v["key_env"],
		Temperature: v["temperature"], MaxTokens: v["max_tokens"], Samples: v["samples"], Seed: v["seed"],
		Concurrency: v["concurrency"], RPM: v["rpm"], TPM: v["tpm"],
		PriceInput: v["price_input"], PriceCached: v["price_cached"], PriceOut: v["price_output"], Logprobs: v["logprobs"] != "",
	}
}

// WantJudge is the verdict of the rules on a judge case: a message per
// refused field (empty: accepted).
func (c Corpus) WantJudge(v map[string]string) map[string]string {
	_, err := attune.ParseJudge(JudgeInput(v), c.JudgePolicy())
	return fields(err)
}

// Project is a project case read as numbers; ok is false when overlap or
// lease is not a number or the ε cannot be read (attune.ReadEpsilon).
func Project(v map[string]string) (p attune.Project, ok bool) {
	p = attune.Project{Name: strings.TrimSpace(v["name"]), Instructions: v["instructions"], SystemKey: strings.TrimSpace(v["system_key"]),
		EvidencePolicy: rubric.EvidencePolicy(strings.TrimSpace(v["evidence_policy"]))}
	overlap, err1 := strconv.Atoi(v["overlap"])
	lease, err2 := strconv.Atoi(v["lease"])
	p.Overlap, p.Lease = overlap, time.Duration(lease)*time.Minute
	e, read, _ := attune.ReadEpsilon(v["annotators"], v["epsilon"])
	p.Epsilon = e
	return p, err1 == nil && err2 == nil && read
}

// ProbeThresholds are a project case's probe thresholds as read by
// probe.ReadThresholds over the defaults, with the messages of those it
// cannot read.
func ProbeThresholds(v map[string]string) (probe.Thresholds, map[string]string) {
	typed := map[string]string{}
	for _, f := range probe.ThresholdFields {
		if x, ok := v[f]; ok {
			typed[f] = x
		}
	}
	return probe.ReadThresholds(probe.DefaultThresholds(), typed)
}

// WantProject is the verdict of the rules on a project case.
func (c Corpus) WantProject(v map[string]string) map[string]string {
	p, _ := Project(v)
	out := fields(p.Validate())
	t, unread := ProbeThresholds(v)
	maps.Copy(out, fields(t.Validate()))
	maps.Copy(out, unread)
	for _, f := range []string{"overlap", "lease"} {
		if _, err := strconv.Atoi(v[f]); err != nil {
			out[f] = attune.ProjectFieldMessage(f)
		}
	}
	if _, ok, msg := attune.ReadEpsilon(v["annotators"], v["epsilon"]); !ok {
		out["epsilon"] = msg
	}
	return out
}

func fields(err error) map[string]string {
	out := map[string]string{}
	if v, ok := err.(*attune.ValidationError); ok {
		maps.Copy(out, v.Fields)
	}
	return out
}

// StoredDiffers names the settings of an accepted project case that the
// project stored from it (p, with its probe thresholds t) does not hold as
// given: the turn evidence setting, the system key and the probe
// thresholds (each path's own tests check the other numbers).
func StoredDiffers(v map[string]string, p *attune.Project, t probe.Thresholds) []string {
	want, _ := Project(v)
	var out []string
	wantT, _ := ProbeThresholds(v)
	for _, f := range probe.ThresholdFields {
		if t.Setting(f) != wantT.Setting(f) {
			out = append(out, f)
		}
	}
	if p.Evidence() != want.Evidence() {
		out = append(out, "evidence_policy")
	}
	if p.SystemKey != want.SystemKey {
		out = append(out, "system_key")
	}
	return out
}
