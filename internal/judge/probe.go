package judge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/attune/attune/internal/rubric"
)

// probeOptions are the options a probe asks for.
type probeOptions struct{ schema, logprobs, seed bool }

// probeQuestion is the probe's prompt: short, with one obvious answer.
const probeQuestion = "Is the sky blue on a clear day? Answer YES or NO."

// probeSchema is the probe's answer schema.
var probeSchema = Schema{Name: "answer_probe", JSON: canonicalJSON(schemaDoc{
	Type: "object",
	Properties: schemaProps{
		Reasoning: schemaProp{Type: "string"},
		Answer:    schemaProp{Type: "string", Enum: []rubric.Value{rubric.Yes, rubric.No}},
	},
	Required: []string{"reasoning", "answer"},
})}

// probeMaxTokens leaves room for a reasoning model's hidden reasoning
// before its short answer; the probe's answer itself is a few tokens.
const probeMaxTokens = 1024

func probeRequest(model string, o probeOptions) Request {
	req := Request{Model: model, MaxTokens: probeMaxTokens, Messages: []Message{{Role: RoleUser, Content: probeQuestion}}}
	if o.schema {
		req.Schema = &probeSchema
	}
	if o.logprobs {
		req.Logprobs, req.TopLogprobs = true, 5
	}
	if o.seed {
		seed := int64(1)
		req.Seed = &seed
	}
	return req
}

// Probe finds what the endpoint behind p supports for model: structured
// output (a JSON schema), token log-probabilities with alternatives, and a
// seed. It makes one small call asking for all three. If the endpoint
// refuses it (400 or 422, or the provider refusing an option itself) and
// names the option, Probe drops that option and calls again; if it names
// none, Probe makes one plain call and then one call per option. Options
// that are accepted are also checked in the answer: a schema the answer
// does not follow, or log-probabilities without alternatives, count as
// unsupported. Capabilities.Notes say what was found.
//
// Any other failure is returned as it is, with the Capabilities found so
// far: a *FatalError such as a refused key (401) or an unknown model (404)
// means the run must pause rather than probe on; a *RateLimitError or
// *TransientError means the probe may be tried again.
func Probe(ctx context.Context, p Provider, model string) (Capabilities, error) {
	var caps Capabilities
	call := func(o probeOptions) (Response, error) {
		caps.Calls++
		return p.Complete(ctx, probeRequest(model, o))
	}
	opts := probeOptions{schema: true, logprobs: true, seed: true}
named:
	for {
		resp, err := call(opts)
		if err == nil {
			caps.check(resp, opts)
			return caps, nil
		}
		fe, ok := refusal(err)
		if !ok {
			return caps, err
		}
		switch fe.Param {
		case "response_format", "json_schema":
			if opts.schema {
				opts.schema = false
				caps.refused("structured output", fe)
				continue
			}
		case "logprobs", "top_logprobs":
			if opts.logprobs {
				opts.logprobs = false
				caps.refused("log-probabilities", fe)
				continue
			}
		case "seed":
			if opts.seed {
				opts.seed = false
				caps.refused("seed", fe)
				continue
			}
		}
		break named
	}

	// A refusal that names no option: first a plain call, to see that the
	// refusal is about the options at all, then each option on its own.
	if _, err := call(probeOptions{}); err != nil {
		return caps, err
	}
	for _, o := range []struct {
		name string
		opts probeOptions
	}{
		{"structured output", probeOptions{schema: true}},
		{"log-probabilities", probeOptions{logprobs: true}},
		{"seed", probeOptions{seed: true}},
	} {
		if o.opts.schema && !opts.schema || o.opts.logprobs && !opts.logprobs || o.opts.seed && !opts.seed {
			continue // refused by name already
		}
		resp, err := call(o.opts)
		if err == nil {
			caps.check(resp, o.opts)
			continue
		}
		fe, ok := refusal(err)
		if !ok {
			return caps, err
		}
		caps.refused(o.name, fe)
	}
	return caps, nil
}

// refusal reports whether err is the endpoint (or the provider) refusing
// the request as asked, rather than failing to serve it.
func refusal(err error) (*FatalError, bool) {
	var fe *FatalError
	if !errors.As(err, &fe) || fe.RequestOnly {
		return nil, false
	}
	return fe, fe.Status == http.StatusBadRequest || fe.Status == http.StatusUnprocessableEntity || fe.Status == 0 && fe.Param != ""
}

func (c *Capabilities) refused(what string, fe *FatalError) {
	c.Notes = append(c.Notes, fmt.Sprintf("%s: refused (%s)", what, fe.Reason))
}

// check records what an accepted call with opts shows.
func (c *Capabilities) check(resp Response, o probeOptions) {
	if o.schema {
		var got struct {
			Reasoning *string `json:"reasoning"`
			Answer    string  `json:"answer"`
		}
		if json.Unmarshal([]byte(resp.Text), &got) == nil && got.Reasoning != nil && (got.Answer == "YES" || got.Answer == "NO") {
			c.StructuredOutput = true
			c.Notes = append(c.Notes, "structured output: supported")
		} else {
			c.Notes = append(c.Notes, "structured output: accepted, but the answer did not follow the schema; answers will be parsed from text")
		}
	}
	if o.logprobs {
		withAlternatives := false
		for _, t := range resp.TopLogprobs {
			if len(t.Top) > 0 {
				withAlternatives = true
				break
			}
		}
		switch {
		case withAlternatives:
			c.Logprobs = true
			c.Notes = append(c.Notes, "log-probabilities: supported, with alternatives")
		case len(resp.TopLogprobs) > 0:
			c.Notes = append(c.Notes, "log-probabilities: given without alternatives, so no weighted score")
		default:
			c.Notes = append(c.Notes, "log-probabilities: accepted, but none were returned")
		}
	}
	if o.seed {
		c.Seed = true
		c.Notes = append(c.Notes, "seed: accepted (whether it makes answers reproducible is up to the endpoint)")
	}
}
